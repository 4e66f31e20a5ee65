"""The load-test tools: generated streams with known truth, the load generator, the kill -9
harness, and the reference that says what a correct pipeline writes.

- `generator`: the demo's event stream with re-sends, and the orders/user-profile streams of
  the join demo (`streamsift demo`, `demo --join`);
- `join_events`: the orders ⋈ users pipeline, its malformed messages and expected rows;
- `loadgen`: realistic events at a controlled rate, with an optional join stream
  (`streamsift loadgen`, the bench);
- `reference`: the one reference dedup and temporal join behind every truth;
- `schema`: the streams' pipeline schemas, ClickHouse mappings and checksums (stdlib only);
- `chaos`: the kill -9 harness (`streamsift chaos`), which starts and kills process trees
  through `runtime/processes.py`.
"""
