"""`sink.on_new_fields: add_columns`: a Nullable column per new message field, exactly once.

The parse step flags records holding fields the schema does not list (transforms/
schema_drift.py). Before a micro-batch is written, the driver reads the flagged records'
payloads in their Kafka order, infers each new field's type from its first value, and:
  1. appends the new fields to `added_columns.json` beside the checkpoint (atomic write;
     each entry remembers the batch that added it),
  2. runs `ALTER TABLE ... ADD COLUMN IF NOT EXISTS` (said in the log),
  3. writes the batch with the extended mapping: flagged records are re-read for the new
     columns (engine/batch_writer.py), all others get NULL there.
A crash anywhere re-runs the batch with the same rows and the same file, so the same columns
and the same insert tokens (a crash between 1 and 2 is mended at start-up, which adds every
column of the file that the table lacks). The file is the mapping's extension from then on:
a restart reads it, so new fields parse like listed ones.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from streamsift.config.base import FIELD_PATH
from streamsift.config.models import Pipeline
from streamsift.config.sink import COLUMN_NAME, NewFields
from streamsift.sinks.clickhouse import ClickHouseWriter
from streamsift.sinks.clickhouse.ddl import quote
from streamsift.transforms.parse import FieldSpec, JsonParser
from streamsift.transforms.schema_drift import (
    FLAGGED_COLUMNS,
    NEW_FIELDS,
    column_type_of,
    is_flagged,
    unknown_fields,
)

ADDED_COLUMNS_FILE = "added_columns.json"
log = logging.getLogger("streamsift.engine")


@dataclass(frozen=True)
class AddedColumn:
    field: str
    column: str
    field_type: str
    column_type: str
    batch: int


def load_added(checkpoint: Path) -> list[AddedColumn]:
    path = checkpoint / ADDED_COLUMNS_FILE
    if not path.exists():
        return []
    return [AddedColumn(**c) for c in json.loads(path.read_text())["columns"]]


def save_added(checkpoint: Path, added: Sequence[AddedColumn]) -> None:
    """Atomically: the file is either the old list or the new one, never half."""
    path = checkpoint / ADDED_COLUMNS_FILE
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps({"columns": [c.__dict__ for c in added]}, indent=1))
    with open(tmp, "rb") as file:
        os.fsync(file.fileno())
    tmp.replace(path)


def extended(pipeline: Pipeline, added: Sequence[AddedColumn]) -> Pipeline:
    """`pipeline` with the added fields in its schema and mapping."""
    if not added:
        return pipeline
    doc = pipeline.model_dump(by_alias=True)
    doc["source"]["schema"]["fields"] = [
        *doc["source"]["schema"]["fields"],
        *({"name": c.field, "type": c.field_type} for c in added),
    ]
    doc["sink"]["mapping"] = [
        *doc["sink"]["mapping"],
        *({"field": c.field, "column": c.column, "type": c.column_type} for c in added),
    ]
    return Pipeline.model_validate(doc)


def alter_sql(database: str, table: str, column: AddedColumn) -> str:
    return (
        f"ALTER TABLE {quote(database)}.{quote(table)} ADD COLUMN IF NOT EXISTS "
        f"{quote(column.column)} {column.column_type}"
    )


@dataclass
class SchemaDrift:
    """The added columns of one pipeline run (`base` is the pipeline as written)."""

    base: Pipeline
    checkpoint: Path
    writer: ClickHouseWriter
    after_alter: Callable[[], None] | None = None  # crash tests: a fault after the ALTERs

    def __post_init__(self) -> None:
        self.added = load_added(self.checkpoint)

    @property
    def pipeline(self) -> Pipeline:
        return extended(self.base, self.added)

    def ensure_columns(self) -> None:
        """Add the file's columns the table lacks (after a crash between file and ALTER)."""
        for column in self.added:
            self._alter(column)

    def extend(self, flagged: pa.Table, batch_id: int) -> bool:
        """Add the new fields of a batch's flagged rows (`_raw`, in Kafka order); True when
        the mapping grew."""
        known = {f.name for f in self.pipeline.primary_source.schema_.fields}
        columns = {m.column for m in self.pipeline.sink.mapping}
        new: dict[str, AddedColumn] = {}
        for raw in flagged.column("_raw").to_pylist():
            doc = json.loads(raw)
            for path, kind in unknown_fields(doc, frozenset(known)).items():
                column = path.replace(".", "_").replace("-", "_")
                if path in new or not FIELD_PATH.match(path) or not COLUMN_NAME.match(column):
                    continue
                if column in columns:
                    log.warning("new field %r not added: column %r exists", path, column)
                    known.add(path)
                    continue
                field_type, column_type = column_type_of(kind)
                new[path] = AddedColumn(path, column, field_type.value, column_type, batch_id)
                columns.add(column)
        if not new:
            return False
        self.added = [*self.added, *new.values()]
        save_added(self.checkpoint, self.added)
        for column in new.values():
            self._alter(column)
        if self.after_alter is not None:
            self.after_alter()
        return True

    def _alter(self, column: AddedColumn) -> None:
        conn = self.base.sink.clickhouse
        sql = alter_sql(conn.database, self.base.sink.table, column)
        log.warning("new field %r: %s", column.field, sql)
        self.writer.command(sql)


KAFKA_ORDER = ("_topic", "_partition", "_offset")


def in_kafka_order(rows: pa.Table) -> pa.Table:
    return rows.sort_by([(c, "ascending") for c in KAFKA_ORDER])


def flagged_rows(frame: Any) -> pa.Table:
    """The rows of a batch's frame flagged with new fields, in Kafka order (driver side)."""
    from pyspark.sql import functions as F

    return (
        frame.filter(F.col("_error").startswith(NEW_FIELDS))
        .select(*FLAGGED_COLUMNS)
        .orderBy(*KAFKA_ORDER)
        .toArrow()
    )


def flagged_in(data: pa.Table) -> pa.Table:
    """The rows of a batch's Arrow table flagged with new fields, in Kafka order."""
    return in_kafka_order(data.filter(is_flagged(data)).select(list(FLAGGED_COLUMNS)))


def complete_added_columns(data: pa.Table, pipeline: Pipeline) -> pa.Table:
    """The batch's rows with the added columns: read from the payload of the rows flagged
    with new fields (their `_error` cleared unless a value does not parse), NULL for others."""
    present = set(data.column_names)
    missing = [m for m in pipeline.sink.mapping if m.column not in present]
    errors = data.column("_error")
    flagged = pc.fill_null(pc.starts_with(errors, NEW_FIELDS), False)
    if not missing and not pc.any(flagged).as_py():
        return data
    schema = pipeline.primary_source.schema_
    specs = [FieldSpec(m.field, m.column, schema.field(m.field).type) for m in missing]  # type: ignore[union-attr]
    marked = flagged.to_pylist()
    raws = data.column("_raw").to_pylist()
    parsed = JsonParser(specs).parse([r if f else b"{}" for r, f in zip(raws, marked, strict=True)])
    reasons = [
        (p if p is not None else None) if f else e
        for f, p, e in zip(marked, parsed.errors, errors.to_pylist(), strict=True)
    ]
    for m in missing:
        data = data.append_column(m.column, parsed.table.column(m.column))
    return data.set_column(
        data.column_names.index("_error"), "_error", pa.array(reasons, pa.string())
    )


def drift_enabled(pipeline: Pipeline) -> bool:
    return pipeline.sink.on_new_fields is NewFields.ADD_COLUMNS
