"""The demo's parts: an in-process Kubernetes API (kmock's emulator), simulated jobs, the loop."""
