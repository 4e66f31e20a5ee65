"""The rule of `join.mode: table` (transforms/join/table_rule.py): the value is the right
record written last unless a tombstone or the ttl removed it; left records join it once, or
wait for the first batch with a value until their window passes."""

from __future__ import annotations

import itertools

from streamsift.transforms.join.latest import LatestJoinProcessor
from streamsift.transforms.join.latest_rule import Record
from streamsift.transforms.join.table_rule import TableRule, current_value

M = 60_000_000  # a minute in µs
RULE = TableRule(left_us=60 * M, ttl_us=120 * M)


def r(minute: int, offset: int, payload: str = "", partition: int = 0) -> Record:
    return Record(minute * M, partition, offset, payload)


def test_the_value_is_the_one_written_last_not_the_newest_event_time():
    value = current_value(None, [r(10, 1, "a"), r(5, 2, "b")], [], 0, None)
    assert value == r(5, 2, "b")  # a compacted topic keeps the last written


def test_a_tombstone_deletes_and_a_later_value_restores():
    v = r(0, 1, "a")
    assert current_value(v, [], [r(1, 2)], 0, None) is None
    assert current_value(v, [r(2, 3, "b")], [r(1, 2)], 0, None) == r(2, 3, "b")
    assert current_value(v, [r(2, 3, "b")], [r(1, 4)], 0, None) is None


def test_the_ttl_counts_from_the_value_time_against_the_watermark():
    v = r(0, 1, "a")
    assert current_value(v, [], [], 120 * M - 1, 120 * M) == v
    assert current_value(v, [], [], 120 * M, 120 * M) is None
    assert current_value(v, [], [], 10**15, None) == v  # no ttl: kept


def test_left_records_join_the_value_after_the_batch_whatever_the_order():
    lefts = [r(5, 10, "L1"), r(6, 11, "L2")]
    rights = [r(1, 1, "p1"), r(2, 2, "p2")]
    results = {
        RULE((), (), list(rs), [], list(ls), 0).matched
        for rs in itertools.permutations(rights)
        for ls in itertools.permutations(lefts)
    }
    assert results == {((lefts[0], rights[1]), (lefts[1], rights[1]))}


def test_a_left_record_waits_for_the_first_value_then_expires():
    waiting = RULE((), (), [], [], [r(5, 10, "L")], 0)
    assert waiting.matched == () and waiting.lefts == (r(5, 10, "L"),)
    assert waiting.wake_us == 65 * M
    joined = RULE((), waiting.lefts, [r(30, 1, "p")], [], [], 0)
    assert joined.matched == ((r(5, 10, "L"), r(30, 1, "p")),) and joined.lefts == ()
    assert joined.rights == (r(30, 1, "p"),) and joined.wake_us == 150 * M  # the value's ttl
    expired = RULE((), waiting.lefts, [], [], [], 65 * M)
    assert expired.expired == (r(5, 10, "L"),) and expired.wake_us is None


def test_a_null_key_keeps_no_value():
    step = RULE((), (), [r(0, 1, "p")], [], [r(1, 2, "L")], 0, key_is_null=True)
    assert step.matched == () and step.rights == ()


class State:
    def __init__(self) -> None:
        self.value = None

    def exists(self):
        return self.value is not None

    def get(self):
        return self.value

    def update(self, value):
        self.value = value

    def clear(self):
        self.value = None


class Handle:
    def __init__(self) -> None:
        self.state, self.timers = State(), set()

    def getValueState(self, name, schema):  # noqa: N802 (Spark's API)
        return self.state

    def listTimers(self):  # noqa: N802
        return sorted(self.timers)

    def registerTimer(self, ms):  # noqa: N802
        self.timers.add(ms)

    def deleteTimer(self, ms):  # noqa: N802
        self.timers.discard(ms)


class Clock:
    def getCurrentWatermarkInMs(self):  # noqa: N802
        return 0


def test_the_processor_keeps_a_value_without_a_timer_and_a_tombstone_clears_it():
    p, handle = LatestJoinProcessor(TableRule(60 * M), False), Handle()
    p.init(handle)
    assert list(p.handleInputRows(("u1",), iter([{"_record": 'R|0|0|1|{"n":"a"}'}]), Clock())) == []
    assert handle.state.value is not None and handle.timers == set()  # kept, nothing to wake
    (row,) = p.handleInputRows(("u1",), iter([{"_record": 'L|0|0|5|{"o":1}'}]), Clock())
    assert (row._lp, row._rp, row._roffset) == ('{"o":1}', '{"n":"a"}', 1)
    assert list(p.handleInputRows(("u1",), iter([{"_record": "T|0|0|2|"}]), Clock())) == []
    assert handle.state.value is None
