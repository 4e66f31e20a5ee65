"""Secrets from the pipeline file (Kafka SASL password, ClickHouse password) reach the clients
that need them and nothing else: not reprs, not error messages, not dead-letter rows.
(Logs of real runs and of `streamsift dlq` are checked in tests/integration/test_dlq_tooling.py.)
"""

from __future__ import annotations

import threading
import traceback
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from streamsift.config import parse_pipeline
from streamsift.config.rows import OUTPUT_COLUMNS
from streamsift.embedded.broker import free_port
from streamsift.engine.batch_writer import BatchWriter
from streamsift.engine.query import read_spec
from streamsift.sinks.clickhouse import ClickHouseWriter
from streamsift.sinks.clickhouse.client import RowFailure
from streamsift.sinks.dlq import DLQ_COLUMNS
from streamsift.sinks.errors import SinkError
from streamsift.sinks.retry import RetryPolicy
from streamsift.sources.fetch import Message
from support.pipeline_docs import fields, mapping, pipeline_doc

SASL_SECRET = "sasl-Secret-7Hq2"
CH_SECRET = "ch-Secret-9Wd4"
FAST_RETRY = RetryPolicy(initial_s=0.01, max_s=0.01, give_up_after_s=0.2)


def pipeline(clickhouse: dict[str, Any] | None = None):
    return parse_pipeline(
        pipeline_doc(
            name="secretive",
            bootstrap_servers="kafka.example:9092",
            topic="events",
            source={
                "security": {
                    "protocol": "SASL_SSL",
                    "mechanism": "SCRAM-SHA-512",
                    "username": "svc",
                    "password": SASL_SECRET,
                }
            },
            fields=fields(("event_id", "string"), ("amount", "float")),
            clickhouse=clickhouse or {"path": "/tmp/unused", "password": CH_SECRET},
            mapping=mapping(("event_id", "event_id", "String"), ("amount", "amount", "Float64")),
        )
    )


def assert_clean(*texts: str) -> None:
    for text in texts:
        assert SASL_SECRET not in text and CH_SECRET not in text


def test_pipeline_repr_str_and_dump_hide_secrets():
    p = pipeline()
    assert p.primary_source.security.password.get_secret_value() == SASL_SECRET
    assert p.sink.clickhouse.password.get_secret_value() == CH_SECRET
    assert_clean(repr(p), str(p), p.model_dump_json(), repr(p.model_dump()))


def test_kafka_read_spec_hands_the_secret_to_librdkafka_only():
    spec = read_spec(p := pipeline(), p.primary_source)
    assert spec.consumer_config()["sasl.password"] == SASL_SECRET
    assert_clean(repr(spec), str(spec), f"{spec}", f"{spec!r}")
    assert "events" in repr(spec)


def test_connection_error_to_a_wrong_host_does_not_show_the_password():
    port = free_port()  # nothing listens there
    conn = {"host": "127.0.0.1", "port": port, "password": CH_SECRET}
    writer = ClickHouseWriter(pipeline(conn).sink.clickhouse, retry=FAST_RETRY)
    with pytest.raises(SinkError) as failed:
        writer.command("SELECT 1")
    assert f"127.0.0.1:{port}" in str(failed.value)
    assert_clean(
        str(failed.value), repr(failed.value), "".join(traceback.format_exception(failed.value))
    )
    assert_clean(repr(writer))


def test_authentication_failure_does_not_show_the_password():
    """A server that refuses the credentials: the password was sent, and is not echoed."""
    seen: list[str] = []

    class Refuse(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(str(self.headers))
            body = (
                b"Code: 516. DB::Exception: svc: Authentication failed: password is incorrect, "
                b"or there is no user with such name. (AUTHENTICATION_FAILED)"
            )
            self.send_response(401)
            self.send_header("X-ClickHouse-Exception-Code", "516")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST

        def log_message(self, *args: object) -> None:
            pass

    server = HTTPServer(("127.0.0.1", 0), Refuse)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        conn = {"host": "127.0.0.1", "port": server.server_port, "password": CH_SECRET}
        writer = ClickHouseWriter(pipeline(conn).sink.clickhouse, retry=FAST_RETRY)
        with pytest.raises(SinkError) as failed:
            writer.command("SELECT 1")
    finally:
        server.shutdown()
        server.server_close()
    assert seen, "the client never reached the server"
    assert any(_sent_password(h) == CH_SECRET for h in seen)
    assert "516" in str(failed.value) or "Authentication" in str(failed.value)
    assert_clean(str(failed.value), "".join(traceback.format_exception(failed.value)))


def _sent_password(headers: str) -> str | None:
    """The password a request carried (clickhouse-connect sends basic auth or X-ClickHouse-Key)."""
    import base64

    for line in headers.splitlines():
        name, _, value = line.partition(":")
        if name.lower() == "x-clickhouse-key":
            return value.strip()
        if name.lower() == "authorization" and value.strip().startswith("Basic "):
            return base64.b64decode(value.strip()[6:]).decode().partition(":")[2]
    return None


class CapturingWriter:
    """Stands in for ClickHouseWriter: keeps what would be inserted; refuses row 0 of a chunk."""

    def __init__(self) -> None:
        self.inserted: dict[str, list[pa.Table]] = {}

    def insert(self, table: str, data: pa.Table, token: str) -> None:
        self.inserted.setdefault(table, []).append(data)

    def insert_isolating(self, table: str, data: pa.Table, token: str) -> list[RowFailure]:
        self.insert(table, data.slice(1), token)
        return [RowFailure(0, 469, "Code: 469. Constraint `positive` violated")]


def test_dead_letter_rows_hold_record_data_and_no_configuration():
    p = pipeline()
    capture = CapturingWriter()
    raw = [
        b'{"event_id": "a", "amount": 1.5}',
        b"{broken",
        b'{"event_id": 5}',
        b'{"event_id": "b"}',
    ]
    errors = [
        None,
        "malformed JSON: Expecting value at position 1",
        "field 'event_id': expected string, got number",
        None,
    ]
    n = len(raw)
    meta = {  # the output frame's metadata columns (config/rows.py OUTPUT_COLUMNS)
        "_topic": pa.array(["events"] * n),
        "_partition": pa.array([0] * n, pa.int32()),
        "_offset": pa.array(range(n), pa.int64()),
        "_kafka_ts": pa.array([0] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "_late": pa.array([False] * n),
        "_key": pa.array([b"k"] * n, pa.binary()),
        "_raw": pa.array(
            [None if e is None else r for r, e in zip(raw, errors, strict=True)], pa.binary()
        ),
        "_error": pa.array(errors, pa.string()),
        "_stage": pa.array([None if e is None else "parse" for e in errors], pa.string()),
        "_source": pa.array(["events"] * n),
        "_rpartition": pa.array([-1] * n, pa.int32()),
        "_roffset": pa.array([-1] * n, pa.int64()),
    }
    assert {c.name for c in OUTPUT_COLUMNS} <= set(meta), (
        "a new metadata column: give it a value here"
    )
    frame = pa.table(
        {
            "event_id": pa.array(["a", None, None, "b"]),
            "amount": pa.array([1.5, None, None, 2.0]),
            **{c.name: meta[c.name] for c in OUTPUT_COLUMNS},
        }
    )

    def kafka(_pipeline, positions):  # the refused row's message, as Kafka holds it
        return {(t, p, o): Message(b"k", raw[o], 0) for t, p, o in positions}

    batch_writer = BatchWriter(p, capture, read_originals=kafka)  # type: ignore[arg-type]
    counts = batch_writer.write(frame, "q", 0, "driver")
    assert (counts.written, counts.dlq) == (1, 3)  # two parse failures, one refused row
    dlq = pa.concat_tables(capture.inserted[p.dlq_table])
    assert dlq.column_names == [name for name, _ in DLQ_COLUMNS]
    assert sorted(dlq.column("stage").to_pylist()) == ["parse", "parse", "sink"]
    sink_letter = dlq.filter(pc.equal(dlq.column("stage"), "sink")).to_pylist()[0]
    assert (sink_letter["key"], sink_letter["payload"]) == (b"k", raw[0])
    values = [v for col in dlq.columns for v in col.to_pylist()]
    text = " ".join(v.decode(errors="replace") if isinstance(v, bytes) else str(v) for v in values)
    assert "svc" not in text and "kafka.example" not in text and "/tmp/unused" not in text
    assert_clean(text)
