"""The Arrow pass-through's chunks: shaped as the output frame, and read back whole."""

from __future__ import annotations

import json

import pyarrow as pa

from streamsift.config.rows import NO_RECORD, OUTPUT_COLUMNS
from streamsift.config.types import FieldType
from streamsift.engine.arrow_passthrough import (
    FLAGGED_COLUMNS,
    PassThroughProcessor,
    flagged_of_chunks,
    unpack,
)
from streamsift.engine.processor import SourceProcessor
from streamsift.sources.kafka_range import KafkaRecords
from streamsift.transforms.parse import FieldSpec


def processor(max_chunk_bytes: int = 1 << 20) -> PassThroughProcessor:
    inner = SourceProcessor(
        fields=(FieldSpec("id", "id", FieldType.STRING), FieldSpec("n", "n", FieldType.INT)),
        flag_new_fields=True,
    )
    # `n` mapped twice, and a Kafka field (`_kafka.offset` reads `_offset`)
    return PassThroughProcessor(
        inner, (("id", "id"), ("n", "n"), ("n", "n2"), ("_offset", "o")), "s1", max_chunk_bytes
    )


def records() -> KafkaRecords:
    values = [
        {"id": "a", "n": 1},
        {"id": "b", "n": 2, "extra": True},  # a new field: flagged
        "{broken",
        {"id": "c", "n": 3},
    ]
    raw = [v.encode() if isinstance(v, str) else json.dumps(v).encode() for v in values]
    return KafkaRecords("t", 2, 10, 14, [10, 11, 12, 13], [1_000] * 4, [b"k"] * 4, raw)


def test_chunks_hold_the_output_frame_and_unpack_to_it():
    proc = processor()
    chunks = list(proc.process(records()))
    assert [c.schema.names for c in chunks] == [["_arrow_chunk"]]
    table = unpack(pa.Table.from_batches(chunks), proc.output_schema)

    assert table.column_names == ["id", "n", "n2", "o", *(c.name for c in OUTPUT_COLUMNS)]
    assert table.schema == proc.output_schema
    assert table.column("id").to_pylist() == ["a", "b", None, "c"]
    assert table.column("n2").to_pylist() == [1, 2, None, 3]
    assert table.column("o").to_pylist() == [10, 11, 12, 13]
    assert table.column("_stage").to_pylist() == [None, "parse", "parse", None]
    assert table.column("_source").to_pylist() == ["s1"] * 4
    assert table.column("_rpartition").to_pylist() == [NO_RECORD] * 4
    assert table.column("_roffset").to_pylist() == [NO_RECORD] * 4
    # the raw message travels only with dead letters (a flagged record is one, for now)
    assert [r is not None for r in table.column("_raw").to_pylist()] == [False, True, True, False]


def test_flagged_records_are_picked_from_the_chunks():
    flagged = pa.Table.from_batches(flagged_of_chunks(processor().process(records())))
    assert flagged.column_names == list(FLAGGED_COLUMNS)
    assert flagged.column("_offset").to_pylist() == [11]
    assert json.loads(flagged.column("_raw")[0].as_py())["extra"] is True


def test_an_empty_range_yields_no_chunk():
    empty = KafkaRecords("t", 0, 5, 5, [], [], [], [])
    assert list(processor().process(empty)) == []


def test_wide_batches_are_cut_into_more_chunks_in_order():
    proc = processor(max_chunk_bytes=64)
    chunks = list(proc.process(records()))
    assert len(chunks) == 4  # one row each: every row is wider than 64 bytes here
    table = unpack(pa.Table.from_batches(chunks), proc.output_schema)
    assert table.column("_offset").to_pylist() == [10, 11, 12, 13]
