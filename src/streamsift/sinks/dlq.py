"""The dead-letter record: what failed, where it came from, and why."""

from __future__ import annotations

import pyarrow as pa

# The DLQ table's columns, in ClickHouse types. The payload is kept byte for byte.
DLQ_COLUMNS: tuple[tuple[str, str], ...] = (
    ("pipeline", "LowCardinality(String)"),
    ("source", "LowCardinality(String)"),
    ("topic", "String"),
    ("partition", "Int32"),
    ("offset", "Int64"),
    ("kafka_timestamp", "Nullable(DateTime64(3, 'UTC'))"),
    ("key", "Nullable(String)"),
    ("payload", "String"),
    ("stage", "LowCardinality(String)"),
    ("error_class", "LowCardinality(String)"),
    ("error", "String"),
    ("failed_at", "DateTime64(3, 'UTC')"),
)

DLQ_ARROW_SCHEMA = pa.schema(
    [
        ("pipeline", pa.string()),
        ("source", pa.string()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("kafka_timestamp", pa.timestamp("ms", tz="UTC")),
        ("key", pa.binary()),
        ("payload", pa.binary()),
        ("stage", pa.string()),
        ("error_class", pa.string()),
        ("error", pa.string()),
        ("failed_at", pa.timestamp("ms", tz="UTC")),
    ]
)
