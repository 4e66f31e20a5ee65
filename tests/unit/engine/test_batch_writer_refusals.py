"""BatchWriter with rows that cannot go in: a value its column cannot take (left out before
the insert) and a row ClickHouse refuses (isolated by the insert). Each becomes its own dead
letter at its own Kafka position, and every other row lands in the table (embedded chdb)."""

from __future__ import annotations

import pyarrow as pa

from streamsift.config import parse_pipeline
from streamsift.config.rows import OUTPUT_COLUMNS
from streamsift.engine.batch_writer import BatchWriter
from streamsift.engine.sink_tables import prepare_tables
from streamsift.sinks.clickhouse import ClickHouseWriter
from streamsift.sources.fetch import Message
from support.pipeline_docs import fields, mapping, pipeline_doc

T = "2024-01-02T03:04:05Z"


def test_unfit_and_refused_rows_become_dead_letters_at_their_offsets(chdb_path, unique_name):
    p = parse_pipeline(
        pipeline_doc(
            fields=fields(("event_id", "string"), ("at", "string"), ("amount", "float")),
            mapping=mapping(
                ("event_id", "event_id", "String"),
                ("at", "at", "DateTime64(3, 'UTC')"),  # ISO text, converted value by value
                ("amount", "amount", "Float64"),
            ),
            clickhouse={"path": str(chdb_path)},
            table=unique_name,
        )
    )
    writer = ClickHouseWriter(p.sink.clickhouse)
    writer.command(
        f"CREATE TABLE {unique_name} (event_id String, at DateTime64(3, 'UTC'), amount Float64, "
        "CONSTRAINT positive CHECK amount > 0) ENGINE = MergeTree ORDER BY event_id"
    )
    prepare_tables(p, writer)  # the DLQ table
    n = 5
    columns = {
        "event_id": pa.array(["a", "b", "c", "d", "e"]),
        "at": pa.array([T, "not a time", T, T, T]),  # b: does not fit its column
        "amount": pa.array([1.0, 2.0, -3.0, 4.0, 5.0]),  # c: refused by the constraint
        "_topic": pa.array(["events"] * n),
        "_partition": pa.array([0] * n, pa.int32()),
        "_offset": pa.array([14, 10, 12, 11, 13], pa.int64()),  # the writer sorts by position
        "_kafka_ts": pa.array([0] * n, pa.int64()).cast(pa.timestamp("us", tz="UTC")),
        "_late": pa.array([False] * n),
        "_key": pa.nulls(n, pa.binary()),
        "_raw": pa.nulls(n, pa.binary()),
        "_error": pa.nulls(n, pa.string()),
        "_stage": pa.nulls(n, pa.string()),
        "_source": pa.array(["events"] * n),
        "_rpartition": pa.array([-1] * n, pa.int32()),
        "_roffset": pa.array([-1] * n, pa.int64()),
    }
    assert {c.name for c in OUTPUT_COLUMNS} <= set(columns)
    frame = pa.table(
        {name: columns[name] for name in ["event_id", "at", "amount"]}
        | {c.name: columns[c.name] for c in OUTPUT_COLUMNS}
    )

    def kafka(_pipeline, positions):  # the refused rows' messages, as Kafka holds them
        return {(t, q, o): Message(b"k", f"payload {o}".encode(), 0) for t, q, o in positions}

    counts = BatchWriter(p, writer, read_originals=kafka).write(frame, "q", 0, "driver")
    assert (counts.written, counts.dlq) == (3, 2)
    rows = writer.query_rows(f"SELECT event_id FROM {unique_name} ORDER BY event_id")
    assert [r[0] for r in rows] == ["a", "d", "e"]
    dead = writer.query_rows(
        f"SELECT offset, error_class, payload FROM {p.dlq_table} "
        f"WHERE pipeline = '{p.name}' ORDER BY offset"
    )
    assert [(o, c) for o, c, _ in dead] == [(10, "type_mismatch"), (12, "clickhouse_469")]
    assert dead[1][2] in (b"payload 12", "payload 12")  # read back by its own position
