"""The Arrow pass-through: a single source's processed rows reach the sink without Spark rows.

Where no Spark stage needs the rows (one source, no join, no filter or computed field), the
source processor's Arrow batches are shaped into the output frame on the executor (the mapped
columns named as in the sink, then `OUTPUT_COLUMNS`: `_stage`, `_source`, the right record's
NO_RECORD position) and each is serialized (Arrow IPC) into one row of one binary column.
Spark then moves a few large rows instead of converting every event into a JVM row and back
(docs/benchmarks.md, "Arrow pass-through"); the sink side (`unpack`) deserializes and
concatenates the chunks, and the batch writer sorts, chunks and tokens them as on the row
path, so a re-run batch makes the same tokens. `STREAMSIFT_ARROW_PASSTHROUGH=0` turns it
off (the row path).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc
from pyspark.sql.pandas.types import to_arrow_schema
from pyspark.sql.types import BinaryType, StructField, StructType

from streamsift.config.rows import NO_RECORD, OUTPUT_COLUMNS, RIGHT_RECORD_COLUMNS
from streamsift.engine.processor import SPARK_DATA_TYPES, SourceProcessor
from streamsift.sources.kafka_range import KafkaRecords
from streamsift.transforms.schema_drift import FLAGGED_COLUMNS, is_flagged

if TYPE_CHECKING:  # executors unpickle this module: keep pydantic out of them
    from streamsift.config.models import Pipeline

ARROW_COLUMN = "_arrow_chunk"  # the one column of a pass-through frame: an Arrow IPC stream
PASSTHROUGH_ENV = "STREAMSIFT_ARROW_PASSTHROUGH"  # "0": always the row path
# One chunk is one value in a JVM row: kept well below Spark's and Arrow's 2 GB per value, and
# small enough that the JVM never holds a huge copy (wide rows are cut into more chunks).
MAX_CHUNK_BYTES = 64 << 20


def use_pass_through(pipeline: Pipeline, stage_empty: bool) -> bool:
    """One source, no join, no Spark stage, and not switched off by the environment."""
    if os.environ.get(PASSTHROUGH_ENV, "1").strip().lower() in ("0", "false", "no", "off"):
        return False
    return pipeline.join is None and len(pipeline.inputs) == 1 and stage_empty


@dataclass(frozen=True)
class PassThroughProcessor:
    """A SourceProcessor whose output is the output frame's Arrow chunks, one per row.

    `mapped`: (column of the processor's schema, sink column) per mapping entry, in order.
    """

    inner: SourceProcessor
    mapped: tuple[tuple[str, str], ...]
    source_id: str
    max_chunk_bytes: int = MAX_CHUNK_BYTES

    def spark_schema(self) -> StructType:  # what DataSource.schema() returns
        return StructType([StructField(ARROW_COLUMN, BinaryType(), False)])

    def output_struct(self) -> StructType:
        """The Spark schema the row path's output frame has (engine/query.py output_frame)."""
        source = {f.name: f for f in self.inner.spark_struct()}
        mapped = [
            StructField(column, source[name].dataType, source[name].nullable)
            for name, column in self.mapped
        ]
        meta = [
            source.get(c.name) or StructField(c.name, SPARK_DATA_TYPES[c.sql_type], c.nullable)
            for c in OUTPUT_COLUMNS
        ]
        return StructType(mapped + meta)

    @property
    def output_schema(self) -> pa.Schema:
        return to_arrow_schema(self.output_struct(), timezone="UTC")

    def process(self, records: KafkaRecords) -> Iterator[pa.RecordBatch]:
        schema = self.output_schema
        for batch in self.inner.process(records):
            if batch.num_rows:
                shaped = self._shape(batch, schema)
                for part in _cut(shaped, self.max_chunk_bytes):
                    yield _one_row(serialize(part))

    def _shape(self, batch: pa.RecordBatch, schema: pa.Schema) -> pa.RecordBatch:
        n = batch.num_rows
        error = batch.column("_error")
        given = {
            "_stage": pc.if_else(pc.is_valid(error), "parse", pa.scalar(None, pa.string())),
            "_source": pa.array([self.source_id] * n, pa.string()),
            **{c.name: pa.array([NO_RECORD] * n) for c in RIGHT_RECORD_COLUMNS},
        }
        columns = [batch.column(name) for name, _ in self.mapped]
        columns += [
            given[c.name] if c.name in given else batch.column(c.name) for c in OUTPUT_COLUMNS
        ]
        columns = [
            c if c.type == f.type else c.cast(f.type) for c, f in zip(columns, schema, strict=True)
        ]
        return pa.RecordBatch.from_arrays(columns, schema=schema)


def _cut(batch: pa.RecordBatch, max_bytes: int) -> Iterator[pa.RecordBatch]:
    """`batch` in slices of about `max_bytes` at most (rows in order; at least one row each)."""
    parts = max(1, -(-batch.nbytes // max(1, max_bytes)))
    step = max(1, -(-batch.num_rows // parts))
    for start in range(0, batch.num_rows, step):
        yield batch.slice(start, step)


def serialize(batch: pa.RecordBatch) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, batch.schema) as writer:
        writer.write_batch(batch)
    return sink.getvalue().to_pybytes()


def _one_row(payload: bytes) -> pa.RecordBatch:
    return pa.RecordBatch.from_arrays(
        [pa.array([payload], pa.binary())],
        schema=pa.schema([pa.field(ARROW_COLUMN, pa.binary(), nullable=False)]),
    )


def unpack_batches(chunks: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """The output frame's record batches carried by a pass-through frame's batches."""
    for chunk in chunks:
        for payload in chunk.column(ARROW_COLUMN):  # read in place, not copied to bytes
            yield from pa.ipc.open_stream(payload.as_buffer())


def unpack(chunks: pa.Table, schema: pa.Schema) -> pa.Table:
    """A pass-through frame's rows (the driver's `toArrow()`) as one output-frame table."""
    return pa.Table.from_batches(list(unpack_batches(chunks.to_batches())), schema=schema)


def flagged_of_chunks(chunks: Iterable[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    """mapInArrow: the rows flagged with new fields, as FLAGGED_COLUMNS (executor side)."""
    for batch in unpack_batches(chunks):
        mask = is_flagged(batch)
        if pc.any(mask).as_py():
            yield batch.filter(mask).select(list(FLAGGED_COLUMNS))
