"""`join.mode: latest` in Spark's `transformWithState`: one row per left record, with the right
version current at its event time (the rule and its state: transforms/join/latest_rule.py).
A single latest join on a new checkpoint runs with state streamsift keeps instead
(latest_arrow.py); this processor runs the latest steps of a chain of joins and a latest join
whose checkpoint holds its state (engine/checkpoint.py `latest_join_in_spark`). `join.mode: table`
runs in the processor grouped by key (LatestJoinProcessor) with the table's rule
(transforms/join/table_rule.py): its right rows (values, and tombstones marked `T`) carry a
far-future time in the grouped frame, so Spark's late-row filter, which only the left side's
watermark drives, never drops them.

Both sides' good records are brought to one shape — the event time (with each side's
watermark) and one text column `side|µs|partition|offset|...`, the fields the output needs
packed as JSON — unioned, grouped, and handed to Spark's `transformWithState` (event time).
`mode: latest` groups by a bucket of keys and carries each record's key text in the column
(transforms/join/latest_buckets.py); `mode: table`, and a latest join whose checkpoint was
written that way, group by the key. Spark keeps the state (per key: the right versions still
usable and the left records still waiting, as JSON text, and the key's wake-up) and the
timers in its RocksDB state store, checkpointed with the offsets, and drops records behind
the watermark before they reach the rule (counted as `late_dropped`); so a re-run micro-batch
starts from the same state and watermark and makes the same rows. Packing the fields as JSON
keeps every value exact across the Python hop (64-bit integers, microsecond timestamps,
NULLs).

Why `transformWithState` (rows; its state calls are round trips to the JVM) and not
`applyInPandasWithState` (its state travels with the data): the latter builds a pandas frame
per key and micro-batch, ~1 ms each, so its cost grows with the distinct keys of a batch —
measured on one 50,000-row batch: 8-18 s with 10,000 keys against 2-3 s here, and equal with
1,000 keys (docs/benchmarks.md).
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

from pyspark.sql.streaming.stateful_processor import (
    ExpiredTimerInfo,
    StatefulProcessor,
    StatefulProcessorHandle,
    TimerValues,
)

from streamsift.config.models import FieldRef, Join, JoinMode, JoinType
from streamsift.config.rows import NO_RECORD, OUTPUT_COLUMNS, RIGHT_RECORD_COLUMNS, join_key_column
from streamsift.config.types import SPARK_SQL_TYPES
from streamsift.transforms.join.latest_buckets import (
    BUCKET,
    JSON_OPTIONS,
    KEY_TEXT,
    RECORD,
    BucketedJoinProcessor,
    with_bucket,
)
from streamsift.transforms.join.latest_rule import Record, Step, Windows, decode, encode, step
from streamsift.transforms.join.table_rule import TableRule

# A table side's rows are never behind the watermark: they carry this time in the grouped
# frame (their own stays inside the record), so Spark's late-row filter passes them all.
# A good row of a table side that is a tombstone: the source processor keeps its Kafka key
# and no value (engine/processor.py `tombstones`); other good rows there keep neither.
TOMBSTONE = "_error IS NULL AND _raw IS NULL AND _key IS NOT NULL"
NEVER_LATE = "9999-12-31 00:00:00"

OUTPUT_SCHEMA = "_lp STRING, _rp STRING, _rpartition INT, _roffset BIGINT"
STATE_SCHEMA = "rights STRING, lefts STRING"
# The state's `lefts` text begins with the key's timer (`@ms;`, `@;` for none): join_timer.
TIMER_MARK = "@"
# The left record's metadata carried to the output row (its position is packed as well).
LEFT_META = ("_topic", "_partition", "_offset", "_kafka_ts", "_late")
# A chain's rows between steps carry their first left record's event time (µs) and the
# positions of the right records they joined so far, `partition:offset` joined by commas.
CHAIN_TIME = "_chain_time"
CHAIN = "_chain"
CHAIN_OUTPUT = ", _event_time TIMESTAMP, _tl BIGINT"
EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True)
class ChainStep:
    """Where a join step sits in a chain (`join` as a list); None for a single join."""

    left_is_step: bool  # the left side is the previous step's rows (CHAIN_TIME, CHAIN)
    feeds_next: bool  # its rows are the next step's left side
    slack_us: int  # how far behind the watermark its left records may arrive


def position(partition: Any, offset: Any) -> Any:
    """A right record's `partition:offset` (NULLs: none, -1:-1) for `CHAIN`."""
    from pyspark.sql import functions as F

    return F.concat_ws(
        ":",
        F.coalesce(partition, F.lit(NO_RECORD)).cast("string"),
        F.coalesce(offset, F.lit(NO_RECORD)).cast("string"),
    )


def chain_columns(chain: ChainStep, partition: Any, offset: Any, left_chain: Any) -> dict:
    """The columns a chain step adds to its rows: for the next step, CHAIN (the positions so
    far); for the last, `_roffset` as a hash of every position (a row's identity, with its
    left record: an interval first step gives several rows per left record)."""
    from pyspark.sql import functions as F

    here = position(partition, offset)
    positions = here if left_chain is None else F.concat_ws(",", left_chain, here)
    if chain.feeds_next:
        return {CHAIN: positions}
    return {"_roffset": F.xxhash64(positions)}


def latest_pairs(
    join: Join,
    left: Any,
    right: Any,
    left_scope: dict[str, FieldRef],
    right_scope: dict[str, FieldRef],
    left_source: str,
    chain: ChainStep | None = None,
    by_key: bool = False,
) -> tuple[Any, dict[str, FieldRef]]:
    """The joined rows of `left` and `right` (good records with key columns and watermarks):
    the output fields, then the metadata columns `OUTPUT_COLUMNS` (and, for a chain's next
    step, `_event_time`, CHAIN_TIME and CHAIN); and the output's scope. `mode: latest` groups
    its rows by buckets of keys (latest_buckets.py) unless `by_key`: a checkpoint whose
    state was written grouped by key, before buckets, keeps that layout."""
    from pyspark.sql import functions as F

    keys = [join_key_column(i) for i in range(len(join.left.key))]
    packed: dict[str, list[tuple[str, str, str]]] = {"left": [], "right": []}
    scope: dict[str, FieldRef] = {}
    for i, out in enumerate(join.output):
        ref = (left_scope if out.from_ == "left" else right_scope)[out.field]
        packed[out.from_].append((f"f{i}", ref.column, SPARK_SQL_TYPES[ref.type]))
        scope[out.name] = FieldRef(out.name, out.column, ref.type)
    meta_types = {c.name: c.sql_type for c in OUTPUT_COLUMNS}
    packed["left"] += [(m, m, meta_types[m]) for m in LEFT_META]
    if chain is not None and chain.left_is_step:
        packed["left"].append((CHAIN, CHAIN, "STRING"))

    def shaped(frame: Any, side: str) -> Any:
        fields = [F.col(column).alias(name) for name, column, _ in packed[side]]
        payload = F.to_json(F.struct(*fields), JSON_OPTIONS) if fields else F.lit("{}")
        # one text column per record: Spark hands each key's rows to pandas column by
        # column, and that costs per column and key more than splitting the text does
        kind = F.lit("L" if side == "left" else "R")
        event_time = F.col("_event_time")
        if table and side == "right":
            kind = F.when(F.expr(TOMBSTONE), F.lit("T")).otherwise(kind)
            event_time = F.lit(NEVER_LATE).cast("timestamp")
        if chain is not None and chain.left_is_step and side == "left":
            micros = F.col(CHAIN_TIME)  # the chain's first left record's time
        else:
            micros = F.unix_micros("_event_time")
        if keyed:
            record = F.concat_ws("|", kind, micros, "_partition", "_offset", payload)
            return frame.select(*keys, event_time.alias("_event_time"), record.alias(RECORD))
        if BUCKET not in frame.columns:  # a chain step's left side: the previous step's rows
            frame = with_bucket(frame, keys)
        key_and_payload = F.concat(F.col(KEY_TEXT), payload)
        length = F.length(KEY_TEXT)
        record = F.concat_ws("|", kind, micros, "_partition", "_offset", length, key_and_payload)
        return frame.select(BUCKET, event_time.alias("_event_time"), record.alias(RECORD))

    table = join.mode is JoinMode.TABLE
    keyed = table or by_key  # grouped by the key, with LatestJoinProcessor
    left_us = int(join.left_window.total_seconds() * 1_000_000)
    slack = 0 if chain is None else chain.slack_us
    right_us = int(join.right_window.total_seconds() * 1_000_000)
    rule: Any = LatestRule(
        Windows(left_us, right_us, slack) if slack else Windows(left_us, right_us)
    )
    if table:
        ttl = join.right.ttl
        rule = TableRule(left_us, None if ttl is None else int(ttl.total_seconds() * 1_000_000))
    feeds_next = chain is not None and chain.feeds_next
    left_outer = join.type is JoinType.LEFT
    processor: StatefulProcessor
    if keyed:
        processor = LatestJoinProcessor(rule, left_outer, feeds_next, slack + left_us)
    else:
        row = functools.partial(joined_row, feeds_next, slack + left_us)
        processor = BucketedJoinProcessor(rule, left_outer, row)
    rows = (
        shaped(left, "left")
        .unionByName(shaped(right, "right"))
        .groupBy(*(keys if keyed else [BUCKET]))
        .transformWithState(
            processor,
            OUTPUT_SCHEMA + (CHAIN_OUTPUT if feeds_next else ""),
            "Append",
            "EventTime",
            **({"eventTimeColumnName": "_event_time"} if feeds_next else {}),
        )
    )

    def schema(side: str) -> str:
        return ", ".join(f"`{name}` {sql_type}" for name, _, sql_type in packed[side])

    lp = F.from_json("_lp", schema("left"), JSON_OPTIONS)
    rp = F.from_json("_rp", schema("right"), JSON_OPTIONS) if packed["right"] else None
    rows = rows.select(
        lp.alias("l"),
        *([rp.alias("r")] if rp is not None else []),
        "_rpartition",
        "_roffset",
        *(["_event_time", F.col("_tl").alias(CHAIN_TIME)] if feeds_next else []),
    )
    outputs = []
    fields = {"left": iter(packed["left"]), "right": iter(packed["right"])}
    for out in join.output:
        name = next(fields[out.from_])[0]
        outputs.append(F.col(f"{out.from_[0]}.{name}").alias(out.column))
    if chain is not None:
        left_chain = F.col(f"l.{CHAIN}") if chain.left_is_step else None
        rows = rows.withColumns(chain_columns(chain, "_rpartition", "_roffset", left_chain))
    extra = ["_event_time", CHAIN_TIME, CHAIN] if feeds_next else []
    return rows.select(*outputs, *[_meta(c, left_source) for c in OUTPUT_COLUMNS], *extra), scope


def joined_row(
    feeds_next: bool,
    within_us: int | None,
    left: Record,
    right: str | None,
    partition: int,
    offset: int,
    watermark_ms: int,
) -> Any:
    """An output row: the left record's and right version's fields (None: a left-outer row
    without one) and the right record's position. A chain step's rows go on to the next step:
    each carries its left record's time (`_tl`) and, as Spark's event time, that time or the
    watermark if later (a row behind the watermark may not leave a transformWithState that
    feeds another), but at most `within_us` after `_tl` (the next step's slack: the watermark
    of an earlier batch, which a row must not be behind, was no further than that, and an
    interval next step bounds its state by it; docs/semantics.md, "A chain of joins")."""
    from pyspark.sql import Row

    if not feeds_next:
        return Row(_lp=left.payload, _rp=right, _rpartition=partition, _roffset=offset)
    emitted_us = watermark_ms * 1000
    if within_us is not None:
        emitted_us = min(emitted_us, left.et + within_us)
    emitted_us = max(left.et, emitted_us)
    return Row(
        _lp=left.payload,
        _rp=right,
        _rpartition=partition,
        _roffset=offset,
        _event_time=EPOCH + timedelta(microseconds=emitted_us),
        _tl=left.et,
    )


def _meta(column: Any, left_source: str) -> Any:
    """A metadata column of a latest-mode row: as an interval join's row has it."""
    from pyspark.sql import functions as F

    if column.name == "_source":
        value = F.lit(left_source)
    elif column in RIGHT_RECORD_COLUMNS:
        value = F.col(column.name)
    elif column.name in LEFT_META:
        value = F.col(f"l.{column.name}")
    else:
        value = F.lit(None)
    return value.cast(column.sql_type).alias(column.name)


def join_timer(timers: list[int], lefts_text: str) -> str:
    """The state's `lefts` text with the key's timer in front (`@ms;` or `@;` for none), so a
    call knows it without listing the key's timers, a round trip to the JVM."""
    return f"{TIMER_MARK}{timers[0] if timers else ''};{lefts_text}"


def split_timer(text: str | None) -> tuple[list[int] | None, str | None]:
    """The key's timers and lefts text from the state's `lefts` column (join_timer); None for
    the timers of a state written before they were kept there (its text is the JSON alone)."""
    if not text or not text.startswith(TIMER_MARK):
        return None, text
    head, _, rest = text[1:].partition(";")
    return ([int(head)] if head else []), rest


class LatestRule:
    """`join.mode: latest`'s rule (latest_rule.step) in the shape the processor calls."""

    def __init__(self, windows: Windows) -> None:
        self.windows = windows

    def __call__(
        self,
        rights: tuple[Record, ...],
        lefts: tuple[Record, ...],
        new_rights: list[Record],
        new_tombstones: list[Record],
        new_lefts: list[Record],
        watermark_us: int,
        key_is_null: bool = False,
    ) -> Step:
        return step(rights, lefts, new_rights, new_lefts, watermark_us, self.windows, key_is_null)


class LatestJoinProcessor(StatefulProcessor):
    """What Spark runs per key: with the key's new records of a micro-batch, and when the
    key's timer passes (a waiting left record's window ends, or the versions expire).

    The state is one value, the right versions and the waiting left records as JSON text; the
    key has at most one timer, at `Step.wake_us`, and the state says which (join_timer). Each
    state and timer call is a round trip to the JVM, so a call makes few: read, write (or
    clear) when the records or the timer change, and a timer change only when the wake-up
    time moves."""

    def __init__(
        self, rule: Any, left_outer: bool, feeds_next: bool = False, within_us: int | None = None
    ) -> None:
        self.rule = rule  # LatestRule, or table_rule.TableRule for `mode: table`
        self.left_outer = left_outer
        # a chain step's rows go on to the next step: each carries its left record's time
        # (`_tl`) and, as Spark's event time, that time or the watermark if later (a row
        # behind the watermark may not leave a transformWithState that feeds another)
        self.feeds_next = feeds_next
        # ... but at most `within_us` after `_tl` (the next step's slack): the watermark of
        # an earlier batch, which a row must not be behind, was no further than that, and an
        # interval next step bounds its state by it (docs/semantics.md, "A chain of joins")
        self.within_us = within_us

    def init(self, handle: StatefulProcessorHandle) -> None:
        self.handle = handle
        self.state = handle.getValueState("latest", STATE_SCHEMA)

    def handleInputRows(
        self, key: Any, rows: Iterator[Any], timerValues: TimerValues
    ) -> Iterator[Any]:
        new: dict[str, list[Record]] = {"L": [], "R": [], "T": []}
        for row in rows:
            side, et, p, o, payload = row[RECORD].split("|", 4)
            new[side].append(Record(int(et), int(p), int(o), payload))
        return self._step(key, new["R"], new["T"], new["L"], timerValues, None)

    def handleExpiredTimer(
        self, key: Any, timerValues: TimerValues, expiredTimerInfo: ExpiredTimerInfo
    ) -> Iterator[Any]:
        return self._step(key, [], [], [], timerValues, expiredTimerInfo.getExpiryTimeInMs())

    def _step(
        self,
        key: Any,
        new_rights: list[Record],
        new_tombstones: list[Record],
        new_lefts: list[Record],
        timer_values: TimerValues,
        expired_ms: int | None,
    ) -> Iterator[Any]:
        # get() answers None for a key without state: one round trip, not exists() and get()
        stored = self.state.get()
        rights, lefts, timers = decode(None), decode(None), []
        known: list[int] | None = []
        if stored is not None:
            known, lefts_text = split_timer(stored[1])
            rights, lefts = decode(stored[0]), decode(lefts_text)
            # a state written before it kept its timer: ask Spark (one round trip more)
            timers = list(self.handle.listTimers()) if known is None else known
        watermark_ms = max(timer_values.getCurrentWatermarkInMs(), 0)
        key_is_null = any(k is None or k != k for k in key)  # NaN: a NULL float key
        result = self.rule(
            rights, lefts, new_rights, new_tombstones, new_lefts, watermark_ms * 1000, key_is_null
        )
        wake = []  # the key's timer after this call: the wake-up in ms, rounded up
        if result.wake_us is not None:
            wake = [max(-(-result.wake_us // 1000), watermark_ms + 1)]
        for timer in timers:  # an expired one goes by itself
            if timer not in wake and timer != expired_ms:
                self.handle.deleteTimer(timer)
        for timer in wake:
            if timer not in timers or timer == expired_ms:
                self.handle.registerTimer(timer)
        if not result.rights and not result.lefts and not wake:
            if stored is not None:
                self.state.clear()
        elif (result.rights, result.lefts, wake) != (rights, lefts, timers) or known is None:
            self.state.update((encode(result.rights), join_timer(wake, encode(result.lefts))))
        for lt, rt in result.matched:
            yield self._row(lt, rt.payload, rt.partition, rt.offset, watermark_ms)
        if self.left_outer:
            for lt in result.expired:
                yield self._row(lt, None, NO_RECORD, NO_RECORD, watermark_ms)

    def _row(
        self, left: Record, right: str | None, partition: int, offset: int, watermark_ms: int
    ) -> Any:
        return joined_row(
            self.feeds_next, self.within_us, left, right, partition, offset, watermark_ms
        )

    def close(self) -> None:
        pass
