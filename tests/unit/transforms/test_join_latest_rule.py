"""`join.mode: latest`'s rule for one key (transforms/join/latest_rule.py), without Spark."""

from __future__ import annotations

import itertools
import random

from streamsift.transforms.join.latest_rule import (
    Record,
    Windows,
    decode,
    encode,
    pick,
    pick_sorted,
    step,
)

M = 60_000_000  # a minute in µs
W = Windows(left_us=60 * M, right_us=30 * M)  # left waits 1h for later versions; right 30m


def rec(minute: float, offset: int, payload: str = "", partition: int = 0) -> Record:
    return Record(int(minute * M), partition, offset, payload or f"@{minute}")


def test_newest_version_at_or_before_the_left_time_wins():
    versions = [rec(0, 1, "v1"), rec(10, 2, "v2"), rec(20, 3, "v3")]
    assert pick(rec(15, 9), versions, W).payload == "v2"
    assert pick(rec(20, 9), versions, W).payload == "v3"  # equal event times: tr <= tl
    assert pick(rec(45, 9), versions, W).payload == "v3"
    assert pick(rec(50.5, 9), versions, W) is None  # v3 is more than 30m before


def test_without_a_version_before_the_earliest_after_wins_within_the_left_window():
    versions = [rec(70, 1, "late"), rec(30, 2, "a"), rec(40, 3, "b")]
    assert pick(rec(10, 9), versions, W).payload == "a"
    assert pick(rec(-31, 9), versions, W) is None  # 30m is more than 1h after -31m


def test_ties_on_equal_event_times_go_by_kafka_position():
    versions = [rec(10, 5, "p0o5"), rec(10, 7, "p0o7"), rec(10, 2, "p1o2", partition=1)]
    assert pick(rec(12, 9), versions, W).payload == "p1o2"  # before: the last written
    assert pick(rec(10, 9), versions, W).payload == "p1o2"
    assert pick(rec(5, 9), versions, W).payload == "p0o5"  # after: the first written


def test_a_waiting_left_record_takes_the_first_version_that_arrives():
    left = rec(0, 1, "L")
    first = step((), (), [], [left], 0, W)
    assert first.matched == () and first.lefts == (left,) and first.wake_us == 60 * M
    second = step(first.rights, first.lefts, [rec(50, 4, "late-profile")], [], 10 * M, W)
    assert [(lt.payload, rt.payload) for lt, rt in second.matched] == [("L", "late-profile")]
    assert second.lefts == ()
    third = step(second.rights, second.lefts, [rec(55, 5, "newer")], [], 20 * M, W)
    assert third.matched == ()  # joined once: a later version does not write another row


def test_unmatched_left_expires_once_the_watermark_passes_its_window():
    left = rec(0, 1, "L")
    s = step((), (left,), [], [], 60 * M - 1, W)
    assert s.expired == () and s.lefts == (left,)
    s = step((), (left,), [], [], 60 * M, W)
    assert s.expired == (left,) and s.lefts == () and s.wake_us is None


def test_null_key_never_matches_and_keeps_no_versions():
    s = step((), (), [rec(0, 1)], [rec(0, 2, "L")], 0, W, key_is_null=True)
    assert s.matched == () and s.rights == () and [r.payload for r in s.lefts] == ["L"]


def test_prune_keeps_only_the_versions_a_later_left_record_can_pick():
    versions = [rec(0, 1, "v1"), rec(10, 2, "v2"), rec(20, 3, "v3"), rec(200, 4, "v4")]
    s = step(tuple(versions), (), [], [], 100 * M, W)
    assert [r.payload for r in s.rights] == ["v4"]  # v1-v3 are > 30m before the watermark
    s = step(tuple(versions), (), [], [], 25 * M, W)
    assert [r.payload for r in s.rights] == ["v3", "v4"]  # v3 settles the past
    assert s.wake_us == 230 * M


def test_same_rows_whatever_the_split_and_order_of_a_batch():
    rng = random.Random(7)
    rights = [rec(rng.randrange(0, 120), i, f"r{i}") for i in range(12)]
    lefts = [rec(rng.randrange(0, 120), 100 + i, f"l{i}") for i in range(12)]
    want = step((), (), rights, lefts, 0, W)
    for _ in range(20):
        rng.shuffle(rights)
        rng.shuffle(lefts)
        got = step((), (), rights, lefts, 0, W)
        assert sorted(got.matched) == sorted(want.matched) and got.lefts == want.lefts


def test_the_sorted_lookup_picks_what_pick_picks():
    rng = random.Random(11)
    for _ in range(300):
        rights = sorted(
            (
                rec(rng.randrange(0, 100), rng.randrange(50), partition=rng.randrange(2))
                for _ in range(rng.randrange(8))
            ),
            key=lambda r: (r.et, r.partition, r.offset),
        )
        left = rec(rng.randrange(-40, 140), 999)
        assert pick_sorted(left, rights, [r.et for r in rights], W) == pick(left, rights, W)


def test_state_round_trips_through_its_text():
    records = (rec(1.5, 3, 'x"y'), rec(-2, 2**40, "{}", partition=7))
    assert decode(encode(records)) == records
    assert decode(None) == () and decode("") == ()


def test_each_left_record_gives_at_most_one_row():
    rights = [rec(t, i) for i, t in enumerate((0, 5, 5, 30, 90))]
    for t in itertools.chain(range(-40, 160, 5)):
        s = step((), (), rights, [rec(t, 999)], 0, W)
        assert len(s.matched) + len(s.lefts) == 1
