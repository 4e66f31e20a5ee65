"""The Arrow pass-through and the row path write the same rows, dead letters and counts.

One topic, read by two pipelines that differ only in their data path (the row path forced
by STREAMSIFT_ARROW_PASSTHROUGH=0): duplicates, late events, malformed JSON, a missing
dedup key and a row the table refuses (a CHECK constraint: a dead letter read back from Kafka).
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.arrow_passthrough import PASSTHROUGH_ENV
from streamsift.engine.runner import PipelineRunner
from streamsift.sample_data.schema import EVENT_MAPPING
from support.pipeline_docs import event_doc

pytestmark = pytest.mark.integration

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
COUNTED = ("read", "rows_in", "duplicates", "written", "dlq", "late", "dlq_by_class")


def event(i: int, key: str, amount: float) -> dict:
    return {
        "event_id": key,
        "type": "view" if i % 3 else "click",
        "user": {"id": f"u{i % 7}", "name": f"user {i % 7}"},
        "tags": ["a"] if i % 2 else [],
        "amount": amount,
        "attempt": i // 240,
        "created_at": (T0 + timedelta(seconds=i)).isoformat(),
    }


def messages() -> list[tuple[bytes | None, bytes]]:
    # e0000..e0239, then 60 re-sends of e0000..e0059; e0017's amount the table refuses
    events = [event(i, f"e{i % 240:04d}", -1.0 if i == 17 else i / 4) for i in range(300)]
    late = dict(events[5], event_id="late-1", created_at=(T0 - timedelta(hours=3)).isoformat())
    out = [(e["event_id"].encode(), json.dumps(e).encode()) for e in [*events, late]]
    out += [(b"bad", b"{not json"), (None, json.dumps({"type": "view"}).encode())]
    return out


def run(broker, chdb_path, tmp_path, topic: str, table: str, monkeypatch, path: str):
    monkeypatch.setenv(PASSTHROUGH_ENV, "1" if path == "arrow" else "0")
    doc = event_doc(
        bootstrap_servers=broker.bootstrap_servers,
        topic=topic,
        table=table,
        clickhouse={"path": str(chdb_path)},
        checkpoint_dir=tmp_path / table,
        sink={"order_by": ["event_id"]},
        runtime={"max_rows_per_batch": 200},  # two batches: the late event is behind
    )
    runner = PipelineRunner(parse_pipeline(doc))
    columns = ", ".join(f"`{m['column']}` {m['type']}" for m in EVENT_MAPPING)
    runner.writer.command(
        f"CREATE TABLE IF NOT EXISTS {table} ({columns}, CONSTRAINT positive CHECK amount >= 0) "
        "ENGINE = MergeTree ORDER BY event_id SETTINGS non_replicated_deduplication_window = 100"
    )
    result = runner.run(until_caught_up=True)
    assert runner.data_path == path
    rows = runner.writer.query_rows(f"SELECT * FROM {table} ORDER BY event_id, attempt")
    dead = runner.writer.query_rows(
        "SELECT source, topic, partition, offset, kafka_timestamp, key, payload, stage, "
        f"error_class, error FROM {table}_dlq ORDER BY partition, offset"
    )
    # ClickHouse's message names the table (and its uuid): the one thing that differs
    dead = [(*d[:9], re.sub(r"table \S+ \(\S+\)", "table", d[9])) for d in dead]
    return rows, dead, {k: result.stats[k] for k in COUNTED}


def test_both_data_paths_write_the_same_rows_and_dead_letters(
    broker, chdb_path, tmp_path, unique_name, produce_messages, monkeypatch
):
    broker.create_topic(unique_name, 2)
    produce_messages(unique_name, messages())
    args = (broker, chdb_path, tmp_path, unique_name)
    rows_a, dead_a, stats_a = run(*args, f"{unique_name}_r", monkeypatch, "rows")
    rows_b, dead_b, stats_b = run(*args, f"{unique_name}_a", monkeypatch, "arrow")

    assert len(rows_b) == 240 - 1 + 1  # unique keys, less the refused one, plus the late one
    assert rows_b == rows_a
    assert dead_b == dead_a
    assert sorted((d[7], d[8]) for d in dead_b) == [
        ("parse", "malformed_json"),
        ("parse", "missing_field"),
        ("sink", "clickhouse_469"),
    ]
    refused = next(d for d in dead_b if d[7] == "sink")
    assert json.loads(refused[6])["amount"] == -1.0  # the original message, read back
    assert stats_b == stats_a
    assert (stats_b["read"], stats_b["duplicates"], stats_b["late"]) == (303, 60, 1)

    # A checkpoint of the row path carries on with the Arrow pass-through (an upgrade): the
    # dedup state holds, nothing is read twice.
    more = [event(100 + i, f"e{100 + i:04d}", 1.0) for i in range(10)]  # re-sends
    more += [event(300 + i, f"n{i}", 1.0) for i in range(10)]  # new keys
    produce_messages(unique_name, [(e["event_id"].encode(), json.dumps(e).encode()) for e in more])
    rows_c, dead_c, stats_c = run(*args, f"{unique_name}_r", monkeypatch, "arrow")
    assert len(rows_c) == len(rows_a) + 10
    assert [r for r in rows_c if not r[0].startswith("n")] == rows_a
    assert dead_c == dead_a
    assert (stats_c["read"], stats_c["duplicates"], stats_c["written"]) == (20, 10, 10)
