"""The table side of `join.mode: table` (engine/processor.py `tombstones`): a keyed message
with a null value is a good row with its Kafka key and no value (a tombstone the join
applies); elsewhere, and without a key, it stays a dead letter."""

from __future__ import annotations

import pyarrow as pa

from streamsift.config.models import Schema
from streamsift.engine.processor import SourceProcessor
from streamsift.sources.kafka_range import KafkaRecords

SCHEMA = Schema.model_validate(
    {
        "fields": [{"name": "id", "type": "string"}, {"name": "ts", "type": "timestamp"}],
        "event_time": "ts",
    }
)
RECORDS = KafkaRecords(
    topic="users",
    partition=0,
    start=0,
    end=3,
    offsets=[0, 1, 2],
    timestamps_ms=[1_000, 2_000, 3_000],
    keys=[b"u1", b"u1", None],
    values=[b'{"id": "u1", "ts": "1970-01-01T00:00:01Z"}', None, None],
)


def rows(tombstones: bool) -> list[dict]:
    proc = SourceProcessor.build(SCHEMA, None, None, tombstones=tombstones)
    return pa.Table.from_batches(list(proc.process(RECORDS))).to_pylist()


def test_a_keyed_null_value_is_a_tombstone_on_the_table_side():
    value, tombstone, keyless = rows(tombstones=True)
    assert (value["_error"], value["_key"]) == (None, None)
    assert (tombstone["_error"], tombstone["_raw"], tombstone["_key"]) == (None, None, b"u1")
    assert tombstone["_event_time"].timestamp() == 2.0  # its Kafka timestamp
    assert keyless["_error"] == "empty message"


def test_elsewhere_a_null_value_is_a_dead_letter():
    _, tombstone, _ = rows(tombstones=False)
    assert tombstone["_error"] == "empty message"
