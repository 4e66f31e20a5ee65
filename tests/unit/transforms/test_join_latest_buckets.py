"""`join.mode: latest` grouped by buckets of keys (transforms/join/latest_buckets.py): the same
rows as the processor grouped by key, batch by batch, on random histories; and the round
trips a bucket costs."""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

import pytest

from streamsift.transforms.join.latest import LatestJoinProcessor, LatestRule, joined_row
from streamsift.transforms.join.latest_buckets import BucketedJoinProcessor, split_record
from streamsift.transforms.join.latest_rule import Windows
from support.timer_values import Clock, Expired

S_MS = 1_000
W = Windows(left_us=30 * S_MS * 1000, right_us=60 * S_MS * 1000)


class Spark:
    """Spark's side of `transformWithState`, as far as a processor sees it: a value state and
    event-time timers per grouping key, input rows handed over per key, then the timers the
    batch's watermark is past fired (strictly, as Spark's TimerStateImpl.getExpiredTimers;
    those of keys whose input deleted them do not)."""

    def __init__(self, processor: Any) -> None:
        self.processor = processor
        self.states: dict[Any, Any] = {}
        self.timers: dict[Any, set[int]] = {}
        self.key: Any = None
        self.calls = Counter[str]()
        processor.init(self)

    # the handle
    def getValueState(self, name: str, schema: str) -> Spark:  # noqa: N802 (Spark's API)
        return self

    def listTimers(self) -> list[int]:  # noqa: N802
        self.calls["listTimers"] += 1
        return sorted(self.timers.get(self.key, ()))

    def registerTimer(self, ms: int) -> None:  # noqa: N802
        self.calls["registerTimer"] += 1
        self.timers.setdefault(self.key, set()).add(ms)

    def deleteTimer(self, ms: int) -> None:  # noqa: N802
        self.calls["deleteTimer"] += 1
        self.timers.get(self.key, set()).discard(ms)

    # the value state
    def get(self) -> Any:
        self.calls["get"] += 1
        return self.states.get(self.key)

    def update(self, value: Any) -> None:
        self.calls["update"] += 1
        self.states[self.key] = value

    def clear(self) -> None:
        self.calls["clear"] += 1
        self.states.pop(self.key, None)

    def batch(self, rows: dict[Any, list[dict[str, str]]], watermark_ms: int) -> list[Any]:
        clock = Clock(watermark_ms)
        out: list[Any] = []
        for key, key_rows in rows.items():
            self.key = key
            out += self.processor.handleInputRows(key, iter(key_rows), clock)
        for key in sorted(self.timers, key=repr):
            for ms in sorted(t for t in self.timers[key] if t < watermark_ms):  # strictly
                if ms in self.timers[key]:
                    self.key = key
                    self.timers[key].discard(ms)  # Spark removes a timer as it fires
                    out += self.processor.handleExpiredTimer(key, clock, Expired(ms))
        return out


def row_tuple(row: Any) -> tuple:
    return (row._lp, row._rp, row._rpartition, row._roffset)


def bucketed(left_outer: bool) -> BucketedJoinProcessor:
    row = lambda *a: joined_row(False, None, *a)  # noqa: E731
    return BucketedJoinProcessor(LatestRule(W), left_outer, row)


def as_bucketed(key: str | None, side: str, et_ms: int, offset: int, fields: str) -> dict:
    key_text = "" if key is None else f'{{"_jk0":"{key}"}}'
    text = f"{side}|{et_ms * 1000}|0|{offset}|{len(key_text)}|{key_text}{fields}"
    return {"_record": text}


def history(seed: int, keys: int, batches: int) -> list[tuple[list[tuple], int]]:
    """Random batches of (key, side, event time ms, offset) with a watermark that trails the
    newest time by a few seconds; some records late, some keys NULL, ties on event time."""
    rng = random.Random(seed)
    offset, newest, out = 0, 0, []
    for _ in range(batches):
        records = []
        for _ in range(rng.randint(0, 40)):
            offset += 1
            key = rng.choice([None, *[f"k{i}" for i in range(keys)]])
            et = max(0, newest + rng.randint(-20, 25) * S_MS)
            records.append((key, rng.choice("LLLR"), et, offset))
        newest = max([newest, *[r[2] for r in records]])
        watermark = max(0, newest - 10 * S_MS)
        out.append((records, watermark))
        newest += rng.randint(0, 30) * S_MS
    return out


@pytest.mark.parametrize("left_outer", [False, True])
@pytest.mark.parametrize("seed", range(12))
def test_buckets_write_the_rows_a_processor_per_key_writes(seed: int, left_outer: bool):
    per_key = Spark(LatestJoinProcessor(LatestRule(W), left_outer))
    by_bucket = Spark(bucketed(left_outer))
    previous = 0
    for records, watermark in history(seed, keys=6, batches=30):
        # Spark drops rows behind the watermark of the batch before
        alive = [r for r in records if r[2] >= previous]
        keyed: dict[Any, list] = {}
        buckets: dict[Any, list] = {}
        for key, side, et, offset in alive:
            fields = f'{{"o":{offset},"bar":"a|b"}}'
            text = f"{side}|{et * 1000}|0|{offset}|{fields}"
            keyed.setdefault((key,), []).append({"_record": text})
            bucket = (hash(key) % 3,)  # three buckets, keys spread over them
            buckets.setdefault(bucket, []).append(as_bucketed(key, side, et, offset, fields))
        expected = Counter(map(row_tuple, per_key.batch(keyed, watermark)))
        assert Counter(map(row_tuple, by_bucket.batch(buckets, watermark))) == expected
        previous = watermark
    # and in the end both have nothing left, or the same keys waiting
    assert bool(per_key.states) == bool(by_bucket.states)


def test_a_bucket_of_many_keys_costs_one_read_one_write_and_one_timer():
    spark = Spark(bucketed(left_outer=True))
    rows = [as_bucketed(f"k{i}", side, 1_000, i, "{}") for i in range(50) for side in "RL"]
    out = spark.batch({(0,): rows}, watermark_ms=0)
    assert len(out) == 50  # each left record joined with its key's version
    assert spark.calls == Counter(get=1, update=1, registerTimer=1)
    spark.calls.clear()
    rows = [as_bucketed(f"k{i}", "L", 2_000, 100 + i, "{}") for i in range(50)]
    assert len(spark.batch({(0,): rows}, watermark_ms=500)) == 50
    assert spark.calls == Counter(get=1)  # nothing changed: no write, the timer stays


def test_a_null_key_never_matches_and_its_left_record_expires_alone():
    spark = Spark(bucketed(left_outer=True))
    rows = [as_bucketed(None, "R", 1_000, 1, '{"r":1}'), as_bucketed(None, "L", 1_000, 2, "{}")]
    assert spark.batch({(0,): rows}, watermark_ms=0) == []
    (row,) = spark.batch({}, watermark_ms=1_000 + 31 * S_MS)
    assert row_tuple(row) == ("{}", None, -1, -1)
    assert spark.states == {}  # nothing kept: the bucket's state is cleared


def test_a_record_splits_into_its_key_text_and_fields_whatever_they_hold():
    side, key_text, record = split_record('L|5|1|9|10|{"a":"|;"}{"f":"x|y"}')
    assert (side, key_text) == ("L", '{"a":"|;"}')
    assert (record.et, record.partition, record.offset, record.payload) == (5, 1, 9, '{"f":"x|y"}')


def test_a_waiting_record_expires_once_the_watermark_is_past_its_window_as_spark_fires():
    per_key = Spark(LatestJoinProcessor(LatestRule(W), left_outer=True))
    by_bucket = Spark(bucketed(left_outer=True))
    text = f"L|{1_000 * 1000}|0|1|{{}}"
    assert per_key.batch({("k",): [{"_record": text}]}, watermark_ms=0) == []
    assert by_bucket.batch({(0,): [as_bucketed("k", "L", 1_000, 1, "{}")]}, watermark_ms=0) == []
    end = 1_000 + 30 * S_MS  # the window's end (ms): the key's wake-up
    # a watermark at the wake-up fires no timer (Spark's is strictly past); another key's
    # input wakes the bucket, which must not run the waiting key before Spark would
    other = {"_record": f"L|{end * 1000}|0|2|{{}}"}
    assert per_key.batch({("j",): [other]}, watermark_ms=end) == []
    bucket_rows = [as_bucketed("j", "L", end, 2, "{}")]
    assert by_bucket.batch({(0,): bucket_rows}, watermark_ms=end) == []
    (keyed,) = per_key.batch({}, watermark_ms=end + 1)
    (row,) = by_bucket.batch({}, watermark_ms=end + 1)
    assert row_tuple(row) == row_tuple(keyed) == ("{}", None, -1, -1)
