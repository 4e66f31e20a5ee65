"""A chain of joins (`join` as a list of steps) end to end on the real broker, Spark and chdb:
orders join users on the user id, then products on the product id (docs/semantics.md,
"A chain of joins"), exact against a reference computed here from the rules.

Every record is produced before the first micro-batch reads, so the reference is the rules
applied to all of them at once: `pick` (mode latest) over each key's versions, every pair
inside the windows for mode interval, the value written last for mode table.
"""

from __future__ import annotations

import random
from collections import Counter
from datetime import datetime, timedelta

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.runner import PipelineRunner
from streamsift.transforms.join.latest_rule import Record, Windows, pick
from support.clickhouse import Endpoint
from support.join_events import (
    T0,
    USERS_STEP,
    H,
    M,
    chain_doc,
    encode,
    order,
    orders_users_products_doc,
    product,
    products_step,
    user,
)
from support.join_runs import killed_then_resumed, run_until

pytestmark = pytest.mark.integration

S = timedelta(seconds=1)
USERS_WINDOWS = Windows(int(H.total_seconds() * 1e6), int(30 * M.total_seconds() * 1e6))
PRODUCTS_WINDOWS = Windows(int(20 * M.total_seconds() * 1e6), int(40 * M.total_seconds() * 1e6))


# An order two days after the others (user ua, product p0): it moves the watermark past
# every window at once.
AHEAD = order("ahead", "ua", T0 + 48 * H, 999, "p0")


def micros(doc: dict) -> int:
    return int(datetime.fromisoformat(doc["ts"]).timestamp() * 1_000_000)


def streams(seed: int) -> tuple[list[dict], list[dict], list[dict]]:
    """240 orders 10 s apart over 40 minutes, of 12 users (u10, u11 have no profile) and 6
    products (p5 has none); two or three versions per user and per product at distinct
    random times of the same hour."""
    rng = random.Random(seed)
    seconds = rng.sample(range(3_600), 60)
    users = [
        user(f"u{u}", f"n{u}-{v}", T0 + seconds.pop() * S) for u in range(10) for v in range(2)
    ]
    products = [
        product(f"p{p}", f"t{p}-{v}", T0 + seconds.pop() * S) for p in range(5) for v in range(3)
    ]
    orders = [
        order(f"o{i}", f"u{rng.randrange(12)}", T0 + i * 10 * S, i, f"p{rng.randrange(6)}")
        for i in range(240)
    ]
    return orders, users, products


def versions(docs: list[dict], key: str, value: str) -> dict[str, list[Record]]:
    """Each key's versions as the join keeps them (offsets by production order: the tests'
    topics have one partition)."""
    out: dict[str, list[Record]] = {}
    for i, doc in enumerate(docs):
        k = doc["user"]["id"] if key == "user" else doc[key]
        name = doc["user"]["name"] if key == "user" else doc[value]
        out.setdefault(k, []).append(Record(micros(doc), 0, i, name))
    return out


def user_names(o: dict, by_user: dict[str, list[Record]], mode: str, how: str) -> list:
    """Step 1's rows for order `o`: the names it joins (mode interval: every version inside
    the windows; latest: the one `pick` gives), or [None] for a left join without one."""
    tl, known = micros(o), by_user.get(o["user_id"], [])
    if mode == "interval":
        low, high = tl - USERS_WINDOWS.right_us, tl + USERS_WINDOWS.left_us
        names = [u.payload for u in known if low <= u.et <= high]
    else:
        picked = pick(Record(tl, 0, 0, ""), known, USERS_WINDOWS)
        names = [] if picked is None else [picked.payload]
    return names or ([None] if how == "left" else [])


def produce(broker, produce_messages, name: str, orders, users, products) -> None:
    for topic, docs, key in (
        ("orders", orders, "order_id"),
        ("users", users, "user"),
        ("products", products, "id"),
    ):
        broker.create_topic(f"{name}_{topic}", 1)
        produce_messages(f"{name}_{topic}", encode(docs, key))


def rows_of(runner: PipelineRunner, table: str) -> Counter:
    return Counter(runner.writer.query_rows(f"SELECT order_id, name, title, amount FROM {table}"))


def run_with_a_jump(
    runner: PipelineRunner, want: Counter, produce_messages, name: str, ahead_product=None
) -> dict:
    """Run until the rows of `want` without a NULL are written but one (AHEAD's), then produce
    AHEAD with its user (and `ahead_product`): every source's watermark moves past every
    window at once; run until all of `want` is written; return the stats."""
    matched = sum(n for row, n in want.items() if None not in row) - 1
    pushed = [
        (f"{name}_users", encode([user("ua", "na", T0 + 48 * H)], "user")),
        *([(f"{name}_products", encode([ahead_product], "id"))] if ahead_product else []),
        (f"{name}_orders", encode([AHEAD], "order_id")),
    ]

    def done() -> bool:
        if runner.stats.written < matched:
            return False
        if pushed:
            for topic, messages in pushed:
                produce_messages(topic, messages)
            pushed.clear()
            return False
        return runner.stats.written >= sum(want.values())

    return run_until(runner, done)


def test_interval_then_latest_is_exact(broker, chdb_path, tmp_path, unique_name, produce_messages):
    """Step 1 interval (a row per order and user version inside the windows), step 2 latest
    (each of those rows once, with the product version current at the order's time), inner;
    a malformed order and product go to the DLQ, counted."""
    orders, users, products = streams(seed=3)
    produce(broker, produce_messages, unique_name, orders, users, products)
    produce_messages(f"{unique_name}_orders", [(b"x", b"{not json")])
    produce_messages(f"{unique_name}_products", [(b"y", b'{"id": 5')])
    steps = [{"mode": "interval", **USERS_STEP}, products_step("latest", time_window="40m")]
    doc = orders_users_products_doc(broker, chdb_path, tmp_path, unique_name, steps)
    pipeline = parse_pipeline(doc)
    stats = PipelineRunner(pipeline).run(until_caught_up=True).stats

    by_user = versions(users, "user", "")
    by_product = versions(products, "id", "title")
    want: Counter = Counter()
    for o in orders:
        p = pick(Record(micros(o), 0, 0, ""), by_product.get(o["product_id"], []), PRODUCTS_WINDOWS)
        for name in user_names(o, by_user, "interval", "inner") if p is not None else []:
            want[(o["order_id"], name, p.payload, o["amount"])] += 1
    runner = PipelineRunner(pipeline)
    assert sum(want.values()) > len(orders) // 2  # most orders join, some twice
    assert rows_of(runner, pipeline.sink.table) == want
    dlq = runner.writer.query_rows(f"SELECT source, stage FROM {pipeline.dlq_table} ORDER BY 1")
    assert dlq == [("orders", "parse"), ("products", "parse")]
    assert stats["read"] == len(orders) + len(users) + len(products) + 2
    assert stats["written"] == sum(want.values()) and stats["dlq"] == 2
    assert stats["late_dropped"] == 0


@pytest.mark.parametrize(("mode", "how"), [("latest", "inner"), ("interval", "left")])
def test_then_table_left_outer_and_late_records(
    mode, how, broker, chdb_path, tmp_path, unique_name, produce_messages
):
    """Step 1 latest inner (each order once, with the user version current at its time) or
    interval left (orders of u10, u11 written with a NULL name once the watermark passes
    their time + 1h: rows behind the watermark that the next step must not drop), step 2 a
    left join with products as a table (the value written last): orders of p5 (no value) are
    written with a NULL title once the watermark passes their time + 20m. Records behind the
    watermark afterwards are dropped from the join and counted, not written."""
    orders, users, products = streams(seed=4)
    produce(broker, produce_messages, unique_name, orders, users, products)
    steps = [{"mode": mode, "type": how, **USERS_STEP}, products_step("table", "left")]
    doc = orders_users_products_doc(broker, chdb_path, tmp_path, unique_name, steps)
    pipeline = parse_pipeline(doc)
    table = pipeline.sink.table

    by_user = versions(users, "user", "")
    value = {p["id"]: p["title"] for p in products}  # the one written last per key
    want: Counter = Counter()
    for o in orders:
        for name in user_names(o, by_user, mode, how):
            want[(o["order_id"], name, value.get(o["product_id"]), o["amount"])] += 1
    # an order two days later (with its user) moves the watermark past every window
    want[("ahead", "na", value["p0"], 999.0)] += 1
    assert sum(1 for row in want if row[2] is None) >= 5  # p5's orders
    assert how == "inner" or sum(1 for row in want if row[1] is None) >= 5  # u10's, u11's

    runner = PipelineRunner(pipeline)
    stats = run_with_a_jump(runner, want, produce_messages, unique_name)
    assert rows_of(runner, table) == want
    assert stats["late_dropped"] == 0

    # behind the watermark (two days back): dropped by the step that reads them, counted
    produce_messages(
        f"{unique_name}_orders", encode([order("late", "u1", T0, 1, "p1")], "order_id")
    )
    produce_messages(f"{unique_name}_users", encode([user("u1", "late", T0)], "user"))
    stats = PipelineRunner(pipeline).run(until_caught_up=True).stats
    assert stats["read"] == 2 and stats["late_dropped"] == 2
    assert rows_of(PipelineRunner(pipeline), table) == want


def titles(tl: int, known: list[Record], how: str) -> list:
    """An interval products step's titles for a row at `tl`: every version inside the
    windows (left 20m, right 40m), or [None] for a left join without one."""
    low, high = tl - PRODUCTS_WINDOWS.right_us, tl + PRODUCTS_WINDOWS.left_us
    names = [p.payload for p in known if low <= p.et <= high]
    return names or ([None] if how == "left" else [])


def chain_rows(orders, users, products, how: str) -> Counter:
    """The reference of a latest users step then an interval products step, both `how`."""
    by_user, by_product = versions(users, "user", ""), versions(products, "id", "title")
    want: Counter = Counter()
    for o in orders:
        for name in user_names(o, by_user, "latest", how):
            for title in titles(micros(o), by_product.get(o["product_id"], []), how):
                want[(o["order_id"], name, title, o["amount"])] += 1
    return want


def test_latest_then_interval_is_exact(broker, chdb_path, tmp_path, unique_name, produce_messages):
    """Step 2 interval after a latest step, inner: a row per product version inside the
    windows measured from the order's time (several for some orders, none for others)."""
    orders, users, products = streams(seed=5)
    produce(broker, produce_messages, unique_name, orders, users, products)
    steps = [{"mode": "latest", **USERS_STEP}, products_step("interval", time_window="40m")]
    doc = orders_users_products_doc(broker, chdb_path, tmp_path, unique_name, steps)
    pipeline = parse_pipeline(doc)
    stats = PipelineRunner(pipeline).run(until_caught_up=True).stats

    want = chain_rows(orders, users, products, "inner")
    per_order = Counter(row[0] for row in want.elements())
    assert max(per_order.values()) >= 2  # several versions in the window: several rows
    by_product = versions(products, "id", "title")
    assert any(  # a product with versions, none inside an order's window: no row
        o["product_id"] in by_product and not titles(micros(o), by_product[o["product_id"]], "")
        for o in orders
    )
    assert rows_of(PipelineRunner(pipeline), pipeline.sink.table) == want
    assert stats["written"] == sum(want.values()) and stats["late_dropped"] == 0


def test_interval_later_step_left_outer_after_a_jump(
    broker, chdb_path, tmp_path, unique_name, produce_messages
):
    """Latest left then interval left: orders of u10, u11 leave step 1 (NULL name) only when
    an order two days later moves the watermark past every window at once, so Spark's event
    time of those rows is far behind the watermark of the batch; step 2 still joins them with
    every product version around the order's time, and writes a NULL title (p5) once the
    window passed."""
    orders, users, products = streams(seed=6)
    produce(broker, produce_messages, unique_name, orders, users, products)
    steps = [
        {"mode": "latest", "type": "left", **USERS_STEP},
        products_step("interval", "left", time_window="40m"),
    ]
    doc = orders_users_products_doc(broker, chdb_path, tmp_path, unique_name, steps)
    pipeline = parse_pipeline(doc)
    want = chain_rows(orders, users, products, "left")
    want[("ahead", "na", "t-ahead", 999.0)] += 1
    late_left = [row for row in want if row[1] is None]
    assert sum(1 for row in late_left if row[2] is not None) >= 3  # joined after the jump
    assert sum(1 for row in want if row[2] is None) >= 3  # p5's orders

    runner = PipelineRunner(pipeline)
    ahead_product = product("p0", "t-ahead", T0 + 48 * H)
    stats = run_with_a_jump(runner, want, produce_messages, unique_name, ahead_product)
    assert stats["late_dropped"] == 0, stats
    assert rows_of(runner, pipeline.sink.table) == want


@pytest.mark.parametrize("last", ["table", "interval"])
def test_kill_9_mid_run_then_resume_writes_each_row_once(
    last, broker, tmp_path, unique_name, produce_messages
):
    """`streamsift run` of an interval-then-table (or -interval) chain killed (SIGKILL) right
    after its 3rd insert, inside a micro-batch that is then re-run, and run to the end: each
    (order, user version) row once, with its product's value (interval: once per product
    version, both inside the windows). Two user versions per order make two rows per order
    that share the products step's right record: only the chain's hash of both right
    positions tells them apart in the sink's sort."""
    n = 1_500 if last == "table" else 400
    orders = [order(f"o{i}", f"u{i % 105}", T0 + i * S, i, f"p{i % 22}") for i in range(n)]
    users = [user(f"u{u}", f"n{u}-{v}", T0 + v * M) for v in range(2) for u in range(100)]
    products = [product(f"p{p}", f"t{p}-{v}", T0) for v in range(2) for p in range(20)]
    produce(broker, produce_messages, unique_name, orders, users, products)
    ep = Endpoint(tmp_path / "clickhouse")
    try:
        second = (
            products_step("table") if last == "table" else products_step(last, time_window="40m")
        )
        steps = [{"mode": "interval", **USERS_STEP}, second]
        clickhouse = {"host": "127.0.0.1", "port": ep.port}
        doc = chain_doc(unique_name, steps, broker.bootstrap_servers, clickhouse, tmp_path / "cp")
        doc["sink"]["max_batch_size"] = 200
        doc["runtime"]["max_rows_per_batch"] = 500
        table = doc["sink"]["table"]
        partial = killed_then_resumed(doc, tmp_path, lambda: ep.count(table))
        rows = Counter(ep.client.query(f"SELECT order_id, name, title FROM {table}").result_rows)
        of_product = {p["id"]: [p["title"]] for p in products}  # table: the one written last
        if last == "interval":
            of_product = {k: [p["title"] for p in products if p["id"] == k] for k in of_product}
        want = Counter(
            (o["order_id"], u["user"]["name"], title)
            for o in orders
            for u in users
            if u["user"]["id"] == o["user_id"]
            for title in of_product.get(o["product_id"], [])
        )
        assert 0 < partial < sum(want.values())
        assert rows == want
    finally:
        ep.stop()
