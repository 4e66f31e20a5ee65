"""streamsift's bench and load tools, a distribution of their own (not in streamsift's wheel).

- `streamsift bench`: `runner` drives one bench run (its `options`); each drain or live run is
  a process of its own (`isolated_run`; the hand-written `baselines`: the naive consumer and
  ClickHouse-side dedup, `raw_vec` the vectorised ceiling, `nospark` streamsift's stages
  without Spark, in server mode also into the endpoint; `quix_worker` in the quixstreams
  interpreter of `quixenv`), sharing `common`'s table, checks and progress files and, but
  for quixstreams, `consume_loop`'s consume/insert loop and `run_setup`'s pipeline document
  and server-mode endpoint; `live_steps` sends a live run's fixed-rate
  steps, `large_drain` the large backlog; `resources` and `profiles` watch the processes;
  `measures` and `verdicts` judge the results (ratios from alternating pairs); `report` and
  `plots` write them, `readme` the README's figures from results.json. `formats` (with
  `decode_timing`) times the decoders alone.
- `loadgen`: realistic events at a controlled rate, with an optional join stream, and the
  ground truth (`streamsift loadgen`).
- `chaos`: the kill -9 harness (`streamsift chaos`), its pipeline shapes in `chaos_shapes`.
- `commands`: those three subcommands, which streamsift's CLI finds through the entry points
  `streamsift.commands`.
"""
