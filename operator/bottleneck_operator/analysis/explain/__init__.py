"""What a verdict says beside its class: evidence, mechanism, advice and headroom, from what was measured."""
