"""Dedup modes first, last and exact on one mixed stream, against a pure-Python reference.

The stream has new versions of keys, byte-identical re-sends, re-sends with the keys of the
JSON object reordered, re-sends of an older version (A, B, A), repeats beyond the window and
bad records. Each mode runs as its own pipeline over the same topic; the reference below
decides from the produced messages alone (partition and offset from the delivery reports).
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.runner import PipelineRunner
from support.pipeline_docs import fields, mapping, pipeline_doc

pytestmark = pytest.mark.integration

T0 = datetime(2026, 2, 1, tzinfo=timezone.utc)
WINDOW = timedelta(hours=1)


def make_stream(n: int = 3_000, keys: int = 150, seed: int = 11) -> list[tuple[bytes, bytes]]:
    rng = random.Random(seed)
    versions: dict[str, list[dict]] = {}
    out: list[tuple[bytes, bytes]] = []
    for i in range(n):
        key = f"k{rng.randrange(keys)}"
        history = versions.setdefault(key, [])
        roll = rng.random()
        if history and roll < 0.25:  # byte-identical re-send of the latest version
            doc = history[-1]
            out.append((key.encode(), json.dumps(doc).encode()))
        elif history and roll < 0.35:  # the same JSON with its keys in another order
            doc = history[-1]
            out.append((key.encode(), json.dumps(dict(reversed(doc.items()))).encode()))
        elif len(history) > 1 and roll < 0.45:  # an older version again (A, B, A)
            doc = rng.choice(history[:-1])
            out.append((key.encode(), json.dumps(doc).encode()))
        elif roll < 0.47:  # a bad record: the status must be text
            out.append((key.encode(), json.dumps({"id": key, "status": 5, "ts": "x"}).encode()))
        else:  # a new version; event time moves 2 s per message, so windows get passed
            doc = {
                "id": key,
                "v": len(history),
                "status": rng.choice(["new", "paid", "sent"]),
                "ts": (T0 + timedelta(seconds=2 * i)).isoformat(),
            }
            history.append(doc)
            out.append((key.encode(), json.dumps(doc).encode()))
    return out


def reference(messages, where, mode: str) -> tuple[list[dict], int]:
    """Kept records (in offset order per partition) and the number of bad ones."""
    kept: list[tuple[int, int, dict]] = []
    bad = 0
    refs: dict[tuple[int, object], tuple[datetime, str]] = {}
    order = sorted(range(len(messages)), key=lambda i: where[i])
    for i in order:
        partition, offset = where[i]
        doc = json.loads(messages[i][1])
        if not isinstance(doc.get("status"), str):
            bad += 1
            continue
        t = datetime.fromisoformat(doc["ts"])
        canonical = json.dumps(doc, sort_keys=True)
        key = canonical if mode == "exact" else doc["id"]
        ref = refs.get((partition, key))
        within = ref is not None and abs(t - ref[0]) < WINDOW
        drop = within and ref[1] == canonical if mode == "last" else within
        if drop:
            continue
        refs[(partition, key)] = (t, canonical)
        kept.append((partition, offset, doc))
    return [dict(doc, _offset=off) for _, off, doc in kept], bad


def mode_doc(broker, chdb_path, tmp_path, topic: str, mode: str) -> dict:
    """Dedup `mode` over (id, v, status, ts) records; mode last maps the offset as version."""
    columns = mapping(
        ("id", "id", "String"),
        ("v", "v", "Int64"),
        ("status", "status", "String"),
        ("ts", "ts", "DateTime64(3, 'UTC')"),
    )
    dedup: dict = {"mode": mode, "time_window": "1h"}
    if mode != "exact":
        dedup["key"] = "id"
    if mode == "last":
        columns += mapping(("_kafka.offset", "_version", "UInt64"))
    return pipeline_doc(
        topic=topic,
        fields=fields(("id", "string"), ("v", "int"), ("status", "string"), ("ts", "timestamp")),
        event_time="ts",
        dedup=dedup,
        bootstrap_servers=broker.bootstrap_servers,
        clickhouse={"path": str(chdb_path)},
        table=f"{topic}_{mode}",
        name=f"{topic}-{mode}".replace("_", "-")[:90],
        sink={"create_table": True},
        mapping=columns,
        checkpoint_dir=tmp_path / mode,
    )


def as_row(doc: dict) -> tuple:
    return (doc["id"], doc["v"], doc["status"], datetime.fromisoformat(doc["ts"]))


@pytest.fixture(scope="module")
def stream():
    return make_stream()


@pytest.mark.parametrize("mode", ["first", "exact", "last"])
def test_dedup_mode_equals_reference(
    mode, stream, broker, chdb_path, tmp_path, unique_name, produce_messages
):
    broker.create_topic(unique_name, 3)
    where = produce_messages(unique_name, stream)
    expected, bad = reference(stream, where, mode)
    pipeline = parse_pipeline(mode_doc(broker, chdb_path, tmp_path, unique_name, mode))
    runner = PipelineRunner(pipeline)
    result = runner.run(until_caught_up=True)

    table = pipeline.sink.table
    assert result.stats["written"] == len(expected)
    assert runner.writer.count(pipeline.dlq_table) == bad > 0
    if mode == "last":
        engine = runner.writer.query_rows(
            f"SELECT engine_full FROM system.tables WHERE name = '{table}'"
        )[0][0]
        assert engine.startswith("ReplacingMergeTree(_version)")
        final = runner.writer.query_rows(f"SELECT id, v, status, ts, _version FROM {table} FINAL")
        latest: dict[str, dict] = {}
        for doc in expected:  # the latest kept version of each key wins
            if doc["id"] not in latest or doc["_offset"] > latest[doc["id"]]["_offset"]:
                latest[doc["id"]] = doc
        got = sorted((r[0], r[1], r[2], r[3].replace(tzinfo=timezone.utc), r[4]) for r in final)
        want = sorted((*as_row(d), d["_offset"]) for d in latest.values())
        assert got == want
        # A re-sent older version (A, B, A) is a new version here, so some winners are old.
        assert any(
            d["v"] < max(e["v"] for e in expected if e["id"] == d["id"]) for d in latest.values()
        )
    else:
        rows = runner.writer.query_rows(f"SELECT id, v, status, ts FROM {table}")
        got = sorted((r[0], r[1], r[2], r[3].replace(tzinfo=timezone.utc)) for r in rows)
        assert got == sorted(as_row(d) for d in expected)


def test_reference_modes_differ(stream):
    """The stream exercises what tells the modes apart (else the tests above prove little)."""
    where = [(0, i) for i in range(len(stream))]  # one partition, produce order
    first, bad = reference(stream, where, "first")
    exact, _ = reference(stream, where, "exact")
    last, _ = reference(stream, where, "last")
    assert bad > 0
    assert len(first) < len(exact) < len(last) < len(stream) - bad
