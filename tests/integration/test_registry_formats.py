"""Avro and Protobuf through the real broker, Spark and chdb, with messages produced by
confluent-kafka's own serializers against the test registry: rows exact (logical types,
nested records), fields taken from the registry, bad bytes and unknown schema ids in the DLQ
with their reasons, and a new writer schema mid-stream handled without a restart."""

from __future__ import annotations

import struct
import threading
import uuid

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.registry_fields import parse_resolved
from streamsift.engine.replay import Replayer
from streamsift.engine.runner import PipelineRunner
from streamsift.sinks.dlq_queries import DlqQueries
from streamsift.sinks.errors import SinkError
from support.pipeline_docs import fields, mapping, pipeline_doc
from support.registry_messages import (
    avro_order,
    avro_serializer,
    expected_proto_row,
    proto_order,
    proto_order_class,
    proto_serializer,
    serialize,
)
from support.waiting import wait_for

pytestmark = pytest.mark.integration

AVRO_MAPPING = mapping(
    ("id", "id", "UUID"),
    ("qty", "qty", "Int64"),
    ("price", "price", "Decimal(10, 2)"),
    ("created", "created", "DateTime64(3, 'UTC')"),
    ("shipped", "shipped", "Nullable(DateTime64(6, 'UTC'))"),
    ("day", "day", "Date"),
    ("paid", "paid", "Bool"),
    ("ratio", "ratio", "Float64"),
    ("customer.name", "customer_name", "String"),
    ("customer.address.city", "city", "String"),
    ("customer.address.zip", "zip", "Nullable(String)"),
    ("tags", "tags", "Array(String)"),
    ("attrs", "attrs", "Map(String, String)"),
    ("status", "status", "LowCardinality(String)"),
    ("note", "note", "Nullable(String)"),
)


def naive(value):
    """ClickHouse hands DateTime64 values back without a zone (they are UTC)."""
    return value.replace(tzinfo=None) if value is not None else None


def expected_avro_table_row(i: int) -> tuple:
    o = avro_order(i)
    zip_ = o["customer"]["address"]["zip"]
    return (
        uuid.UUID(o["id"]),
        i,
        o["price"],
        naive(o["created"]),
        naive(o["shipped"]),
        o["day"],
        o["paid"],
        o["ratio"],
        f"c{i}",
        f"city{i % 5}",
        zip_,
        o["tags"],
        o["attrs"],
        o["status"],
        o["note"],
    )


def run_live(runner: PipelineRunner, done, timeout: float = 180.0) -> threading.Thread:
    """Start the pipeline in a thread (not until caught up); returns it running."""
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(r=runner.run()), daemon=True)
    thread.start()
    return thread


def test_avro_fields_from_registry_exact_rows_dlq_and_evolution_mid_stream(
    broker, chdb_path, tmp_path, unique_name, produce_messages, schema_registry
):
    topic = unique_name
    broker.create_topic(topic, 2)
    v1, v2 = avro_serializer(schema_registry.url), avro_serializer(schema_registry.url, True)
    first = [(f"k{i}".encode(), serialize(v1, topic, avro_order(i))) for i in range(30)]
    good_id = struct.unpack(">I", first[0][1][1:5])[0]
    bad = {
        b"garbage": b"\x00" + struct.pack(">I", good_id) + b"\xff" * 12,
        b"unknown-id": b"\x00" + struct.pack(">I", 424_242) + first[0][1][5:],
        b"json": b'{"id": "not avro"}',
    }
    doc = pipeline_doc(
        topic=topic,
        fields=[],
        mapping=AVRO_MAPPING,
        bootstrap_servers=broker.bootstrap_servers,
        clickhouse={"path": str(chdb_path)},
        sink={"create_table": True, "order_by": ["qty"]},
        source={"format": "avro", "schema_registry": {"url": schema_registry.url}},
        checkpoint_dir=tmp_path / "checkpoint",
    )
    doc["source"]["schema"] = {"from_registry": {}}  # subject <topic>-value, latest
    produce_messages(topic, first + list(bad.items()))
    pipeline = parse_resolved(doc)
    assert [f.name for f in pipeline.primary_source.schema_.fields][-1] == "note"

    runner = PipelineRunner(pipeline, base_dir=tmp_path)
    store = DlqQueries(runner.writer, pipeline.dlq_table)
    thread = run_live(runner, None)
    try:
        wait_for(lambda: runner.writer.count(topic) >= 30, 180, what="30 rows", ignoring=SinkError)
        # a producer registers a new schema (one more optional field) while the pipeline runs
        later = [
            (f"n{i}".encode(), serialize(v2, topic, avro_order(i, True))) for i in range(30, 40)
        ]
        assert struct.unpack(">I", later[0][1][1:5])[0] != good_id
        produce_messages(topic, later)
        wait_for(lambda: runner.writer.count(topic) >= 40, 180, what="40 rows", ignoring=SinkError)
    finally:
        runner.stop()
        thread.join(120)
    assert not thread.is_alive()

    columns = ", ".join(m["column"] for m in AVRO_MAPPING)
    rows = runner.writer.query_rows(f"SELECT {columns} FROM {topic} ORDER BY qty")
    assert [tuple(r) for r in rows] == [expected_avro_table_row(i) for i in range(40)]
    store.open()
    letters = {x.key: x for x in store.pending(100)}
    assert set(letters) == set(bad)
    assert len(rows) + len(letters) == 30 + 10 + len(bad)  # counted: none lost, none doubled
    assert letters[b"unknown-id"].stage == "parse"
    assert letters[b"unknown-id"].error_class == "unknown_schema_id"
    assert letters[b"unknown-id"].error.startswith("unknown schema id 424242: ")
    assert letters[b"garbage"].error_class == "undecodable"
    assert f"schema id {good_id}" in letters[b"garbage"].error
    assert letters[b"json"].error_class == "not_wire_format"
    assert letters[b"garbage"].payload == bad[b"garbage"]  # the original bytes
    # `dlq replay` decodes dead letters with the same parser: the same reasons again
    report = Replayer(pipeline, runner.writer).run()
    assert (report.replayed, report.still_failing) == (0, len(bad))
    again = {x.key: (x.error_class, x.error) for x in store.pending(100)}
    assert again == {k: (x.error_class, x.error) for k, x in letters.items()}


def test_protobuf_rows_exact_with_a_field_added_mid_stream(
    broker, chdb_path, tmp_path, unique_name, produce_messages, schema_registry
):
    topic = unique_name
    broker.create_topic(topic, 1)
    old_cls, new_cls = proto_order_class(), proto_order_class(with_channel=True)
    old = proto_serializer(schema_registry.url, old_cls)
    names = [
        ("id", "string"), ("qty", "int"), ("price", "float"), ("paid", "bool"),
        ("created", "timestamp"), ("address.city", "string"), ("address.zip", "int"),
        ("tags", "array"), ("attrs", "map"), ("status", "string"), ("note", "string"),
        ("coupon", "string"), ("channel", "string"),
    ]  # fmt: skip
    doc = pipeline_doc(
        topic=topic,
        fields=fields(*names),
        event_time="created",
        dedup={"key": "id", "time_window": "1h"},
        mapping=mapping(
            ("id", "id", "String"),
            ("qty", "qty", "Int64"),
            ("price", "price", "Float64"),
            ("paid", "paid", "Bool"),
            ("created", "created", "DateTime64(3, 'UTC')"),
            ("address.city", "city", "String"),
            ("address.zip", "zip", "Int32"),
            ("tags", "tags", "Array(String)"),
            ("attrs", "attrs", "Map(String, String)"),
            ("status", "status", "String"),
            ("note", "note", "Nullable(String)"),
            ("coupon", "coupon", "Nullable(String)"),
            ("channel", "channel", "Nullable(String)"),
        ),  # fmt: skip
        bootstrap_servers=broker.bootstrap_servers,
        clickhouse={"path": str(chdb_path)},
        sink={"create_table": True, "order_by": ["qty"]},
        source={"format": "protobuf", "schema_registry": {"url": schema_registry.url}},
        checkpoint_dir=tmp_path / "checkpoint",
    )
    doc["source"]["schema"]["max_future_skew"] = None
    pipeline = parse_pipeline(doc)
    first = [(None, serialize(old, topic, proto_order(old_cls, i))) for i in range(20)]
    first.append((None, first[3][1]))  # a re-send: dedup drops it
    produce_messages(topic, first)
    runner = PipelineRunner(pipeline, base_dir=tmp_path)
    thread = run_live(runner, None)
    try:
        wait_for(lambda: runner.writer.count(topic) >= 20, 180, what="20 rows", ignoring=SinkError)
        new = proto_serializer(schema_registry.url, new_cls)
        produce_messages(
            topic,
            [(None, serialize(new, topic, proto_order(new_cls, i, True))) for i in range(20, 30)],
        )
        wait_for(lambda: runner.writer.count(topic) >= 30, 180, what="30 rows", ignoring=SinkError)
    finally:
        runner.stop()
        thread.join(120)
    rows = runner.writer.query_rows(
        "SELECT id, qty, price, paid, created, city, zip, tags, attrs, status, note, coupon, "
        f"channel FROM {topic} ORDER BY qty"
    )
    keys = [n for n, _ in names]
    expected = []
    for i in range(30):
        row = expected_proto_row(i, i >= 20)
        row["attrs"] = dict(row["attrs"])
        row["created"] = naive(row["created"])
        expected.append(tuple(row[k] for k in keys))
    assert [tuple(r) for r in rows] == expected
    assert runner.stats.duplicates == 1
