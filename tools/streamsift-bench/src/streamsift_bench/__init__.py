"""streamsift's bench and load tools, a distribution of their own (not in streamsift's wheel).

- the benchmark suite, `streamsift bench` (`runner` says what one run does; `isolated_run`
  is one run in its own process);
- `loadgen`: realistic events at a controlled rate, with an optional join stream
  (`streamsift loadgen`);
- `chaos`: the kill -9 harness (`streamsift chaos`);
- `commands`: those three subcommands, which streamsift's CLI finds through the entry points
  `streamsift.commands`.
"""
