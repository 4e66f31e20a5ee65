"""`join.mode: latest` end to end on the real broker, Spark and chdb: one row per order, with
the user's profile version current at the order's event time (docs/semantics.md).

Orders (left, key `user_id`, window 1h) join users (right, key `user.id`, window 30m). User
u1's profile changes three times inside the window (p1 at T0, p2 at +10m, p3 at +20m); orders
arrive before, between and after those versions, in several runs, with re-sends on both sides.
"""

from __future__ import annotations

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.runner import PipelineRunner
from support.join_events import T0, H, M, encode, order, orders_join_users_doc, user
from support.join_runs import run_until

pytestmark = pytest.mark.integration

# Each round: (orders, users) produced before one run. The expected (order, profile) pairs.
ROUNDS = [
    (  # the first version only; o-wait's user has none yet
        [order("o-early", "u1", T0 - 5 * M), order("o1", "u1", T0 + 5 * M)]
        + [order("o-wait", "u2", T0), order("o-none", "u3", T0)],
        [user("u1", "p1", T0)],
    ),
    (  # two more versions; an order at the same time as p3; re-sends of an order and of p2
        [order("o2", "u1", T0 + 15 * M), order("o3", "u1", T0 + 20 * M)]
        + [order("o4", "u1", T0 + 40 * M), order("o2", "u1", T0 + 15 * M)]
        + [order("o-stale", "u1", T0 + 55 * M)],
        [user("u1", "p2", T0 + 10 * M), user("u1", "p3", T0 + 20 * M)]
        + [user("u1", "p2", T0 + 10 * M), user("u2", "q1", T0 + 30 * M)],
    ),
    (  # a version that arrives late (event time +3m, after o1 was joined with p1)
        [order("o5", "u1", T0 + 4 * M), order("o1", "u1", T0 + 5 * M)],
        [user("u1", "p1b", T0 + 3 * M), user("u1", "p3", T0 + 20 * M)],
    ),
]
INNER = {
    ("o-early", "p1"),  # no version before it: the first one after it, within 1h
    ("o1", "p1"),  # p1b came later: the row already written stays
    ("o2", "p2"),
    ("o3", "p3"),  # equal event times: the version counts (tr <= tl)
    ("o4", "p3"),
    ("o-wait", "q1"),  # q1 arrived after the order, inside its 1h window
    ("o5", "p1b"),
}
UNMATCHED = {"o-none", "o-stale"}  # o-stale: p3 is 35m before it, more than the right's 30m


def latest_doc(broker, chdb_path, tmp_path, name: str, how: str) -> dict:
    doc = orders_join_users_doc(broker, chdb_path, tmp_path, name, how, "1h")
    doc["join"]["mode"] = "latest"
    return doc


@pytest.mark.parametrize("how", ["inner", "left"])
def test_latest_version_per_order(how, broker, chdb_path, tmp_path, unique_name, produce_messages):
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
        stats = PipelineRunner(pipeline).run(until_caught_up=True).stats
        read += stats["read"]
    runner = PipelineRunner(pipeline)
    rows = runner.writer.query_rows(f"SELECT order_id, name FROM {table}")
    assert sorted(rows) == sorted(INNER)  # one row per order, NULL rows not yet due
    dlq = runner.writer.query_rows(f"SELECT source, stage FROM {pipeline.dlq_table}")
    assert dlq == [("orders", "parse")]
    assert read == sum(len(o) + len(u) for o, u in ROUNDS) + 1

    # Events two days ahead on both sides move the watermark past every window.
    produce_messages(orders_topic, encode([order("ahead", "ua", T0 + 48 * H)], "order_id"))
    produce_messages(users_topic, encode([user("ub", "ub", T0 + 48 * H)], "user"))
    want = INNER | ({(o, None) for o in UNMATCHED} if how == "left" else set())
    runner = PipelineRunner(pipeline)
    stats = run_until(
        runner, lambda: runner.stats.read >= 2 and runner.writer.count(table) >= len(want)
    )
    rows = runner.writer.query_rows(f"SELECT order_id, name FROM {table}")
    assert sorted(rows, key=str) == sorted(want, key=str)
    assert stats["late_dropped"] == 0
