"""The dead-letter record: what failed, where it came from, and why.

Its columns are declared once, in `DLQ_TABLE`, with their ClickHouse and Arrow types; the
table's DDL columns (`DLQ_COLUMNS`) and the Arrow schema of its inserts (`DLQ_ARROW_SCHEMA`)
are derived from it. The marks table of `streamsift dlq` (sinks/dlq_queries.py) reuses the
columns it shares with it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pyarrow as pa

UTC_MILLIS = pa.timestamp("ms", tz="UTC")


@dataclass(frozen=True)
class TableColumn:
    """A column of a table the pipeline creates: its ClickHouse type, and the Arrow type
    of the data inserted into it."""

    name: str
    clickhouse: str
    arrow: pa.DataType


def clickhouse_columns(columns: Sequence[TableColumn]) -> tuple[tuple[str, str], ...]:
    """(name, ClickHouse type) pairs, as the DDL takes them."""
    return tuple((c.name, c.clickhouse) for c in columns)


def arrow_schema(columns: Sequence[TableColumn]) -> pa.Schema:
    return pa.schema([(c.name, c.arrow) for c in columns])


# The DLQ table's columns. The payload and key are kept byte for byte.
DLQ_TABLE: tuple[TableColumn, ...] = (
    TableColumn("pipeline", "LowCardinality(String)", pa.string()),
    TableColumn("source", "LowCardinality(String)", pa.string()),
    TableColumn("topic", "String", pa.string()),
    TableColumn("partition", "Int32", pa.int32()),
    TableColumn("offset", "Int64", pa.int64()),
    TableColumn("kafka_timestamp", "Nullable(DateTime64(3, 'UTC'))", UTC_MILLIS),
    TableColumn("key", "Nullable(String)", pa.binary()),
    TableColumn("payload", "String", pa.binary()),
    TableColumn("stage", "LowCardinality(String)", pa.string()),
    TableColumn("error_class", "LowCardinality(String)", pa.string()),
    TableColumn("error", "String", pa.string()),
    TableColumn("failed_at", "DateTime64(3, 'UTC')", UTC_MILLIS),
)
DLQ_COLUMNS = clickhouse_columns(DLQ_TABLE)
DLQ_ARROW_SCHEMA = arrow_schema(DLQ_TABLE)


def dlq_columns(*names: str) -> tuple[TableColumn, ...]:
    """The DLQ table's columns of these names, in this order."""
    by_name = {c.name: c for c in DLQ_TABLE}
    return tuple(by_name[n] for n in names)
