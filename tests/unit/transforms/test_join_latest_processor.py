"""The `transformWithState` processor of `join.mode: latest` (transforms/join/latest.py) with a
fake handle: what it writes, and that a key keeps one timer, at its next wake-up."""

from __future__ import annotations

from typing import Any

from streamsift.transforms.join.latest import LatestJoinProcessor, LatestRule
from streamsift.transforms.join.latest_rule import Windows
from support.timer_values import Clock, Expired

M_MS = 60_000  # a minute in ms
W = Windows(left_us=60 * M_MS * 1000, right_us=30 * M_MS * 1000)


class FakeState:
    """Spark's ValueState: get() answers None for a key without state (no exists() here:
    the processor must not spend a round trip on it)."""

    def __init__(self) -> None:
        self.value: tuple[str, str] | None = None
        self.calls = 0

    def get(self) -> tuple[str, str] | None:
        self.calls += 1
        return self.value

    def update(self, value: tuple[str, str]) -> None:
        self.calls += 1
        self.value = value

    def clear(self) -> None:
        self.calls += 1
        self.value = None


class FakeHandle:
    def __init__(self) -> None:
        self.state = FakeState()
        self.timers: set[int] = set()
        self.calls = 0

    def getValueState(self, name: str, schema: str) -> FakeState:  # noqa: N802 (Spark's API)
        return self.state

    def listTimers(self) -> list[int]:  # noqa: N802
        self.calls += 1
        return sorted(self.timers)

    def registerTimer(self, ms: int) -> None:  # noqa: N802
        self.calls += 1
        self.timers.add(ms)

    def deleteTimer(self, ms: int) -> None:  # noqa: N802
        self.calls += 1
        self.timers.discard(ms)


def record(side: str, minute: int, offset: int, fields: str) -> dict[str, Any]:
    return {"_record": f"{side}|{minute * M_MS * 1000}|0|{offset}|{fields}"}


def processor(left_outer: bool = True) -> tuple[LatestJoinProcessor, FakeHandle]:
    p, handle = LatestJoinProcessor(LatestRule(W), left_outer), FakeHandle()
    p.init(handle)  # type: ignore[arg-type]
    return p, handle


def test_a_left_record_waits_then_takes_the_first_version_with_one_timer():
    p, handle = processor()
    rows = list(p.handleInputRows(("u1",), iter([record("L", 0, 1, '{"o":1}')]), Clock(0)))
    assert rows == [] and handle.timers == {60 * M_MS}  # its window ends at +1h
    rows = list(p.handleInputRows(("u1",), iter([record("R", 50, 7, '{"n":"p"}')]), Clock(M_MS)))
    assert [(r._lp, r._rp, r._roffset) for r in rows] == [('{"o":1}', '{"n":"p"}', 7)]
    assert handle.timers == {80 * M_MS}  # only the version is left: it expires 30m after 50m


def test_an_expired_timer_writes_the_null_row_and_clears_the_key():
    p, handle = processor()
    list(p.handleInputRows(("u1",), iter([record("L", 0, 1, '{"o":1}')]), Clock(0)))
    (row,) = p.handleExpiredTimer(("u1",), Clock(61 * M_MS), Expired(60 * M_MS))  # type: ignore[arg-type]
    assert (row._lp, row._rp, row._rpartition, row._roffset) == ('{"o":1}', None, -1, -1)
    assert handle.state.value is None
    assert handle.timers == {60 * M_MS}  # the expired timer goes by itself, not deleted here


def test_an_inner_join_writes_nothing_for_an_expired_record():
    p, _ = processor(left_outer=False)
    list(p.handleInputRows(("u1",), iter([record("L", 0, 1, "{}")]), Clock(0)))
    assert list(p.handleExpiredTimer(("u1",), Clock(61 * M_MS), Expired(60 * M_MS))) == []  # type: ignore[arg-type]


def test_an_unchanged_wake_up_costs_no_timer_call():
    p, handle = processor()
    list(p.handleInputRows(("u1",), iter([record("L", 0, 1, "{}")]), Clock(0)))
    handle.calls = 0
    list(p.handleInputRows(("u1",), iter([record("L", 5, 2, "{}")]), Clock(0)))
    assert handle.timers == {60 * M_MS} and handle.calls == 0  # the state says which timer


def test_a_new_key_reads_its_state_once_and_lists_no_timers():
    p, handle = processor()
    list(p.handleInputRows(("u1",), iter([record("L", 0, 1, "{}")]), Clock(0)))
    assert handle.state.calls == 2  # get, update
    assert handle.calls == 1 and handle.timers == {60 * M_MS}  # registerTimer only


def test_a_new_key_left_with_nothing_writes_no_state():
    p, handle = processor()
    assert list(p.handleInputRows((None,), iter([record("R", 0, 1, "{}")]), Clock(0))) == []
    assert handle.state.calls == 1 and handle.calls == 0  # get only: a NULL key keeps nothing


def test_a_state_without_its_timer_lists_the_timers_once_then_keeps_them():
    p, handle = processor()
    list(p.handleInputRows(("u1",), iter([record("L", 0, 1, "{}")]), Clock(0)))
    rights, lefts = handle.state.value  # type: ignore[misc]
    handle.state.value = (rights, lefts.partition(";")[2])  # as written before the timer was
    handle.calls = 0
    list(p.handleInputRows(("u1",), iter([record("L", 5, 2, "{}")]), Clock(0)))
    assert handle.calls == 1 and handle.timers == {60 * M_MS}  # listTimers, nothing moved
    assert handle.state.value[1].startswith("@3600000;")  # type: ignore[index]
    handle.calls = 0
    list(p.handleInputRows(("u1",), iter([record("L", 6, 3, "{}")]), Clock(0)))
    assert handle.calls == 0
