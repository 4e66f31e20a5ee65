"""The sink's tables, created or checked before any data moves: the table and the DLQ table.

Dedup mode `last` creates its table as a ReplacingMergeTree on the version column; under
sink.on_new_fields add_columns, an existing table first gets the columns added so far.
"""

from __future__ import annotations

from streamsift.config.models import Pipeline
from streamsift.engine.new_columns import SchemaDrift
from streamsift.sinks.clickhouse import ClickHouseWriter
from streamsift.sinks.clickhouse.ddl import create_table_sql, quote
from streamsift.sinks.dlq import DLQ_COLUMNS


def prepare_tables(
    pipeline: Pipeline, writer: ClickHouseWriter, drift: SchemaDrift | None = None
) -> None:
    """Create or check the table and the DLQ table (`drift`: the add_columns mapping)."""
    sink = pipeline.sink
    columns = [(m.column, m.type) for m in sink.mapping]
    if drift is not None and writer.table_exists(sink.table):
        drift.ensure_columns()
    version = pipeline.replacing_version_column  # dedup mode last
    if version is not None and sink.create_table:
        writer.command(
            create_table_sql(
                sink.clickhouse.database,
                sink.table,
                columns,
                pipeline.table_order_by,
                engine=f"ReplacingMergeTree({quote(version)})",
            )
        )
    writer.prepare_table(
        sink.table,
        columns,
        create=sink.create_table,
        order_by=pipeline.table_order_by,
        on_missing_window=sink.on_missing_dedup_window,
    )
    writer.prepare_table(
        pipeline.dlq_table,
        DLQ_COLUMNS,
        create=True,
        order_by=("topic", "partition", "offset"),
        on_missing_window=sink.on_missing_dedup_window,
    )
