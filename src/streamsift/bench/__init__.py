"""The benchmark suite: `streamsift bench` (see runner.py for what one run does)."""
