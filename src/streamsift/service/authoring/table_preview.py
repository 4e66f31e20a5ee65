"""A pipeline's ClickHouse table as the UI's pipeline page shows it: its row count and its
newest rows (by the event-time column when one is mapped, else as ClickHouse returns them).

Read through the same connection as the pipeline's dead letters (the embedded ClickHouse's
endpoint while the service runs it), so it works while the pipeline writes.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from typing import Any
from uuid import UUID

from streamsift.service.core import PipelineService
from streamsift.sinks.clickhouse.ddl import quote


@dataclass(frozen=True)
class TablePreview:
    table: str
    exists: bool
    count: int
    columns: list[str]
    order: str | None  # the column the rows are newest-first by, if any
    rows: list[list[Any]]


def newest_rows(service: PipelineService, pipeline_id: str, limit: int) -> TablePreview:
    """Row count and up to `limit` newest rows of the pipeline's sink table."""
    with service.dead_letters(pipeline_id) as letters:
        pipeline, writer = letters.pipeline, letters.queries.writer
        table = pipeline.sink.table
        columns = [m.column for m in pipeline.sink.mapping]
        if not writer.table_exists(table):
            return TablePreview(table, False, 0, columns, None, [])
        order = _event_time_column(pipeline)
        select = ", ".join(quote(c) for c in columns)
        where = f"{quote(writer.conn.database)}.{quote(table)}"
        sql = f"SELECT {select} FROM {where}"
        if order is not None:
            sql += f" ORDER BY {quote(order)} DESC"
        rows = writer.query_rows(f"{sql} LIMIT {int(limit)}")
        count = writer.count(table)
    return TablePreview(table, True, count, columns, order, [[_json(v) for v in r] for r in rows])


def _event_time_column(pipeline: Any) -> str | None:
    """The column the first source's event-time field is written to, if it is mapped."""
    field = pipeline.primary_source.schema_.event_time
    return next((m.column for m in pipeline.sink.mapping if field and m.field == field), None)


def _json(value: Any) -> Any:
    """A ClickHouse value as JSON can carry it."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (datetime, date)):
        return value.isoformat()
    if isinstance(value, (Decimal, UUID)):
        return str(value)
    if isinstance(value, bytes):
        try:
            return value.decode("utf-8")
        except UnicodeDecodeError:
            return base64.b64encode(value).decode()
    if isinstance(value, dict):
        return {str(k): _json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_json(v) for v in value]
    return str(value)
