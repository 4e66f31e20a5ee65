"""The core pipeline end to end on the real broker, real Spark and real chdb.

Every test counts: what was produced, what the generator says must arrive, what ClickHouse
holds, what the DLQ holds.
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone

import pytest
from confluent_kafka import Producer

from streamsift.engine.runner import PipelineRunner
from streamsift.sample_data.generator import BASE_TIME, EventSpec, Truth, generate, produce
from support.pipeline_docs import event

pytestmark = pytest.mark.integration


def table_rows(runner: PipelineRunner, table: str) -> dict[str, dict]:
    rows = runner.writer.query_rows(
        f"SELECT event_id, user_id, user_name, amount, attempt, tags, created_at FROM {table}"
    )
    return {
        r[0]: {
            "user_id": r[1],
            "user_name": r[2],
            "amount": r[3],
            "attempt": r[4],
            "tags": list(r[5]),
            "created_at": r[6].replace(tzinfo=None),
        }
        for r in rows
    }


def expected_rows(truth: Truth) -> dict[str, dict]:
    return {
        eid: {
            "user_id": e["user"]["id"],
            "user_name": e["user"]["name"],
            "amount": e["amount"],
            "attempt": 0,
            "tags": e["tags"],
            "created_at": datetime.fromisoformat(e["created_at"]).replace(tzinfo=None),  # UTC
        }
        for eid, e in truth.first_versions.items()
    }


def test_dedup_keeps_exactly_the_first_version_of_each_key(broker, event_pipeline, unique_name):
    """Acceptance a: 50,000 events, 30% duplicates over 5,000 keys, nested fields."""
    broker.create_topic(unique_name, 3)
    truth = Truth()
    produce(
        broker.bootstrap_servers,
        unique_name,
        generate(EventSpec(50_000, 0.3, 5_000, seed=1), truth),
    )
    assert truth.duplicates == 15_000

    runner = PipelineRunner(event_pipeline())
    result = runner.run(until_caught_up=True)

    assert runner.writer.count(unique_name) == truth.expected_unique == 35_000
    got = table_rows(runner, unique_name)
    assert len(got) == 35_000  # no key twice
    assert got == expected_rows(truth)  # every row is the first-produced version
    assert runner.writer.count(f"{unique_name}_dlq") == 0
    assert result.stats["read"] == 50_000
    assert result.stats["duplicates"] == 15_000
    assert result.stats["written"] == 35_000


def test_restart_resumes_without_loss_or_duplicates(broker, event_pipeline, unique_name):
    """Acceptance b: run, stop, produce new keys and re-sends of old ones, run again."""
    broker.create_topic(unique_name, 3)
    truth = Truth()
    produce(
        broker.bootstrap_servers, unique_name, generate(EventSpec(6_000, 0.2, 500, seed=2), truth)
    )
    pipeline = event_pipeline(max_rows_per_batch=2_500)  # several batches per run
    first = PipelineRunner(pipeline).run(until_caught_up=True)
    assert first.stats["written"] == truth.expected_unique

    # Second wave: fresh events (their own duplicates included) and re-sends of wave-one events.
    wave_two = Truth()
    fresh = list(generate(EventSpec(3_000, 0.1, 100, seed=3), wave_two))
    rng = random.Random(4)
    resends = [dict(e, attempt=9) for e in rng.sample(list(truth.first_versions.values()), 1_000)]
    mixed = fresh + resends
    rng.shuffle(mixed)  # per key, order is kept by partition; re-sends come after originals anyway
    produce(broker.bootstrap_servers, unique_name, _keep_first_before_dupes(mixed))

    runner = PipelineRunner(pipeline)
    second = runner.run(until_caught_up=True)

    expected = {**expected_rows(truth), **expected_rows(wave_two)}
    assert table_rows(runner, unique_name) == expected
    assert runner.writer.count(unique_name) == len(expected)
    assert second.stats["read"] == 4_000
    assert second.stats["written"] == wave_two.expected_unique


def _keep_first_before_dupes(events: list[dict]) -> list[dict]:
    """Reorder so that for each id the attempt-0 version precedes its re-sends."""
    firsts = [e for e in events if e["attempt"] == 0]
    seen: set[str] = set()
    out = []
    for e in firsts:
        if e["event_id"] not in seen:
            seen.add(e["event_id"])
            out.append(e)
    return out + [e for e in events if e not in out]


@pytest.mark.parametrize("split_runs", [False, True], ids=["one-batch", "across-restart"])
def test_window_edges(broker, event_pipeline, unique_name, split_runs):
    """Acceptance c: a repeat inside the window is dropped, one at or beyond it is kept."""
    broker.create_topic(unique_name, 3)
    window = timedelta(hours=1)
    t0 = BASE_TIME
    originals = [event(k, t0) for k in ("inside", "at-edge", "beyond")]
    repeats = [
        event("inside", t0 + window - timedelta(milliseconds=1), 1),  # dropped
        event("at-edge", t0 + window, 1),  # kept: not strictly within the window
        event("beyond", t0 + window + timedelta(seconds=1), 1),  # kept
        event(
            "beyond", t0 + window + timedelta(seconds=2), 2
        ),  # dropped: within window of the kept repeat
    ]
    pipeline = event_pipeline(window="1h")
    produce(broker.bootstrap_servers, unique_name, originals)
    if split_runs:
        PipelineRunner(pipeline).run(until_caught_up=True)
    produce(broker.bootstrap_servers, unique_name, repeats)
    runner = PipelineRunner(pipeline)
    runner.run(until_caught_up=True)

    rows = runner.writer.query_rows(
        f"SELECT event_id, attempt FROM {unique_name} ORDER BY event_id, attempt"
    )
    assert rows == [("at-edge", 0), ("at-edge", 1), ("beyond", 0), ("beyond", 1), ("inside", 0)]


def test_bad_records_go_to_the_dlq_with_their_offsets(broker, event_pipeline, unique_name):
    """Acceptance d: 100 malformed or wrongly typed messages among 10,000 good ones."""
    broker.create_topic(unique_name, 3)
    truth = Truth()
    good = list(generate(EventSpec(10_000, 0.0, seed=5), truth))
    rng = random.Random(6)
    bad_payloads = []
    for i in range(100):
        kind = i % 5
        if kind == 0:
            bad_payloads.append(
                b'{"event_id": "x' + str(i).encode() + b'", "amount": '
            )  # truncated
        elif kind == 1:
            bad_payloads.append(
                json.dumps(dict(good[i], amount="12.5")).encode()
            )  # string for float
        elif kind == 2:
            bad_payloads.append(
                json.dumps(dict(good[i], event_id=None, attempt=0)).encode()
            )  # no key
        elif kind == 3:
            bad_payloads.append(json.dumps([1, 2, 3]).encode())  # not an object
        else:
            bad_payloads.append(
                json.dumps(dict(good[i], created_at="yesterday")).encode()
            )  # bad time
    messages = [(e["event_id"].encode(), json.dumps(e).encode()) for e in good]
    for payload in bad_payloads:
        messages.insert(rng.randrange(len(messages)), (b"bad", payload))

    bad_offsets: set[tuple[int, int]] = set()
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 10})

    def delivered(err, msg):
        assert err is None
        if msg.key() == b"bad":
            bad_offsets.add((msg.partition(), msg.offset()))

    for key, value in messages:
        producer.produce(unique_name, key=key, value=value, on_delivery=delivered)
        producer.poll(0)
    producer.flush(30)
    assert len(bad_offsets) == 100

    runner = PipelineRunner(event_pipeline())
    result = runner.run(until_caught_up=True)

    assert runner.writer.count(unique_name) == 10_000
    assert table_rows(runner, unique_name) == expected_rows(truth)
    dlq = runner.writer.query_rows(
        f"SELECT partition, offset, payload, stage, error_class, error FROM {unique_name}_dlq"
    )
    assert len(dlq) == 100
    assert {(p, o) for p, o, *_ in dlq} == bad_offsets
    assert {
        payload.encode() if isinstance(payload, str) else payload for _, _, payload, *_ in dlq
    } == set(bad_payloads)
    classes = {c for *_, c, _ in dlq}
    assert classes == {"malformed_json", "type_mismatch", "missing_field", "not_an_object"}
    assert all(err for *_, err in dlq)
    assert result.stats["dlq"] == 100 and result.stats["written"] == 10_000


def test_late_events_are_kept_and_counted(broker, event_pipeline, unique_name):
    """An event more than a window older than the newest of its partition is kept, not dropped."""
    broker.create_topic(unique_name, 1)
    t0 = datetime(2026, 3, 1, tzinfo=timezone.utc)
    pipeline = event_pipeline(window="10m")
    produce(
        broker.bootstrap_servers,
        unique_name,
        [event("a", t0), event("b", t0 + timedelta(hours=1))],
    )
    PipelineRunner(pipeline).run(until_caught_up=True)
    produce(
        broker.bootstrap_servers,
        unique_name,
        [event("a", t0, 1), event("c", t0 + timedelta(minutes=55))],
    )
    runner = PipelineRunner(pipeline)
    result = runner.run(until_caught_up=True)
    assert result.stats["late"] == 1
    assert runner.writer.query_rows(
        f"SELECT event_id, attempt FROM {unique_name} ORDER BY event_id, attempt"
    ) == [("a", 0), ("a", 1), ("b", 0), ("c", 0)]
