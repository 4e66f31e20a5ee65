"""Test support: what the suite shares, each in one place. The shared fixtures
(`fixtures`, a pytest plugin registered in tests/conftest.py); helpers: `paths` (the
checkout), `waiting` (wait_for), `ports`, `cli` (running `streamsift`), `servers` (the API in a
thread, `streamsift serve` as a process), `clickhouse` (counts, the fault endpoint),
`pipeline_docs`, `join_events`, `registry_messages`, `otlp`, `service_pipeline`; and the
test-only servers (`schema_registry`, `spark_cluster`). Nothing in streamsift imports this
package; no test module imports another test module, only this package."""
