"""The row contract (config/rows.py): the metadata columns declared once, and what follows."""

from __future__ import annotations

import copy
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql.types import BinaryType, IntegerType, LongType, StringType

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.models import Schema
from streamsift.config.rows import (
    KAFKA_FIELDS,
    META_COLUMNS,
    OUTPUT_COLUMNS,
    RESERVED_COLUMNS,
    SORT_KEY,
    SOURCE_COLUMNS,
)
from streamsift.engine.processor import SourceProcessor
from streamsift.sources.kafka_range import KafkaRecords
from support.pipeline_docs import fields, mapping, pipeline_doc

DOC: dict[str, Any] = pipeline_doc(
    name="rows",
    fields=fields(("id", "string")),
    clickhouse={"path": "ch"},
    mapping=mapping(("id", "id", "String")),
)


def with_field(name: str) -> dict[str, Any]:
    doc = copy.deepcopy(DOC)
    doc["source"]["schema"]["fields"].append({"name": name, "type": "string"})
    return doc


def test_the_derived_lists_keep_their_order_and_members() -> None:
    assert SORT_KEY == ("_topic", "_partition", "_offset", "_rpartition", "_roffset")
    assert [c.name for c in OUTPUT_COLUMNS] == [
        *("_topic", "_partition", "_offset", "_kafka_ts", "_late", "_key", "_raw"),
        *("_error", "_stage", "_source", "_rpartition", "_roffset"),
    ]
    assert KAFKA_FIELDS == {
        "_kafka.topic": ("_topic", "string"),
        "_kafka.partition": ("_partition", "int"),
        "_kafka.offset": ("_offset", "int"),
        "_kafka.timestamp": ("_kafka_ts", "timestamp"),
    }


@pytest.mark.parametrize("column", [c.name for c in META_COLUMNS])
def test_a_payload_field_may_not_take_a_metadata_name(column: str) -> None:
    with pytest.raises(ConfigError, match=f"field name '{column}' is reserved"):
        parse_pipeline(with_field(column))


@pytest.mark.parametrize("name", ["_id", "_version", "_kafka_id", "_rev"])
def test_other_underscore_names_stay_readable(name: str) -> None:
    assert name not in RESERVED_COLUMNS
    assert parse_pipeline(with_field(name)).primary_source.schema_.field(name) is not None


def test_the_source_schema_is_the_payload_then_the_declared_metadata() -> None:
    schema = Schema.model_validate({"fields": [{"name": "id", "type": "string"}]})
    struct = SourceProcessor.build(schema, None, None).spark_struct()
    assert struct.names == ["id", *(c.name for c in SOURCE_COLUMNS)]
    assert struct["_partition"].dataType == IntegerType() and not struct["_partition"].nullable
    assert struct["_offset"].dataType == LongType() and not struct["_offset"].nullable
    assert struct["_raw"].dataType == BinaryType() and struct["_raw"].nullable
    assert struct["_error"].dataType == StringType() and struct["_error"].nullable


def test_the_processors_rows_fill_every_metadata_column() -> None:
    schema = Schema.model_validate({"fields": [{"name": "id", "type": "string"}]})
    proc = SourceProcessor.build(schema, None, None)
    records = KafkaRecords(
        topic="events",
        partition=3,
        start=7,
        end=9,
        offsets=[7, 8],
        timestamps_ms=[1_000, 2_000],
        keys=[b"k", None],
        values=[b'{"id": "a"}', b"not json"],
    )
    (batch,) = proc.process(records)
    assert batch.schema == proc.schema
    rows = pa.Table.from_batches([batch]).to_pylist()
    assert [(r["_topic"], r["_partition"], r["_offset"]) for r in rows] == [
        ("events", 3, 7),
        ("events", 3, 8),
    ]
    good, bad = rows
    assert (good["_raw"], good["_key"], good["_error"]) == (None, None, None)
    assert (bad["_raw"], bad["_key"]) == (b"not json", None)
    assert bad["_error"].startswith("malformed JSON") and bad["_event_time"] is None
