"""`join.mode: latest` end to end on the real broker, Spark and chdb: one row per order, with
the user's profile version current at the order's event time (docs/semantics.md).

Orders (left, key `user_id`, window 1h) join users (right, key `user.id`, window 30m). User
u1's profile changes three times inside the window (p1 at T0, p2 at +10m, p3 at +20m); orders
arrive before, between and after those versions, in several runs, with re-sends on both sides.
The orders are named as in the timeline of docs/semantics.md (`mode: latest`).
"""

from __future__ import annotations

import functools
import random
import signal
from datetime import datetime, timedelta

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine import query
from streamsift.engine.checkpoint import latest_join_by_key, latest_join_in_spark
from streamsift.engine.faults import FAULT_ENV
from streamsift.engine.runner import PipelineRunner
from streamsift.transforms.join import plan
from streamsift.transforms.join.latest_arrow import STATE_DIR
from streamsift.transforms.join.latest_rule import Record, Windows, pick
from support.cli import run_until_caught_up
from support.clickhouse import Endpoint
from support.join_events import T0, H, M, encode, order, orders_join_users_doc, user
from support.join_runs import run_until

pytestmark = pytest.mark.integration

# Each round: (orders, users) produced before one run. The expected (order, profile) pairs.
ROUNDS = [
    (  # the first version only; o-wait's user has none yet
        [order("A", "u1", T0 - 5 * M), order("B", "u1", T0 + 5 * M)]
        + [order("H", "u2", T0), order("I", "u3", T0)],
        [user("u1", "p1", T0)],
    ),
    (  # two more versions; an order at the same time as p3; re-sends of an order and of p2
        [order("C", "u1", T0 + 15 * M), order("D", "u1", T0 + 20 * M)]
        + [order("E", "u1", T0 + 40 * M), order("C", "u1", T0 + 15 * M)]
        + [order("G", "u1", T0 + 55 * M)],
        [user("u1", "p2", T0 + 10 * M), user("u1", "p3", T0 + 20 * M)]
        + [user("u1", "p2", T0 + 10 * M), user("u2", "q1", T0 + 30 * M)],
    ),
    (  # a version that arrives late (event time +3m, after o1 was joined with p1)
        [order("F", "u1", T0 + 4 * M), order("B", "u1", T0 + 5 * M)],
        [user("u1", "p1b", T0 + 3 * M), user("u1", "p3", T0 + 20 * M)],
    ),
]
INNER = {
    ("A", "p1"),  # no version before it: the first one after it, within 1h
    ("B", "p1"),  # p1b came later: the row already written stays
    ("C", "p2"),
    ("D", "p3"),  # equal event times: the version counts (tr <= tl)
    ("E", "p3"),
    ("H", "q1"),  # q1 arrived after the order, inside its 1h window
    ("F", "p1b"),
}
UNMATCHED = {"I", "G"}  # G: p3 is 35m before it, more than the right's 30m


def latest_doc(broker, chdb_path, tmp_path, name: str, how: str) -> dict:
    doc = orders_join_users_doc(broker, chdb_path, tmp_path, name, how, "1h")
    doc["join"]["mode"] = "latest"
    return doc


def by_key_join(build_join, pipeline, sides, latest_by_key=False):
    """build_join as a streamsift from before buckets planned `mode: latest`."""
    return build_join(pipeline, sides, True)


# inner with its own state: the kill -9 test below and tests/integration/test_chaos.py
@pytest.mark.parametrize("how, layout", [("inner", "by key"), ("left", "own state")])
def test_latest_version_per_order(
    how, layout, broker, chdb_path, tmp_path, unique_name, produce_messages, monkeypatch
):
    """`layout` "by key": the first run writes its state in Spark's `transformWithState`
    grouped by key, as streamsift did before buckets (transforms/join/latest_buckets.py) and
    before it kept the join's state itself (latest_arrow.py); the later runs must find that in
    the checkpoint and keep it. "own state": the join streamsift keeps, as a new pipeline
    runs it."""
    orders_topic, users_topic = f"{unique_name}_orders", f"{unique_name}_users"
    broker.create_topic(orders_topic, 3)
    broker.create_topic(users_topic, 2)
    pipeline = parse_pipeline(latest_doc(broker, chdb_path, tmp_path, unique_name, how))
    table = pipeline.sink.table
    read = 0
    for i, (orders, users) in enumerate(ROUNDS):
        produce_messages(orders_topic, encode(orders, "order_id"))
        produce_messages(users_topic, encode(users, "user"))
        if i == 0:
            produce_messages(orders_topic, [(b"x", b"{not json")])
        if i == 0 and layout == "by key":
            grouped_by_key = functools.partial(by_key_join, plan.build_join)
            monkeypatch.setattr(plan, "build_join", grouped_by_key)
            monkeypatch.setattr(query, "arrow_latest", lambda *_: False)
        runner = PipelineRunner(pipeline)
        read += runner.run(until_caught_up=True).stats["read"]
        monkeypatch.undo()
        spark = runner.checkpoint / "spark"
        if layout == "by key":
            assert latest_join_in_spark(spark) and latest_join_by_key(spark)
        else:
            assert not latest_join_in_spark(spark)
            assert (runner.checkpoint / STATE_DIR).is_dir()
    runner = PipelineRunner(pipeline)
    rows = runner.writer.query_rows(f"SELECT order_id, name FROM {table}")
    assert sorted(rows) == sorted(INNER)  # one row per order, NULL rows not yet due
    # the left fields cross the join's pandas step exactly (float, microsecond timestamp)
    b = runner.writer.query_rows(
        f"SELECT amount, toString(order_ts) FROM {table} WHERE order_id = 'B'"
    )
    assert b == [(1.0, "2026-03-01 12:05:00.000")]
    dlq = runner.writer.query_rows(f"SELECT source, stage FROM {pipeline.dlq_table}")
    assert dlq == [("orders", "parse")]
    assert read == sum(len(o) + len(u) for o, u in ROUNDS) + 1

    # A late pair (2h before T0: behind the watermark, the older side's newest time - 1h) is
    # dropped and counted; events two days ahead on both sides move the watermark past every
    # window.
    late = [order("late", "ul", T0 - 2 * H)], [user("ul", "lu", T0 - 2 * H)]
    produce_messages(
        orders_topic, encode(late[0] + [order("ahead", "ua", T0 + 48 * H)], "order_id")
    )
    produce_messages(users_topic, encode(late[1] + [user("ub", "ub", T0 + 48 * H)], "user"))
    want = INNER | ({(o, None) for o in UNMATCHED} if how == "left" else set())
    runner = PipelineRunner(pipeline)
    stats = run_until(
        runner, lambda: runner.stats.read >= 4 and runner.writer.count(table) >= len(want)
    )
    rows = runner.writer.query_rows(f"SELECT order_id, name FROM {table}")
    assert sorted(rows, key=str) == sorted(want, key=str)
    assert stats["late_dropped"] == 2


def versioned_streams(seed: int = 5) -> tuple[list[dict], list[dict]]:
    """3,000 orders one second apart and three profile versions for each of 100 users at
    random times of the same 50 minutes (10 more users never get one), with re-sends."""
    rng = random.Random(seed)
    users = [
        user(f"u{u}", f"n{u}-{v}", T0 + timedelta(seconds=rng.randrange(3_000)))
        for u in range(100)
        for v in range(3)
    ]
    users += rng.sample(users, 15)  # re-sends: identical, dropped by dedup
    orders = [
        order(f"o{i}", f"u{rng.randrange(110)}", T0 + timedelta(seconds=i)) for i in range(3_000)
    ]
    orders += rng.sample(orders, 150)
    return orders, users


def reference_latest(orders, users, user_at, windows: Windows) -> list[tuple[str, str]]:
    """The rows when every version is known before any order is joined (the users fit in the
    first micro-batch): each order with `pick` over its user's versions (re-sends dropped)."""
    versions: dict[str, set[Record]] = {}
    for doc, (p, o) in zip(users, user_at, strict=True):
        first = min(w for d, w in zip(users, user_at, strict=True) if d == doc)
        if (p, o) == first:
            t = int(datetime.fromisoformat(doc["ts"]).timestamp() * 1_000_000)
            versions.setdefault(doc["user"]["id"], set()).add(Record(t, p, o, doc["user"]["name"]))
    rows = {}
    for doc in orders:
        t = int(datetime.fromisoformat(doc["ts"]).timestamp() * 1_000_000)
        right = pick(Record(t, 0, 0, ""), list(versions.get(doc["user_id"], ())), windows)
        if right is not None:
            rows[doc["order_id"]] = right.payload
    return sorted(rows.items())


def test_kill_9_mid_run_then_resume_writes_each_order_once(
    broker, tmp_path, unique_name, produce_messages
):
    """`streamsift run` killed (SIGKILL) right after its 3rd insert, inside a micro-batch that
    is then re-run, and run to the end: the table holds each order once, with the profile
    version the rule picks."""
    orders, users = versioned_streams()
    orders_topic, users_topic = f"{unique_name}_orders", f"{unique_name}_users"
    broker.create_topic(orders_topic, 3)
    broker.create_topic(users_topic, 2)
    user_at = produce_messages(users_topic, encode(users, "user"))
    produce_messages(orders_topic, encode(orders, "order_id"))
    ep = Endpoint(tmp_path / "clickhouse")
    try:
        doc = latest_doc(broker, None, tmp_path, unique_name, "inner")
        doc["sink"].update(clickhouse={"host": "127.0.0.1", "port": ep.port}, max_batch_size=250)
        doc["join"]["left"]["time_window"] = "10m"
        doc["join"]["right"]["time_window"] = "5m"
        doc["runtime"]["max_rows_per_batch"] = 1_000
        table = doc["sink"]["table"]
        crashed = run_until_caught_up(doc, tmp_path, env={FAULT_ENV: "kill_after_insert:3"})
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-2000:]
        partial = ep.count(table)
        done = run_until_caught_up(doc, tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        rows = ep.client.query(f"SELECT order_id, name FROM {table}").result_rows
        expected = reference_latest(orders, users, user_at, Windows(600_000_000, 300_000_000))
        assert 0 < partial < len(expected)
        assert sorted(rows) == expected
    finally:
        ep.stop()
