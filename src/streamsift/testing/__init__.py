"""Helpers used only by the test suite.

Nothing in streamsift's own code imports this package. What users run lives elsewhere: the
bundled broker and the chdb-backed ClickHouse endpoint in `streamsift.embedded`, the
generators, the load generator and the kill -9 harness in `streamsift.loadtest`.
"""
