from bottleneck_operator.cli import main

raise SystemExit(main())
