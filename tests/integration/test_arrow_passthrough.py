"""The Arrow pass-through and the row path write the same rows, dead letters and counts.

One topic, read by two pipelines that differ only in their data path (the row path forced
by STREAMSIFT_ARROW_PASSTHROUGH=0): duplicates, late events, malformed JSON, a missing
dedup key and a row the table refuses (a CHECK constraint: a dead letter read back from Kafka).
"""

from __future__ import annotations

import json
import random
import re
from datetime import datetime, timedelta, timezone

import pytest

from pipeline_docs import event_doc
from streamsift.config import parse_pipeline
from streamsift.loadtest.schema import EVENT_MAPPING
from streamsift.runtime.arrow_passthrough import PASSTHROUGH_ENV
from streamsift.runtime.pipeline import PipelineRunner

pytestmark = pytest.mark.integration

T0 = datetime(2026, 1, 1, tzinfo=timezone.utc)
COUNTED = ("read", "rows_in", "duplicates", "written", "dlq", "late", "dlq_by_class")


def messages() -> list[tuple[bytes | None, bytes]]:
    rng = random.Random(5)
    events = []
    for i in range(300):
        events.append(
            {
                "event_id": f"e{i % 240:04d}",  # 60 re-sends
                "type": rng.choice(["view", "click"]),
                "user": {"id": f"u{i % 7}", "name": f"user {i % 7}"},
                "tags": ["a"] if i % 2 else [],
                "amount": -1.0 if i == 17 else i / 4,  # refused by the table
                "attempt": i // 240,
                "created_at": (T0 + timedelta(seconds=i)).isoformat(),
            }
        )
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
        runtime={"max_rows_per_batch": 100},  # a few batches: the late event is behind
    )
    runner = PipelineRunner(parse_pipeline(doc))
    columns = ", ".join(f"`{m['column']}` {m['type']}" for m in EVENT_MAPPING)
    runner.writer.command(
        f"CREATE TABLE {table} ({columns}, CONSTRAINT positive CHECK amount >= 0) "
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
