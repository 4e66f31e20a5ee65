"""Schema drift on the real broker, Spark and chdb: `sink.on_new_fields: add_columns` adds a
Nullable column per new field (ALTER said in the log) and maps it from then on, exactly once
across a crash between the ALTER and the insert and across restarts; `dlq` sends such
messages to the DLQ with the fields named. Every message is counted."""

from __future__ import annotations

import json
import logging

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.errors import UnexplainedFailure
from streamsift.engine.new_columns import ADDED_COLUMNS_FILE
from streamsift.engine.runner import PipelineRunner
from streamsift.sinks.dlq_queries import DlqQueries
from support.pipeline_docs import fields, mapping, pipeline_doc

pytestmark = pytest.mark.integration


def drift_pipeline(broker, chdb_path, tmp_path, name: str, mode: str):
    return parse_pipeline(
        pipeline_doc(
            topic=name,
            fields=fields(("id", "string"), ("n", "int")),
            mapping=mapping(("id", "id", "String"), ("n", "n", "Int64")),
            dedup={"key": "id", "time_window": "1h"},
            bootstrap_servers=broker.bootstrap_servers,
            clickhouse={"path": str(chdb_path)},
            sink={"create_table": True, "order_by": ["id"], "on_new_fields": mode},
            checkpoint_dir=tmp_path / "checkpoint",
        )
    )


def msg(i: int, **extra: object) -> tuple[bytes, bytes]:
    return f"k{i}".encode(), json.dumps({"id": f"a{i}", "n": i, **extra}).encode()


def letters(runner: PipelineRunner, table: str) -> list:
    store = DlqQueries(runner.writer, table)
    store.open()
    return store.pending(100)


def test_new_fields_become_columns_exactly_once_across_a_crash_and_restarts(
    broker, chdb_path, tmp_path, unique_name, produce_messages, caplog
):
    pipeline = drift_pipeline(broker, chdb_path, tmp_path, unique_name, "add_columns")
    broker.create_topic(unique_name, 1)
    first = [
        *(msg(i) for i in range(4)),
        msg(5, color="red", size=3, meta={"score": 1.5}, tags=["x", "y"]),
        msg(6, color="blue"),
        msg(5, color="red-again"),  # a re-send of a5: dedup drops it, new fields or not
        msg(7, color=7),  # color is a string column by now: this one does not fit
    ]
    produce_messages(unique_name, first)

    # run 1 crashes right after the ALTERs, before anything is inserted
    crashed = PipelineRunner(pipeline, base_dir=tmp_path)
    assert crashed.drift is not None

    def crash() -> None:
        raise RuntimeError("crash between ALTER and insert")

    crashed.drift.after_alter = crash
    caplog.set_level(logging.WARNING, logger="streamsift.engine")
    with pytest.raises(UnexplainedFailure):  # an error streamsift does not know
        crashed.run(until_caught_up=True)
    writer = crashed.writer
    assert writer.count(unique_name) == 0
    assert f"ALTER TABLE `default`.`{unique_name}` ADD COLUMN IF NOT EXISTS `color`" in caplog.text
    added = json.loads((tmp_path / "checkpoint" / ADDED_COLUMNS_FILE).read_text())["columns"]
    assert [(c["field"], c["column_type"], c["batch"]) for c in added] == [
        ("color", "Nullable(String)", 0),  # in the order first seen
        ("size", "Nullable(Int64)", 0),
        ("meta.score", "Nullable(Float64)", 0),
        ("tags", "Array(Nullable(String))", 0),
    ]

    # run 2 re-runs the batch: same columns, every row once
    runner = PipelineRunner(pipeline, base_dir=tmp_path)
    runner.run(until_caught_up=True)
    rows = runner.writer.query_rows(
        f"SELECT id, n, color, size, meta_score, tags FROM {unique_name} ORDER BY id"
    )
    assert rows == [
        *((f"a{i}", i, None, None, None, []) for i in range(4)),
        ("a5", 5, "red", 3, 1.5, ["x", "y"]),
        ("a6", 6, "blue", None, None, []),
    ]
    dead = letters(runner, pipeline.dlq_table)
    assert [(x.key, x.error_class, x.error) for x in dead] == [
        (b"k7", "type_mismatch", "field 'color': expected string, got number")
    ]
    assert len(rows) + len(dead) + 1 == len(first)  # + the dropped re-send
    types = dict(
        runner.writer.query_rows(
            f"SELECT name, type FROM system.columns WHERE table = '{unique_name}'"
        )
    )
    assert types["color"] == "Nullable(String)" and types["tags"] == "Array(Nullable(String))"

    # a restart maps the added fields like listed ones, and adds the next new field
    second = [msg(8, color="green", flag=True), msg(9)]
    produce_messages(unique_name, second)
    restarted = PipelineRunner(pipeline, base_dir=tmp_path)
    assert [m.column for m in restarted.pipeline.sink.mapping][-4:] == [
        "color",
        "size",
        "meta_score",
        "tags",
    ]
    restarted.run(until_caught_up=True)
    rows = restarted.writer.query_rows(
        f"SELECT id, color, flag FROM {unique_name} WHERE id IN ('a8', 'a9') ORDER BY id"
    )
    assert rows == [("a8", "green", True), ("a9", None, None)]
    assert restarted.writer.count(unique_name) == 8
    assert len(letters(restarted, pipeline.dlq_table)) == 1


def test_new_fields_go_to_the_dlq_naming_them(
    broker, chdb_path, tmp_path, unique_name, produce_messages
):
    pipeline = drift_pipeline(broker, chdb_path, tmp_path, unique_name, "dlq")
    broker.create_topic(unique_name, 1)
    produce_messages(unique_name, [msg(1), msg(2, color="red", geo={"lat": 1.5}), msg(3)])
    runner = PipelineRunner(pipeline, base_dir=tmp_path)
    runner.run(until_caught_up=True)
    assert runner.writer.count(unique_name) == 2
    dead = letters(runner, pipeline.dlq_table)
    assert [(x.key, x.stage, x.error_class, x.error) for x in dead] == [
        (b"k2", "parse", "new_fields", "fields not in the schema: color (string), geo.lat (float)")
    ]
    assert dead[0].payload == msg(2, color="red", geo={"lat": 1.5})[1]


def test_new_fields_become_columns_when_executors_insert_into_a_server(
    broker, chdb_path, tmp_path, unique_name, produce_messages
):
    """With a ClickHouse server the executors insert: the driver adds the columns first and
    hands them the extended mapping (the chdb-backed HTTP endpoint stands for the server)."""
    from streamsift.embedded.clickhouse_server import ClickHouseHTTPServer

    with ClickHouseHTTPServer(chdb_path) as server:
        doc = pipeline_doc(
            topic=unique_name,
            fields=fields(("id", "string"), ("n", "int")),
            mapping=mapping(("id", "id", "String"), ("n", "n", "Int64")),
            bootstrap_servers=broker.bootstrap_servers,
            clickhouse={"host": "127.0.0.1", "port": server.port},
            sink={"create_table": True, "order_by": ["id"], "on_new_fields": "add_columns"},
            checkpoint_dir=tmp_path / "checkpoint",
        )
        pipeline = parse_pipeline(doc)
        broker.create_topic(unique_name, 2)
        produce_messages(unique_name, [msg(1), msg(2, color="red"), msg(3, size=[1, 2])])
        runner = PipelineRunner(pipeline, base_dir=tmp_path)
        assert not runner.driver_inserts
        runner.run(until_caught_up=True)
        rows = runner.writer.query_rows(f"SELECT id, color, size FROM {unique_name} ORDER BY id")
        assert rows == [("a1", None, []), ("a2", "red", []), ("a3", None, [1, 2])]
        assert letters(runner, pipeline.dlq_table) == []
