"""Bad messages through the real broker, Spark and chdb: each ends in the table or in the DLQ
(counted), with a reason that says what happened, and with its original message whatever the
stage, a row ClickHouse refused included (which `dlq replay` then re-parses like any other)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.replay import Replayer
from streamsift.engine.runner import PipelineRunner
from streamsift.sinks.dlq_queries import DlqQueries
from support.pipeline_docs import fields, mapping, pipeline_doc

pytestmark = pytest.mark.integration

UUID = "6f1c1e6e-8a4b-4c5e-9f1c-1e6e8a4b4c5e"


def bad_input_doc(broker, chdb_path: Path, tmp_path: Path, name: str) -> dict:
    """Events with nested users, a UUID `ref` and an int `created_at`, deduplicated."""
    return pipeline_doc(
        topic=name,
        fields=fields(
            ("event_id", "string"),
            ("user.id", "string"),
            ("user.name", "string"),
            ("user.email", "string"),
            ("ref", "string"),
            ("created_at", "int"),
        ),
        event_time="created_at",
        dedup={"key": "event_id", "time_window": "1h"},
        bootstrap_servers=broker.bootstrap_servers,
        clickhouse={"path": str(chdb_path)},
        sink={"create_table": True, "order_by": ["event_id"]},
        mapping=mapping(
            ("event_id", "event_id", "String"),
            ("user.id", "user_id", "Nullable(String)"),
            ("user.name", "user_name", "Nullable(String)"),
            ("user.email", "user_email", "Nullable(String)"),
            ("ref", "ref", "UUID"),
            ("created_at", "created_at", "Int64"),
        ),
        checkpoint_dir=tmp_path / "checkpoint",
    )


def event(i: int, **change: object) -> bytes:
    doc: dict[str, object] = {
        "event_id": f"e{i}",
        "user": {"id": f"u{i}", "name": f"n{i}", "email": f"m{i}@x"},
        "ref": UUID,
        "created_at": 1_767_225_600 + i,
    }
    for key, value in change.items():
        if value is ...:
            del doc[key]
        else:
            doc[key] = value
    return json.dumps(doc).encode()


# key -> (value, expected stage, error class, reason) for every message that must be refused
BAD: dict[bytes, tuple[bytes | None, str, str, str]] = {
    b"string-user": (
        event(100, user="just-a-string"),
        "parse",
        "type_mismatch",
        "field 'user.id': 'user' is string, expected an object",
    ),
    b"array-user": (
        event(101, user=[1, 2]),
        "parse",
        "type_mismatch",
        "field 'user.id': 'user' is array, expected an object",
    ),
    b"empty": (b"", "parse", "not_an_object", "empty message"),
    b"tombstone": (None, "parse", "not_an_object", "empty message"),
    b"null-key": (
        event(102, event_id=None),
        "parse",
        "missing_field",
        "field 'event_id' is null (needed as the dedup key)",
    ),
    b"no-key": (
        event(103, event_id=...),
        "parse",
        "missing_field",
        "field 'event_id' is missing (needed as the dedup key)",
    ),
    b"null-time": (
        event(104, created_at=None),
        "parse",
        "missing_field",
        "field 'created_at' is null (needed as the event time)",
    ),
    b"not-utf8": (
        b'{"event_id": "e105", "note": "\xff\xfe"}',
        "parse",
        "malformed_json",
        "payload is not UTF-8 (byte 0xff at position 30)",
    ),
    b"bad-uuid": (
        event(106, ref="not-a-uuid"),
        "sink",
        "clickhouse_376",
        "ClickHouse error 376: Cannot parse uuid not-a-uuid: Cannot parse UUID from String: "
        "while converting column `ref` from type String to type UUID (CANNOT_PARSE_UUID)",
    ),
}


def test_bad_messages_end_in_the_dlq_with_their_reason_and_original(
    broker, chdb_path, tmp_path, unique_name, produce_messages
):
    pipeline = parse_pipeline(bad_input_doc(broker, chdb_path, tmp_path, unique_name))
    broker.create_topic(unique_name, 2)
    good = [(f"good-{i}".encode(), event(i)) for i in range(20)]
    good.append((b"null-user", event(20, user=None)))  # a null parent: null fields, written
    bad = [(key, value) for key, (value, *_) in BAD.items()]
    produce_messages(unique_name, good + bad)

    runner = PipelineRunner(pipeline, base_dir=tmp_path)
    runner.run(until_caught_up=True)
    writer = runner.writer
    store = DlqQueries(writer, pipeline.dlq_table)
    store.open()
    letters = {x.key: x for x in store.pending(100)}

    # counted: every message is a row or a dead letter, none is both, none is lost
    rows = writer.query_rows(
        f"SELECT event_id, user_id, user_name, user_email FROM {unique_name} ORDER BY event_id"
    )
    assert len(rows) + len(letters) == len(good) + len(bad)
    assert set(letters) == set(BAD)
    assert ("e20", None, None, None) in rows
    assert {r[0] for r in rows} == {f"e{i}" for i in range(21)}

    for key, (value, stage, cls, reason) in BAD.items():
        x = letters[key]
        assert (x.stage, x.error_class, x.error) == (stage, cls, reason), key
        # the original message, byte for byte, whatever the stage
        assert x.payload == (value or b""), key
        assert x.topic == unique_name and x.offset >= 0
    # the raw message went to the DLQ, not into the table
    columns = writer.query_rows(
        f"SELECT name FROM system.columns WHERE table = '{unique_name}' ORDER BY position"
    )
    assert [c[0] for c in columns] == [m.column for m in pipeline.sink.mapping]

    # replay re-parses every dead letter from its payload: the same reasons as the pipeline's,
    # and the refused row goes in once the table takes it
    writer.command(f"ALTER TABLE {unique_name} MODIFY COLUMN ref String")
    report = Replayer(pipeline, writer).run()
    assert (report.replayed, report.still_failing) == (1, len(BAD) - 1)
    again = {x.key: x for x in store.pending(100)}
    assert set(again) == set(BAD) - {b"bad-uuid"}
    for key, x in again.items():
        assert (x.error_class, x.error) == BAD[key][2:], key
    replayed = writer.query_rows(
        f"SELECT user_id, user_name, user_email, ref FROM {unique_name} WHERE event_id = 'e106'"
    )
    assert replayed == [("u106", "n106", "m106@x", "not-a-uuid")]
