"""The rule of `join.mode: latest` for one join key, as a pure function of its state.

Each left record is joined once, with the right version of its key that was current at its
event time: the newest right record with `tl - Wr <= tr <= tl`; if there is none, the earliest
one with `tl < tr <= tl + Wl`. A left record with no candidate waits (in the state) for the
first right record of its window, until the watermark passes `tl + Wl`; then it expires (a
left join writes it with NULL right fields). docs/semantics.md has the timeline.

Everything here depends only on the key's state and the records of the micro-batch, never on
their order inside the batch or on the clock: Spark re-runs a micro-batch after a crash with
the same records (in another order), the same state and the same watermark, and `step` then
returns the same rows and the same state. Ties on event time are broken by Kafka position
(partition, then offset): before the left record the version written last is current; after
it, the one written first arrived first (GlassFlow joins a waiting record with the first).
"""

from __future__ import annotations

import json
from bisect import bisect_right
from dataclasses import dataclass
from typing import NamedTuple


class Record(NamedTuple):
    """A left or right record as the join keeps it: event time (µs since the epoch), Kafka
    partition and offset, and the fields the output needs (JSON text, opaque here)."""

    et: int
    partition: int
    offset: int
    payload: str


@dataclass(frozen=True)
class Windows:
    """`left.time_window` and `right.time_window`, in microseconds; `slack_us`: how far behind
    the watermark a left record may still arrive (0, except in a chain's later steps, whose
    left records are the previous step's rows: docs/semantics.md, "A chain of joins")."""

    left_us: int
    right_us: int
    slack_us: int = 0


@dataclass(frozen=True)
class Step:
    """What one call for a key produced: joined pairs, expired left records, the new state and
    when to be called again without data (µs; None: the state is empty and can go)."""

    matched: tuple[tuple[Record, Record], ...]
    expired: tuple[Record, ...]
    rights: tuple[Record, ...]
    lefts: tuple[Record, ...]
    wake_us: int | None


def pick(left: Record, rights: list[Record] | tuple[Record, ...], w: Windows) -> Record | None:
    """The right version current at `left.et`, else the first after it in the left window."""
    before = [r for r in rights if left.et - w.right_us <= r.et <= left.et]
    if before:
        return max(before, key=_position)
    after = [r for r in rights if left.et < r.et <= left.et + w.left_us]
    if after:
        return min(after, key=_position)
    return None


def pick_sorted(left: Record, known: list[Record], times: list[int], w: Windows) -> Record | None:
    """`pick` over versions sorted by (event time, partition, offset); `times` their event
    times. The version before is the last with `tr <= tl`; the one after the first with
    `tr > tl`."""
    i = bisect_right(times, left.et)
    if i and times[i - 1] >= left.et - w.right_us:
        return known[i - 1]
    if i < len(times) and times[i] <= left.et + w.left_us:
        return known[i]
    return None


def step(
    rights: tuple[Record, ...],
    lefts: tuple[Record, ...],
    new_rights: list[Record],
    new_lefts: list[Record],
    watermark_us: int,
    w: Windows,
    key_is_null: bool = False,
) -> Step:
    """Join a key's waiting and new left records against its known and new right versions.

    `rights`/`lefts` are the state as of the batch's start, `watermark_us` the batch's
    watermark (records behind it were dropped by Spark before this point). A NULL key never
    matches: its right records are not kept, its left records wait and expire.
    """
    known = [] if key_is_null else sorted({*rights, *new_rights}, key=_position)
    times = [r.et for r in known]
    matched: list[tuple[Record, Record]] = []
    waiting: list[Record] = []
    for left in sorted({*lefts, *new_lefts}, key=_position):
        right = pick_sorted(left, known, times, w)
        if right is not None:
            matched.append((left, right))
        else:
            waiting.append(left)
    expired = [r for r in waiting if r.et + w.left_us <= watermark_us]
    waiting = [r for r in waiting if r.et + w.left_us > watermark_us]
    kept = prune(known, watermark_us - w.slack_us, w)
    if waiting:
        wake: int | None = min(r.et for r in waiting) + w.left_us
    elif kept:
        wake = max(r.et for r in kept) + w.right_us + w.slack_us
    else:
        wake = None
    return Step(tuple(matched), tuple(expired), tuple(kept), tuple(waiting), wake)


def prune(rights: list[Record], watermark_us: int, w: Windows) -> list[Record]:
    """The right versions a left record at or after the watermark can still pick.

    Left records behind the watermark are dropped, so every later one has `tl > watermark`
    (in a chain's later steps the caller passes the watermark less the slack instead):
    versions older than `watermark - Wr` are outside its right window, and of the versions at
    or before the watermark only the newest can be current at its time.
    """
    alive = [r for r in rights if r.et >= watermark_us - w.right_us]
    settled = [r for r in alive if r.et <= watermark_us]
    if len(settled) <= 1:
        return alive
    newest = max(settled, key=_position)
    return [r for r in alive if r.et > watermark_us or r == newest]


def encode(records: tuple[Record, ...]) -> str:
    """A state column's text: the records as a JSON list of lists."""
    return json.dumps([list(r) for r in records], separators=(",", ":"))


def decode(text: str | None) -> tuple[Record, ...]:
    if not text:
        return ()
    return tuple(Record(int(a), int(b), int(c), str(d)) for a, b, c, d in json.loads(text))


def _position(r: Record) -> tuple[int, int, int]:
    return (r.et, r.partition, r.offset)
