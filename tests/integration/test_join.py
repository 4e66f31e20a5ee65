"""The temporal join end to end on the real broker, Spark and chdb.

Orders (left, key `user_id`) join users (right, key `user.id`): a right event at tr matches
a left event at tl when tl - 30m <= tr <= tl + 1h (right.time_window 30m, left 1h). The
table-driven cases each use their own key, so one run checks them all.
"""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.runner import PipelineRunner
from streamsift.spark_host.query_conf import JOIN_STATE_FORMAT
from support.join_events import MS, T0, H, M, encode, order, orders_join_users_doc, user
from support.join_runs import run_until

pytestmark = pytest.mark.integration

# case -> (orders, users, expected inner pairs as (order_id, name))
CASES: dict[str, tuple[list[dict], list[dict], set[tuple[str, str]]]] = {
    "in_window": ([order("o1", "u1", T0)], [user("u1", "ann", T0 + 10 * M)], {("o1", "ann")}),
    "after_edge_in": ([order("o2", "u2", T0)], [user("u2", "bo", T0 + H)], {("o2", "bo")}),
    "after_edge_out": ([order("o3", "u3", T0)], [user("u3", "cy", T0 + H + MS)], set()),
    "before_edge_in": ([order("o4", "u4", T0)], [user("u4", "di", T0 - 30 * M)], {("o4", "di")}),
    "before_edge_out": ([order("o5", "u5", T0)], [user("u5", "ed", T0 - 30 * M - MS)], set()),
    "many_to_many": (
        [order("o6", "u6", T0), order("o7", "u6", T0 + 5 * M)],
        [user("u6", "f1", T0), user("u6", "f2", T0 + M), user("u6", "f3", T0 + 2 * M)],
        {(o, n) for o in ("o6", "o7") for n in ("f1", "f2", "f3")},
    ),
    "dups_both_sides": (
        [order("o8", "u8", T0), order("o8", "u8", T0)],  # a re-sent order: dropped by dedup
        [user("u8", "gu", T0), user("u8", "gu", T0 + M)],  # a repeat within the dedup window
        {("o8", "gu")},
    ),
    "no_match": ([order("o9", "u9", T0)], [], set()),
}


def join_state_format(runner: PipelineRunner) -> str:
    """The join state format Spark recorded in the newest batch of the offset log."""
    offsets = runner.checkpoint / "spark" / "offsets"
    newest = max((p for p in offsets.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    return json.loads(newest.read_text().splitlines()[1])["conf"][JOIN_STATE_FORMAT]


@pytest.mark.parametrize("how", ["inner", "left"])
def test_join_cases(how, broker, chdb_path, tmp_path, unique_name, produce_messages):
    orders_topic, users_topic = f"{unique_name}_orders", f"{unique_name}_users"
    broker.create_topic(orders_topic, 3)
    broker.create_topic(users_topic, 2)
    orders = [o for os_, _, _ in CASES.values() for o in os_]
    users = [u for _, us, _ in CASES.values() for u in us]
    produce_messages(orders_topic, encode(orders, "order_id") + [(b"x", b"{not json")])
    produce_messages(users_topic, encode(users, "user") + [(b"y", b"[1, 2]")])
    doc = orders_join_users_doc(broker, chdb_path, tmp_path, unique_name, how, "10m")
    pipeline = parse_pipeline(doc)
    table = pipeline.sink.table

    # inner: the first run makes its checkpoint with the join state format streamsift used
    # before format 4 (2: four stores per side); the second run, on today's default, must
    # resume that checkpoint with its format (Spark reads it from the offset log)
    old_format = {"runtime": {**doc["runtime"], "spark_conf": {JOIN_STATE_FORMAT: "2"}}}
    first_pipeline = parse_pipeline({**doc, **old_format}) if how == "inner" else pipeline
    runner = PipelineRunner(first_pipeline)
    first = runner.run(until_caught_up=True).stats
    expected = {pair for _, _, pairs in CASES.values() for pair in pairs}
    rows = runner.writer.query_rows(f"SELECT order_id, name FROM {table} WHERE name IS NOT NULL")
    assert len(rows) == len(expected)  # each pair once
    assert set(rows) == expected
    dlq = runner.writer.query_rows(f"SELECT source, stage, topic FROM {pipeline.dlq_table}")
    assert sorted(dlq) == [("orders", "parse", orders_topic), ("users", "parse", users_topic)]
    assert first["read"] == len(orders) + len(users) + 2
    assert first["duplicates"] == 2  # one order re-send, one user repeat
    assert first["rows_in"] == first["read"] - 2  # every source scanned once per batch

    # A late pair (behind the watermark: 10m behind the newest event) and events far ahead
    # that move the watermark past every case, so left-outer rows come out.
    late = [order("late1", "ul", T0 - H)], [user("ul", "lu", T0 - H)]
    ahead = (
        [order("ahead", "ua", T0 + timedelta(days=2))],
        [user("ub", "ub", T0 + timedelta(days=2))],
    )
    produce_messages(orders_topic, encode(late[0] + ahead[0], "order_id"))
    produce_messages(users_topic, encode(late[1] + ahead[1], "user"))

    unmatched = {o["order_id"] for os_, _, pairs in CASES.values() for o in os_} - {
        oid for oid, _ in expected
    }
    want_total = len(expected) + (len(unmatched) if how == "left" else 0)
    runner = PipelineRunner(pipeline)
    stats = run_until(
        runner, lambda: runner.stats.read >= 4 and runner.writer.count(table) >= want_total
    )
    rows = runner.writer.query_rows(f"SELECT order_id, name FROM {table}")
    assert stats["late_dropped"] == 2
    assert join_state_format(runner) == ("2" if how == "inner" else "4")
    if how == "inner":
        assert set(rows) == expected and len(rows) == len(expected)
    else:
        assert sorted(rows, key=str) == sorted(
            list(expected) + [(oid, None) for oid in unmatched], key=str
        )


def test_join_state_on_the_heap_is_exact_and_kept_by_the_checkpoint(
    broker, chdb_path, tmp_path, unique_name, produce_messages
):
    """`runtime.state_store: memory` joins as the default does; the checkpoint remembers the
    store, so a restart that asks for rocksdb resumes with the heap store and its state."""
    orders_topic, users_topic = f"{unique_name}_orders", f"{unique_name}_users"
    broker.create_topic(orders_topic, 3)
    broker.create_topic(users_topic, 2)
    orders = [o for os_, _, _ in CASES.values() for o in os_]
    users = [u for _, us, _ in CASES.values() for u in us]
    produce_messages(orders_topic, encode(orders, "order_id"))
    produce_messages(users_topic, encode(users, "user"))
    doc = orders_join_users_doc(broker, chdb_path, tmp_path, unique_name, "inner", "10m")
    doc["runtime"]["state_store"] = "memory"
    pipeline = parse_pipeline(doc)
    runner = PipelineRunner(pipeline)
    runner.run(until_caught_up=True)
    table = pipeline.sink.table
    expected = {pair for _, _, pairs in CASES.values() for pair in pairs}
    rows = runner.writer.query_rows(f"SELECT order_id, name FROM {table}")
    assert set(rows) == expected and len(rows) == len(expected)
    offsets = pipeline.checkpoint_dir(tmp_path) / "spark" / "offsets"
    assert "HDFSBackedStateStoreProvider" in (offsets / "0").read_text()

    # An order whose user (cy, at T0 + 1h) came in the first run: only the kept state has it.
    produce_messages(orders_topic, encode([order("o-after", "u3", T0 + H + 5 * M)], "order_id"))
    doc["runtime"]["state_store"] = "rocksdb"
    resumed = PipelineRunner(parse_pipeline(doc))
    resumed.run(until_caught_up=True)
    after = resumed.writer.query_rows(f"SELECT name FROM {table} WHERE order_id = 'o-after'")
    assert after == [("cy",)]
    last = max(offsets.iterdir(), key=lambda f: int(f.name) if f.name.isdigit() else -1)
    assert "HDFSBackedStateStoreProvider" in last.read_text()


# ---------------------------------------------------------------- the large run vs a reference


def big_streams(orders_n: int = 20_000, users_n: int = 2_000, seed: int = 3):
    """Orders and user events over ~2.8 h, with re-sends on both sides."""
    import random

    rng = random.Random(seed)
    step = timedelta(milliseconds=500)
    span = step * orders_n
    orders, users = [], []
    for i in range(orders_n):
        if orders and rng.random() < 0.05:
            orders.append(rng.choice(orders[-50:]))  # a re-send: same id, same payload
            continue
        orders.append(
            {
                "order_id": f"o{i}",
                "user_id": f"u{rng.randrange(300)}",
                "amount": round(rng.random() * 100, 2),
                "ts": (T0 + step * i).isoformat(),
            }
        )
    for j in range(users_n):
        if users and rng.random() < 0.1:
            users.append(rng.choice(users[-20:]))
            continue
        users.append(
            {
                "event_id": f"e{j}",
                "user": {"id": f"u{rng.randrange(300)}", "name": f"name{j}"},
                "ts": (T0 + span * j / users_n).isoformat(),
            }
        )
    return orders, users


def reference_join(orders, order_where, users, user_where, w_left, w_right, dedup_window):
    """Dedup each side (first arrival per key within the window, per partition, in offset
    order), then pair every order with every user event of the same user whose time lies in
    [order time - w_right, order time + w_left]."""

    def dedup(docs, where, key):
        kept, refs = [], {}
        for i in sorted(range(len(docs)), key=lambda i: where[i]):
            doc, t = docs[i], datetime.fromisoformat(docs[i]["ts"])
            ref = refs.get((where[i][0], key(doc)))
            if ref is not None and abs(t - ref) < dedup_window:
                continue
            refs[(where[i][0], key(doc))] = t
            kept.append((doc, t))
        return kept

    left = dedup(orders, order_where, lambda d: d["order_id"])
    right = dedup(users, user_where, lambda d: d["event_id"])
    by_user: dict[str, list] = {}
    for doc, t in right:
        by_user.setdefault(doc["user"]["id"], []).append((doc, t))
    rows = []
    for doc, t in left:
        for udoc, ut in by_user.get(doc["user_id"], []):
            if t - w_right <= ut <= t + w_left:
                rows.append((doc["order_id"], doc["amount"], udoc["user"]["name"], t, ut))
    return rows


def big_pipeline(broker, chdb_path, tmp_path, name: str, topics: str, max_rows: int | None):
    doc = orders_join_users_doc(broker, chdb_path, tmp_path, name, "inner", "1h")
    orders_src, users_src = doc["sources"]
    orders_src["topic"], users_src["topic"] = f"{topics}_orders", f"{topics}_users"
    users_src["schema"]["fields"].insert(0, {"name": "event_id", "type": "string"})
    users_src["dedup"] = {"key": "event_id", "time_window": "1h"}
    doc["join"]["left"]["time_window"] = "10m"
    doc["join"]["right"]["time_window"] = "5m"
    doc["join"].pop("allowed_lateness")  # the default: the larger window
    doc["join"]["output"].append({"from": "right", "field": "ts", "as": "user_ts"})
    doc["sink"]["mapping"].append(
        {"field": "user_ts", "column": "user_ts", "type": "DateTime64(3, 'UTC')"}
    )
    doc["sink"]["table"] = name
    doc["name"] = name.replace("_", "-")
    doc["runtime"] = {"checkpoint_dir": str(tmp_path / name), "max_rows_per_batch": max_rows}
    return parse_pipeline(doc)


def test_large_join_equals_reference_and_survives_a_restart(
    broker, chdb_path, tmp_path, unique_name, produce_messages
):
    """>= 20,000 orders and 2,000 user events on 3 partitions each, one run vs a reference;
    a second pipeline runs on the first 60 % of both topics, stops, and resumes after the
    rest arrived: both tables hold exactly the reference's rows. Both keep the join's state
    in format 4 (one RocksDB store per side, an event-time index), also across the restart."""
    orders, users = big_streams()
    ot, ut = f"{unique_name}_orders", f"{unique_name}_users"
    broker.create_topic(ot, 3)
    broker.create_topic(ut, 3)
    cut_o, cut_u = len(orders) * 6 // 10, len(users) * 6 // 10
    order_where = produce_messages(ot, encode(orders[:cut_o], "order_id"))
    user_where = produce_messages(ut, encode(users[:cut_u], "event_id"))
    two = big_pipeline(broker, chdb_path, tmp_path, f"{unique_name}_two", unique_name, 6_000)
    partial = PipelineRunner(two).run(until_caught_up=True).stats
    assert partial["read"] == cut_o + cut_u

    order_where += produce_messages(ot, encode(orders[cut_o:], "order_id"))
    user_where += produce_messages(ut, encode(users[cut_u:], "event_id"))
    expected = sorted(reference_join(orders, order_where, users, user_where, 10 * M, 5 * M, H))
    assert len(expected) > 5_000

    def table_rows(runner, table):
        rows = runner.writer.query_rows(
            f"SELECT order_id, amount, name, order_ts, user_ts FROM {table}"
        )
        return sorted(
            (o, a, n, ot.replace(tzinfo=timezone.utc), ut.replace(tzinfo=timezone.utc))
            for o, a, n, ot, ut in rows
        )

    one = big_pipeline(broker, chdb_path, tmp_path, f"{unique_name}_one", unique_name, None)
    runner = PipelineRunner(one)
    stats = runner.run(until_caught_up=True).stats
    assert table_rows(runner, one.sink.table) == expected
    assert stats["late_dropped"] == 0
    assert stats["rows_in"] + stats["duplicates"] == stats["read"] == len(orders) + len(users)
    print(
        f"\njoin+dedup one run: {stats['read']:,} events in {stats['busy_ms'] / 1000:.1f}s of "
        f"batches ({stats['read'] / (stats['busy_ms'] / 1000):,.0f} events/s), "
        f"{stats['batches']} batch(es)"
    )

    resumed = PipelineRunner(two)
    rest = resumed.run(until_caught_up=True).stats
    assert partial["read"] + rest["read"] == len(orders) + len(users)
    assert table_rows(resumed, two.sink.table) == expected
    assert join_state_format(runner) == join_state_format(resumed) == "4"
    print(
        f"join+dedup resumed: {rest['batches']} batches, "
        f"{rest['busy_ms'] / max(rest['batches'], 1):,.0f} ms per batch"
    )
