"""Sinks: where rows and dead letters go. Today: ClickHouse (embedded chdb or a server)."""
