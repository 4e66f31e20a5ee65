"""A restart must not let one join side's watermark run ahead of the other's.

Spark's checkpoint keeps only the query's global event-time watermark (the minimum over the
two sources' watermarks), not each source's. After a restart its watermark tracker knows no
source yet; if the first micro-batch held data of one side only and that side alone set the
global watermark, the other side's events arriving a bit later (in time for their own
stream's watermark, late only against the other stream's) would be dropped as late and lose
their join partners. Spark populates a watermark node without data with 0, so the minimum
should stay where the checkpoint left it; this test checks that on the real pipeline.

Three pipelines (inner join, allowed lateness 10m, windows as in test_join.py) read the same
event sequence from their own topics:

1. orders and users around T0 (both sides have data); the global watermark becomes the
   older side's newest event time minus 10m;
2. orders only, ten hours later (the left side's own watermark passes every T0 event);
3. users near T0 that match step 1's orders, not late against the users' own watermark,
   plus one user behind the global watermark of step 1 (dropped as late in every case).

`never`: one run from step 1 to the end, no restart (the control). `continue`: stopped after
step 1 and restarted when step 2 is in the topic, so its first batch holds orders only; step 3
arrives while that run goes on. `restart`: a run per step (availableNow), so the run of step 3
also starts from the checkpoint and its first batch holds users only. All three tables must
hold exactly the rows of the pure-Python join below (a pipeline that never restarted).
"""

from __future__ import annotations

import json
import threading
import time
from datetime import datetime, timezone

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.runner import PipelineRunner
from support.join_events import T0, H, M, encode, order, orders_join_users_doc, user
from support.waiting import wait_for

pytestmark = pytest.mark.integration

LATENESS = 10 * M  # the pipeline's join.allowed_lateness
LEFT_WINDOW, RIGHT_WINDOW = H, 30 * M  # tl - 30m <= tr <= tl + 1h
FAR = T0 + 10 * H  # step 2: far past T0 + windows + lateness

# step 1: the users' newest event (T0 + 6m) is older than the orders' (T0 + 7m)
ORDERS_1 = [order(f"o{i}", f"u{i}", T0 + i * M) for i in range(8)] + [order("oe", "ue", T0 - 2 * H)]
USERS_1 = [user(f"u{i}", f"a{i}", T0 + i * M) for i in range(0, 8, 2)] + [
    user("ue", "ea", T0 - 2 * H + M)
]
# step 2: orders only, ten hours on (some on the same keys; they match nothing)
ORDERS_2 = [order(f"f{i}", f"u{i}", FAR + i * M) for i in range(4)]
# step 3: users near T0 (T0+3m .. T0+10m, some older than step 1's newest user): each matches
# o{i}; and one user behind the watermark of step 1 (T0 - 4m)
USERS_3 = [user(f"u{i}", f"b{i}", T0 + (i + 3) * M) for i in range(8)] + [
    user("ue", "eb", T0 - 2 * H + 2 * M)
]


def ts(doc: dict) -> datetime:
    return datetime.fromisoformat(doc["ts"])


# What a pipeline that never restarts does: the watermark is the older side's newest event
# time minus the lateness (min policy); step 2 moves the orders' side only, so it stays here.
WATERMARK_AFTER_STEP_1 = min(max(map(ts, ORDERS_1)), max(map(ts, USERS_1))) - LATENESS
LATE_USERS = [u for u in USERS_3 if ts(u) < WATERMARK_AFTER_STEP_1]
assert [u["user"]["name"] for u in LATE_USERS] == ["eb"]
assert all(ts(u) >= max(map(ts, USERS_1)) - LATENESS for u in USERS_3 if u not in LATE_USERS)


def expected_rows(orders: list[dict], users: list[dict]) -> set[tuple[str, str, datetime]]:
    """Inner join pairs (order_id, name, order_ts); every key is unique, so no dedup."""
    return {
        (o["order_id"], u["user"]["name"], ts(o))
        for o in orders
        for u in users
        if u not in LATE_USERS
        and o["user_id"] == u["user"]["id"]
        and ts(o) - RIGHT_WINDOW <= ts(u) <= ts(o) + LEFT_WINDOW
    }


EXPECTED_STEP_1 = expected_rows(ORDERS_1, USERS_1)
EXPECTED = expected_rows(ORDERS_1 + ORDERS_2, USERS_1 + USERS_3)
assert len(EXPECTED_STEP_1) == 5 and len(EXPECTED) == 13  # 8 rows from step 3's users


def table_rows(runner: PipelineRunner) -> set[tuple[str, str, datetime]]:
    rows = runner.writer.query_rows(
        f"SELECT order_id, name, order_ts FROM {runner.pipeline.sink.table}"
    )
    assert len(rows) == len(set(rows)), f"duplicate rows: {sorted(rows)}"
    return {(o, n, t.replace(tzinfo=timezone.utc)) for o, n, t in rows}


def diff(got: set, want: set) -> str:
    return f"missing {sorted(want - got)}, extra {sorted(got - want)}"


SETTLE_S = 4.0  # a few trigger intervals (sink.max_delay_time 1s): any no-data batch has run


def checkpoint_watermark(runner: PipelineRunner) -> datetime:
    """The global watermark of the newest micro-batch in the checkpoint's offset log."""
    offsets = runner.checkpoint / "spark" / "offsets"
    newest = max((p for p in offsets.iterdir() if p.name.isdigit()), key=lambda p: int(p.name))
    meta = json.loads(newest.read_text().splitlines()[1])
    return datetime.fromtimestamp(meta["batchWatermarkMs"] / 1000, timezone.utc)


class LiveRun:
    """A continuous run in a thread; wait for conditions in between, then stop it."""

    def __init__(self, runner: PipelineRunner) -> None:
        self.runner = runner
        self.result: dict = {}
        self.thread = threading.Thread(target=lambda: self.result.update(r=runner.run()))

    def __enter__(self) -> LiveRun:
        self.thread.start()
        return self

    def wait(self, what: str, done, timeout: float = 90.0) -> None:
        def check() -> bool:
            if done():
                return True
            assert self.thread.is_alive(), f"the run ended while waiting for {what}"
            return False

        wait_for(check, timeout, what=what, interval=0.3)

    def __exit__(self, *exc) -> None:
        self.runner.stop()
        self.thread.join(120)
        assert exc[0] is not None or "r" in self.result, "the pipeline did not stop"


def test_restart_with_one_sided_first_batch_keeps_the_other_sides_events(
    broker, chdb_path, tmp_path, unique_name, produce_messages
):
    pipelines = {}
    for mode in ("never", "continue", "restart"):
        name = f"{unique_name}_{mode}"
        broker.create_topic(f"{name}_orders", 2)
        broker.create_topic(f"{name}_users", 2)
        doc = orders_join_users_doc(broker, chdb_path, tmp_path, name, "inner", "10m")
        doc["runtime"]["checkpoint_dir"] = str(tmp_path / mode)
        pipelines[mode] = parse_pipeline(doc)

    def produce(mode: str, orders: list[dict], users: list[dict]) -> None:
        if orders:
            produce_messages(f"{unique_name}_{mode}_orders", encode(orders, "order_id"))
        if users:
            produce_messages(f"{unique_name}_{mode}_users", encode(users, "user"))

    n1, n2, n3 = len(ORDERS_1) + len(USERS_1), len(ORDERS_2), len(USERS_3)

    def step_1_then_stop(mode: str) -> list[datetime]:
        """Step 1 caught up and stopped; step 2's orders wait in Kafka. The watermark after it."""
        produce(mode, ORDERS_1, USERS_1)
        runner = PipelineRunner(pipelines[mode])
        assert runner.run(until_caught_up=True).stats["read"] == n1
        assert table_rows(runner) == EXPECTED_STEP_1
        produce(mode, ORDERS_2, [])
        return [checkpoint_watermark(runner)]

    watermarks: dict[str, list[datetime]] = {}
    late: dict[str, int] = {}

    # never: one continuous run through all three steps
    produce("never", ORDERS_1, USERS_1)
    runner = PipelineRunner(pipelines["never"])
    with LiveRun(runner) as live:
        live.wait("step 1", lambda: runner.stats.read >= n1)
        assert table_rows(runner) == EXPECTED_STEP_1
        time.sleep(SETTLE_S)
        wm = [checkpoint_watermark(runner)]
        produce("never", ORDERS_2, [])
        live.wait("step 2", lambda: runner.stats.read >= n1 + n2)
        time.sleep(SETTLE_S)
        wm.append(checkpoint_watermark(runner))
        produce("never", [], USERS_3)
        live.wait("step 3", lambda: runner.stats.read >= n1 + n2 + n3)
    watermarks["never"], late["never"] = wm, runner.stats.late_dropped
    never = table_rows(runner)

    # continue: step 1 caught up; restart on orders only; users arrive in that same run
    wm = step_1_then_stop("continue")
    runner = PipelineRunner(pipelines["continue"])
    with LiveRun(runner) as live:
        live.wait("step 2", lambda: runner.stats.read >= n2)  # a batch of orders only
        time.sleep(SETTLE_S)  # had it moved the watermark, the join would have acted on it
        wm.append(checkpoint_watermark(runner))
        produce("continue", [], USERS_3)
        live.wait("step 3", lambda: runner.stats.read >= n2 + n3)
    watermarks["continue"], late["continue"] = wm, runner.stats.late_dropped
    resumed = table_rows(runner)

    # restart: one availableNow run per step
    wm = step_1_then_stop("restart")
    runner = PipelineRunner(pipelines["restart"])
    stats = runner.run(until_caught_up=True).stats
    assert (stats["read"], stats["written"]) == (n2, 0)  # orders only, matching nothing
    wm.append(checkpoint_watermark(runner))
    produce("restart", [], USERS_3)
    runner = PipelineRunner(pipelines["restart"])
    stats = runner.run(until_caught_up=True).stats
    assert stats["read"] == n3
    watermarks["restart"], late["restart"] = wm, stats["late_dropped"]
    restarted = table_rows(runner)

    print(f"\nexpected {len(EXPECTED)} rows; never {len(never)}, continue {len(resumed)}, ")
    print(f"restart {len(restarted)}; behind the join watermark (step 3): {late}")
    print(f"global watermark after step 1, step 2: {watermarks}")
    assert never == EXPECTED, f"no restart: {diff(never, EXPECTED)}"
    assert resumed == never, f"restart, then users in the same run: {diff(resumed, never)}"
    assert restarted == never, f"restart, then users in another run: {diff(restarted, never)}"
    assert late == {"never": 1, "continue": 1, "restart": 1}
    for mode, (after_1, after_2) in watermarks.items():
        assert after_1 == WATERMARK_AFTER_STEP_1, (mode, after_1)
        assert after_2 == WATERMARK_AFTER_STEP_1, f"{mode}: step 2 moved it to {after_2}"
