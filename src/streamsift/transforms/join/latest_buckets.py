"""`join.mode: latest`'s keys kept in buckets: Spark groups the rows by a bucket of the join
key, not by the key, and the processor runs the rule (transforms/join/latest_rule.py) for each
key of the bucket.

Why: every `transformWithState` state or timer call is a round trip from the Python worker to
the JVM. Grouped by key, a micro-batch paid four to seven of them per distinct key (set the
key, read, write, move the timer, and a call of its own when the key's timer fired), most of
the latest join's cost on a batch that touches many keys (docs/benchmarks.md, "Join modes").
Grouped by bucket it pays them per bucket: one read, one write, one timer (the earliest
wake-up of its keys). The price is that a bucket's state is read and written whole when any of
its keys changes: each key's state stays text that is only decoded when the key is touched,
so an untouched key costs a dictionary entry copied, not its records parsed.

The bucket is a hash of the key's canonical text (its JSON), so it never depends on the batch;
`BUCKETS` is fixed for a checkpoint's life (changing it would look keys up in the wrong
bucket). A bucket's state: `{key text: "wake;rights\\nlefts"}` (rights and lefts as
latest_rule.encode writes them; JSON never holds a raw newline) and its timer. The empty
key text is a NULL key: it never matches (its rights are not kept, its lefts wait and expire).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from typing import Any

from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

from streamsift.config.rows import NO_RECORD
from streamsift.transforms.join.latest_rule import Record, Step, decode, encode

# Timestamps inside packed fields and key texts keep their microseconds (to_json's default is
# millis).
JSON_OPTIONS = {"timestampFormat": "yyyy-MM-dd'T'HH:mm:ss.SSSSSSXXX"}
RECORD = "_record"  # the column holding a record as `side|µs|partition|offset|...`
BUCKETS = 64  # buckets of a join's keys (over the shuffle partitions); fixed per checkpoint
BUCKET = "_bucket"  # the column holding a row's bucket
KEY_TEXT = "_key_text"  # the column holding a row's join key as canonical JSON ("": NULL)
STATE_SCHEMA = "keys STRING, timer BIGINT"
NO_TIMER = -1


def with_bucket(frame: Any, keys: list[str]) -> Any:
    """`frame` with its rows' KEY_TEXT and BUCKET, from the join key columns `keys`. A float
    key is normalised first (-0.0 + 0.0 is 0.0: Spark's grouping treats them alike); a NULL
    or NaN in any key makes the text ""."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, FloatType

    float_keys = {k for k in keys if isinstance(frame.schema[k].dataType, (DoubleType, FloatType))}

    columns = [F.col(k) + F.lit(0.0) if k in float_keys else F.col(k) for k in keys]
    missing = F.lit(False)
    for k, column in zip(keys, columns, strict=True):
        missing = missing | column.isNull()
        if k in float_keys:
            missing = missing | F.isnan(column)
    as_json = F.to_json(
        F.struct(*[c.alias(k) for k, c in zip(keys, columns, strict=True)]), JSON_OPTIONS
    )
    text = F.when(missing, F.lit("")).otherwise(as_json)
    bucket = F.pmod(F.xxhash64(F.col(KEY_TEXT)), F.lit(BUCKETS)).cast("int")
    return frame.withColumn(KEY_TEXT, text).withColumn(BUCKET, bucket)


def split_record(text: str) -> tuple[str, str, Record]:
    """A bucketed row's `side|µs|partition|offset|key length|key text + fields`: its side, key
    text and record."""
    side, et, partition, offset, length, rest = text.split("|", 5)
    n = int(length)
    return side, rest[:n], Record(int(et), int(partition), int(offset), rest[n:])


def records_by_key(texts: Iterable[str]) -> dict[str, dict[str, list[Record]]]:
    """A bucket's new records (RECORD texts) by key text, then by side (`L`, `R`, `T`)."""
    new: dict[str, dict[str, list[Record]]] = {}
    for text in texts:
        side, key_text, record = split_record(text)
        sides = new.get(key_text)
        if sides is None:
            sides = new[key_text] = _no_records()
        sides[side].append(record)
    return new


def _no_records() -> dict[str, list[Record]]:
    return {"L": [], "R": [], "T": []}


class BucketedJoinProcessor(StatefulProcessor):
    """What Spark runs per bucket: with the bucket's new records of a micro-batch, and when its
    timer passes. A key runs the rule when it has new records or the watermark is past its own
    wake-up, exactly when a processor grouped by key would have been called for
    it, with the same records, state and watermark: so the rows are the same."""

    def __init__(self, rule: Any, left_outer: bool, row: Any) -> None:
        self.rule = rule  # latest.LatestRule
        self.left_outer = left_outer
        self.row = row  # (left, right payload, partition, offset, watermark ms) -> output Row

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = handle.getValueState("latest_buckets", STATE_SCHEMA)

    def handleInputRows(
        self, key: Any, rows: Iterator[Any], timerValues: TimerValues
    ) -> Iterator[Any]:
        new = records_by_key(row[RECORD] for row in rows)
        return self._bucket(new, timerValues, None)

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[Any]:
        return self._bucket({}, timerValues, expiredTimerInfo.getExpiryTimeInMs())

    def _bucket(
        self,
        new: dict[str, dict[str, list[Record]]],
        timer_values: TimerValues,
        expired_ms: int | None,
    ) -> Iterator[Any]:
        stored = self.state.get()
        keys: dict[str, str] = {} if stored is None else json.loads(stored[0])
        timer = NO_TIMER if stored is None else stored[1]
        watermark_ms = max(timer_values.getCurrentWatermarkInMs(), 0)
        # Spark fires an event-time timer once the watermark is past it (strictly)
        due = [k for k, text in keys.items() if k not in new and _wake(text) < watermark_ms]
        changed = False
        out: list[Any] = []
        for key_text in [*new, *due]:
            sides = new.get(key_text) or _no_records()
            before = keys.get(key_text)
            after, result = self._key(key_text, before, sides, watermark_ms)
            if after != before:
                changed = True
                if after is None:
                    del keys[key_text]
                else:
                    keys[key_text] = after
            for lt, rt in result.matched:
                out.append(self.row(lt, rt.payload, rt.partition, rt.offset, watermark_ms))
            if self.left_outer:
                for lt in result.expired:
                    out.append(self.row(lt, None, NO_RECORD, NO_RECORD, watermark_ms))
        # every key left wakes at or after the watermark (the due ones just ran), so the
        # bucket's timer is never the one that just expired (that one was behind it)
        wake = min((_wake(t) for t in keys.values()), default=NO_TIMER)
        if wake != timer:
            if timer != NO_TIMER and timer != expired_ms:  # an expired one goes by itself
                self.handle.deleteTimer(timer)
            if wake != NO_TIMER:
                self.handle.registerTimer(wake)
        if not keys:
            if stored is not None:
                self.state.clear()
        elif changed or wake != timer:
            self.state.update((json.dumps(keys, separators=(",", ":")), wake))
        return iter(out)

    def _key(
        self,
        key_text: str,
        before: str | None,
        sides: dict[str, list[Record]],
        watermark_ms: int,
    ) -> tuple[str | None, Step]:
        """One key's step: its state text after it (None: nothing left) and the rule's result."""
        rights: tuple[Record, ...] = ()
        lefts: tuple[Record, ...] = ()
        if before is not None:
            records = before.partition(";")[2]
            rights_text, _, lefts_text = records.partition("\n")
            rights, lefts = decode(rights_text), decode(lefts_text)
        result = self.rule(
            rights, lefts, sides["R"], sides["T"], sides["L"], watermark_ms * 1000, key_text == ""
        )
        if result.wake_us is None:  # the rule wakes a key as long as it keeps anything
            return None, result
        wake_ms = max(-(-result.wake_us // 1000), watermark_ms + 1)  # ms, rounded up
        unchanged = (result.rights, result.lefts) == (rights, lefts)
        if before is not None and unchanged and _wake(before) == wake_ms:
            return before, result
        return f"{wake_ms};{encode(result.rights)}\n{encode(result.lefts)}", result


def _wake(text: str) -> int:
    """A key's wake-up (ms) from its state text."""
    return int(text[: text.index(";")])
