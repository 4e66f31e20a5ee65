"""`join.mode: table` end to end on the real broker, Spark and chdb: orders look up their
user in the users topic read as a table (docs/semantics.md, `mode: table`).

Orders (left, key `user_id`, window 1h, no dedup on users) join users (right: the latest value
per user, deleted by a tombstone, forgotten 2h after its time once the watermark passes it).
Rounds 1-3 are each a run of their own (a restart from the checkpoint, which keeps the table);
round 4 runs continuously, so its second batch sees the watermark its first one moved.
"""

from __future__ import annotations

import json
import signal
from datetime import datetime, timedelta

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.faults import FAULT_ENV
from streamsift.engine.runner import PipelineRunner
from support.cli import run_until_caught_up
from support.clickhouse import Endpoint
from support.join_events import T0, H, M, encode, order, orders_join_users_doc, user
from support.join_runs import run_until

pytestmark = pytest.mark.integration

TTL = 2 * H
S = timedelta(seconds=1)
TOMBSTONE = None  # a users message with a null value
# Each round: (orders, users) produced before its run; users as (id, profile doc or None).
ROUNDS = [
    (  # u1 updated twice in one batch: the later one is the value
        [order("A", "u1", T0 + 5 * M), order("B", "u2", T0 + 5 * M), order("N", "u8", T0 + 5 * M)],
        [("u1", user("u1", "p1", T0)), ("u1", user("u1", "p2", T0 + M))]
        + [("u2", user("u2", "q1", T0)), ("u3", user("u3", "r1", T0))],
    ),
    (  # a third version; u2 deleted, then an order of u2; an order of a user with no value
        [order("C", "u1", T0 + 6 * M), order("D", "u2", T0 + 6 * M), order("E", "u9", T0 + 6 * M)],
        [("u1", user("u1", "p3", T0 + 2 * M)), ("u2", TOMBSTONE)],
    ),
    (  # after a restart: u1's value comes from the checkpoint; u9's first value meets E
        [order("F", "u1", T0 + 7 * M)],
        [("u9", user("u9", "z1", T0 + 7 * M))],
    ),
]
# Round 4, continuous: X (4h after T0) still sees u1's p3 (the watermark is ~T0-53m), and
# moves the watermark to T0+3h; then Y and Z find u3's and u1's values expired (T0 + 2h).
LATER = [order("X", "u1", T0 + 4 * H)], [order("Y", "u3", T0 + 4 * H), order("Z", "u1", T0 + 4 * H)]


def reference(rounds: list, left_outer: bool) -> set[tuple[str, str | None]]:
    """The rule, batch by batch (one batch per round): the table after the batch's users,
    values whose time + ttl the batch's watermark passed forgotten; each order with its
    user's value, or waiting for one until the watermark passes its time + 1h."""
    table: dict[str, tuple[datetime, str]] = {}
    waiting: list[dict] = []
    newest = None
    rows: set[tuple[str, str | None]] = set()
    for orders, users in rounds:
        watermark = newest - H if newest else datetime.min.replace(tzinfo=T0.tzinfo)
        for uid, doc in users:
            if doc is None:
                table.pop(uid, None)
            else:
                table[uid] = (datetime.fromisoformat(doc["ts"]), doc["user"]["name"])
        table = {k: v for k, v in table.items() if v[0] + TTL > watermark}
        still = []
        for o in waiting + orders:
            if o["user_id"] in table:
                rows.add((o["order_id"], table[o["user_id"]][1]))
            elif datetime.fromisoformat(o["ts"]) + H <= watermark:
                rows |= {(o["order_id"], None)} if left_outer else set()
            else:
                still.append(o)
        waiting = still
        times = [datetime.fromisoformat(o["ts"]) for o in orders]
        newest = max([newest, *times] if newest else times)
    return rows


def users_messages(users: list) -> list[tuple[bytes, bytes | None]]:
    return [(uid.encode(), None if d is None else json.dumps(d).encode()) for uid, d in users]


@pytest.mark.parametrize("how", ["inner", "left"])
def test_table_lookup(how, broker, chdb_path, tmp_path, unique_name, produce_messages):
    orders_topic, users_topic = f"{unique_name}_orders", f"{unique_name}_users"
    broker.create_topic(orders_topic, 2)
    broker.create_topic(users_topic, 2)
    doc = orders_join_users_doc(broker, chdb_path, tmp_path, unique_name, how, "1h")
    doc["join"]["mode"] = "table"
    doc["join"]["right"] = {"source": "users", "key": "user.id", "ttl": "2h"}
    del doc["sources"][1]["dedup"]
    pipeline = parse_pipeline(doc)
    table = pipeline.sink.table
    for orders, users in ROUNDS:
        produce_messages(users_topic, users_messages(users))
        produce_messages(orders_topic, encode(orders, "order_id"))
        PipelineRunner(pipeline).run(until_caught_up=True)
    runner = PipelineRunner(pipeline)
    assert sorted(runner.writer.query_rows(f"SELECT order_id, name FROM {table}")) == sorted(
        reference(ROUNDS, False)
    )

    produce_messages(orders_topic, encode(LATER[0], "order_id"))
    later = iter([lambda: produce_messages(orders_topic, encode(LATER[1], "order_id"))])
    rounds = [*ROUNDS, (LATER[0], []), (LATER[1], [])]
    want = reference(rounds, how == "left")

    def done() -> bool:
        if runner.writer.count(table) < len(reference(ROUNDS, False)) + 1:
            return False
        step = next(later, None)
        if step is not None:
            step()  # X is written: its batch is over, the next one has the new watermark
            return False
        return runner.stats.read >= 3 and runner.writer.count(table) >= len(want)

    run_until(runner, done)
    rows = runner.writer.query_rows(f"SELECT order_id, name FROM {table}")
    assert sorted(rows, key=str) == sorted(want, key=str)
    dlq = runner.writer.query_rows(f"SELECT count() FROM {pipeline.dlq_table}")
    assert dlq == [(0,)]  # the tombstone is not a dead letter


def test_kill_9_mid_run_then_resume_writes_each_order_once(
    broker, tmp_path, unique_name, produce_messages
):
    """`streamsift run` killed (SIGKILL) right after its 3rd insert, inside a micro-batch that
    is then re-run, and run to the end: each order once, with its user's one value (an order
    read before its user waits for it: the rows do not depend on the batches)."""
    orders = [order(f"o{i}", f"u{i % 110}", T0 + i * S) for i in range(2_000)]
    users = [(f"u{u}", user(f"u{u}", f"n{u}", T0)) for u in range(100)]  # u100-u109: none
    orders_topic, users_topic = f"{unique_name}_orders", f"{unique_name}_users"
    broker.create_topic(orders_topic, 2)
    broker.create_topic(users_topic, 2)
    produce_messages(users_topic, users_messages(users))
    produce_messages(orders_topic, encode(orders, "order_id"))
    ep = Endpoint(tmp_path / "clickhouse")
    try:
        doc = orders_join_users_doc(broker, None, tmp_path, unique_name, "inner", "1h")
        doc["join"]["mode"] = "table"
        doc["join"]["right"] = {"source": "users", "key": "user.id"}
        del doc["sources"][1]["dedup"]
        doc["sink"].update(clickhouse={"host": "127.0.0.1", "port": ep.port}, max_batch_size=200)
        doc["runtime"]["max_rows_per_batch"] = 700
        table = doc["sink"]["table"]
        crashed = run_until_caught_up(doc, tmp_path, env={FAULT_ENV: "kill_after_insert:3"})
        assert crashed.returncode == -signal.SIGKILL, crashed.stderr[-2000:]
        partial = ep.count(table)
        done = run_until_caught_up(doc, tmp_path)
        assert done.returncode == 0, done.stderr[-2000:]
        rows = ep.client.query(f"SELECT order_id, name FROM {table}").result_rows
        names = {d["user"]["id"]: d["user"]["name"] for _, d in users}
        expected = sorted(
            (o["order_id"], names[o["user_id"]]) for o in orders if o["user_id"] in names
        )
        assert 0 < partial < len(expected)
        assert sorted(rows) == expected
    finally:
        ep.stop()
