"""ClickHouse destination: connection, table setup, exactly-once inserts."""

from streamsift.sinks.clickhouse.client import ClickHouseWriter, connect
from streamsift.sinks.clickhouse.ddl import create_table_sql, dedup_window_of

__all__ = ["ClickHouseWriter", "connect", "create_table_sql", "dedup_window_of"]
