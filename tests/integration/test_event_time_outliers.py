"""Event times far from the Kafka timestamp, end to end on the real broker, Spark and chdb.

A record whose event time runs more than `schema.max_future_skew` (default 5m) ahead of its
Kafka message timestamp goes to the DLQ (stage parse, class `future_event_time`), so it can
neither turn dedup off for its partition nor move the join's watermark. Far-past records are
late: kept and counted by dedup, dropped and counted by the join. Messages are produced with
explicit Kafka timestamps (normal ones at their event time), so nothing depends on the clock.
"""

from __future__ import annotations

import json
import signal
from datetime import datetime, timedelta, timezone

import pytest
from confluent_kafka import Producer

from streamsift.config import parse_pipeline
from streamsift.engine.runner import PipelineRunner
from support.cli import run_until_caught_up
from support.clickhouse import Endpoint
from support.join_events import T0, M, encode, order, orders_join_users_doc, user
from support.pipeline_docs import event, event_doc

pytestmark = pytest.mark.integration

FUTURE = datetime(2099, 1, 1, tzinfo=timezone.utc)
PAST = datetime(2001, 1, 1, tzinfo=timezone.utc)
S = timedelta(seconds=1)


def produce_at(servers: str, topic: str, messages: list[tuple[int, dict, datetime]]) -> None:
    """(partition, event, Kafka timestamp) per message, in order."""
    producer = Producer({"bootstrap.servers": servers, "linger.ms": 5, "enable.idempotence": True})
    errors: list = []
    for partition, doc, stamp in messages:
        producer.produce(
            topic,
            key=doc["event_id"].encode(),
            value=json.dumps(doc).encode(),
            partition=partition,
            timestamp=int(stamp.timestamp() * 1000),
            on_delivery=lambda err, msg: errors.append(err) if err else None,
        )
        producer.poll(0)
    assert producer.flush(60) == 0 and not errors


def on_time(partition: int, event_id: str, at: datetime, attempt: int = 0):
    """A message whose Kafka timestamp is its event time."""
    return partition, event(event_id, at, attempt), at


def rows(runner: PipelineRunner, table: str) -> list[tuple[str, int]]:
    return runner.writer.query_rows(
        f"SELECT event_id, attempt FROM {table} ORDER BY event_id, attempt"
    )


def dead_letters(runner: PipelineRunner, table: str) -> list[tuple]:
    return runner.writer.query_rows(
        f"SELECT partition, offset, stage, error_class, error FROM {table}_dlq "
        "ORDER BY partition, offset"
    )


def test_one_far_future_event_does_not_turn_dedup_off(broker, event_pipeline, unique_name):
    """The issue as found: one event dated 2099, then re-sends on the same partition."""
    broker.create_topic(unique_name, 1)
    servers = broker.bootstrap_servers
    pipeline = event_pipeline(window="1h")
    produce_at(
        servers,
        unique_name,
        [on_time(0, "a", T0), on_time(0, "b", T0 + S), (0, event("x", FUTURE), T0 + 2 * S)],
    )
    first = PipelineRunner(pipeline).run(until_caught_up=True).stats
    assert first["dlq"] == 1 and first["written"] == 2

    produce_at(
        servers,
        unique_name,
        [on_time(0, "a", T0 + 10 * S, 1), on_time(0, "b", T0 + 11 * S, 1), on_time(0, "c", T0)],
    )
    runner = PipelineRunner(pipeline)
    second = runner.run(until_caught_up=True).stats

    assert rows(runner, unique_name) == [("a", 0), ("b", 0), ("c", 0)]
    assert second["duplicates"] == 2 and second["late"] == 0 and second["written"] == 1
    [(partition, offset, stage, error_class, error)] = dead_letters(runner, unique_name)
    assert (partition, offset, stage, error_class) == (0, 2, "parse", "future_event_time")
    assert error.startswith("field 'created_at': event time 2099-01-01T00:00:00Z is ")
    assert "ahead of its Kafka timestamp 2026-03-01T12:00:02Z" in error
    assert error.endswith("more than the 5m allowed (schema.max_future_skew)")


def test_a_burst_of_far_future_events_on_one_partition(broker, event_pipeline, unique_name):
    """100 far-future events between originals and re-sends, read in several batches; the
    other partition is untouched, and an event ahead by less than the skew is accepted."""
    broker.create_topic(unique_name, 2)
    originals = [on_time(p, f"k{p}-{i}", T0 + i * S) for p in (0, 1) for i in range(10)]
    burst = [(0, event(f"f{i}", FUTURE + i * S), T0 + 20 * S) for i in range(100)]
    near = [(1, event("near", T0 + 24 * S + 4 * M), T0 + 24 * S)]  # 4m ahead: fine
    resends = [on_time(p, f"k{p}-{i}", T0 + (30 + i) * S, 1) for p in (0, 1) for i in range(10)]
    produce_at(broker.bootstrap_servers, unique_name, originals + burst + near + resends)

    runner = PipelineRunner(event_pipeline(window="1h", max_rows_per_batch=40))
    stats = runner.run(until_caught_up=True).stats

    want = sorted([(f"k{p}-{i}", 0) for p in (0, 1) for i in range(10)] + [("near", 0)])
    assert rows(runner, unique_name) == want
    assert stats["duplicates"] == 20 and stats["late"] == 0
    assert stats["dlq"] == 100 and stats["read"] == 141
    letters = dead_letters(runner, unique_name)
    assert {(p, c) for p, _, _, c, _ in letters} == {(0, "future_event_time")}
    assert [o for _, o, *_ in letters] == list(range(10, 110))


def test_far_past_events_alone_and_in_bursts_are_late_kept_and_counted(
    broker, event_pipeline, unique_name
):
    """Documented late handling: kept (never lost), counted, not compared; the newest event
    time of the partition does not move back, so re-sends of recent events are still dropped."""
    broker.create_topic(unique_name, 1)
    servers = broker.bootstrap_servers
    pipeline = event_pipeline(window="1h")
    produce_at(servers, unique_name, [on_time(0, f"a{i}", T0 + i * S) for i in range(5)])
    PipelineRunner(pipeline).run(until_caught_up=True)

    alone = [(0, event("old", PAST), T0 + 10 * S)]
    resends = [on_time(0, f"a{i}", T0 + (20 + i) * S, 1) for i in range(5)]
    burst = [(0, event(f"p{i % 10}", PAST + i * S, i // 10), T0 + 30 * S) for i in range(30)]
    produce_at(servers, unique_name, alone + resends + burst + [on_time(0, "new", T0 + M)])
    runner = PipelineRunner(pipeline)
    stats = runner.run(until_caught_up=True).stats

    assert stats["late"] == 31 and stats["duplicates"] == 5 and stats["dlq"] == 0
    want = sorted(
        [(f"a{i}", 0) for i in range(5)]
        + [("old", 0), ("new", 0)]
        + [(f"p{i}", n) for i in range(10) for n in range(3)]
    )
    assert rows(runner, unique_name) == want


def test_a_far_future_event_does_not_hide_later_join_matches(
    broker, chdb_path, tmp_path, unique_name
):
    """Far-future events on both sides (one bad clock) must not move the join's watermark:
    matches that arrive later are still joined, and nothing is counted behind the watermark.
    A far-past pair is behind the watermark: dropped by the join and counted."""
    orders_topic, users_topic = f"{unique_name}_orders", f"{unique_name}_users"
    broker.create_topic(orders_topic, 2)
    broker.create_topic(users_topic, 2)
    servers = broker.bootstrap_servers
    pipeline = parse_pipeline(
        orders_join_users_doc(broker, chdb_path, tmp_path, unique_name, "inner", "10m")
    )
    table = pipeline.sink.table

    def send(topic: str, docs: list[dict], key: str, stamp: datetime) -> None:
        producer = Producer({"bootstrap.servers": servers})
        for k, v in encode(docs, key):
            producer.produce(topic, key=k, value=v, timestamp=int(stamp.timestamp() * 1000))
        assert producer.flush(60) == 0

    send(orders_topic, [order("o1", "u1", T0), order("o-future", "uf", FUTURE)], "order_id", T0)
    send(users_topic, [user("u1", "ann", T0), user("uf", "fay", FUTURE)], "user", T0)
    first = PipelineRunner(pipeline).run(until_caught_up=True).stats

    later = T0 + 20 * M  # would be ~73 years behind a watermark moved by the 2099 events
    send(orders_topic, [order("o2", "u2", later), order("o-old", "uo", PAST)], "order_id", later)
    send(users_topic, [user("u2", "bo", later), user("uo", "ole", PAST)], "user", later)
    runner = PipelineRunner(pipeline)
    second = runner.run(until_caught_up=True).stats

    assert sorted(runner.writer.query_rows(f"SELECT order_id, name FROM {table}")) == [
        ("o1", "ann"),
        ("o2", "bo"),
    ]
    assert second["late_dropped"] == 2  # the far-past pair only
    assert first["dlq"] == 2
    dlq = runner.writer.query_rows(f"SELECT source, stage, error_class FROM {pipeline.dlq_table}")
    assert sorted(dlq) == [
        ("orders", "parse", "future_event_time"),
        ("users", "parse", "future_event_time"),
    ]


def test_a_crash_mid_way_gives_the_same_rows_and_dead_letters(broker, tmp_path, unique_name):
    """Killed after an insert, before Spark's commit: the re-run decides exactly the same."""
    broker.create_topic(unique_name, 2)
    messages = []
    for i in range(600):
        p, at = i % 2, T0 + i * S
        messages.append(on_time(p, f"e{i}", at))
        if i % 3 == 0:  # a re-send of an earlier event
            j = i - 2 * (i % 4 + 1)
            if j >= 0:
                messages.append(on_time(j % 2, f"e{j}", at, 1))
        if i % 30 == 0:  # a far-future event, between
            messages.append((p, event(f"f{i}", FUTURE + i * S), at))
    produce_at(broker.bootstrap_servers, unique_name, messages)

    data_dir = tmp_path / "chdb"
    doc = event_doc(
        bootstrap_servers=broker.bootstrap_servers,
        topic=unique_name,
        clickhouse={"path": str(data_dir)},
        checkpoint_dir=tmp_path / "ckpt",
        sink={"max_batch_size": 100},
        runtime={"max_rows_per_batch": 200},
    )
    crashed = run_until_caught_up(doc, tmp_path, env={"STREAMSIFT_FAULT": "kill_after_insert:3"})
    assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-2000:]
    resumed = run_until_caught_up(doc, tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-2000:]

    ep = Endpoint(data_dir)
    try:
        assert ep.count(unique_name) == 600
        assert ep.count(unique_name, "attempt > 0") == 0
        assert int(ep.client.command(f"SELECT uniqExact(event_id) FROM {unique_name}")) == 600
        assert ep.count(f"{unique_name}_dlq") == 20
        assert ep.count(f"{unique_name}_dlq", "error_class = 'future_event_time'") == 20
        assert (
            int(ep.client.command(f"SELECT uniqExact(offset, partition) FROM {unique_name}_dlq"))
            == 20
        )
    finally:
        ep.stop()
