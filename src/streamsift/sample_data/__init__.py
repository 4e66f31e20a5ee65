"""Generated streams with known truth, for `streamsift demo` and the load tools.

- `generator`: the demo's event stream with re-sends, and the orders/user-profile streams of
  the join demo (`streamsift demo`, `demo --join`);
- `join_events`: the orders ⋈ users pipeline, its malformed messages and expected rows;
- `reference`: the one reference dedup and temporal join behind every truth;
- `schema`: the streams' pipeline schemas, ClickHouse mappings and checksums (stdlib only).
"""
