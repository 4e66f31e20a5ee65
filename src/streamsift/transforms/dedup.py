"""Exact, replay-safe deduplication of one Kafka partition, with its memory on local disk.

Semantics (docs/semantics.md): records arrive in offset order; the first record of a key is
kept; a later record with the same key is a duplicate when its event time lies within
`window` of the kept record's event time; otherwise it is kept and becomes the new reference.
A record whose event time is more than one window older than the newest event time seen in
its partition (before this batch) is *late*: it is kept (never lost), counted, and not
compared, because the state it would be compared with may have been cleaned up.

Why not Spark's dropDuplicatesWithinWatermark: it drops every same-key record of a
micro-batch whatever their times, keeps keys until the watermark passes first + delay
(so the effective window depends on batch boundaries), and drops late records silently.

Replays: Spark re-runs an uncommitted micro-batch over the same offset range. Every state
entry remembers the offset that wrote it and the entry it replaced, so a re-run of range
[start, end) reads the state as it was before `start` and decides exactly as the first run.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rocksdict import Options, Rdict, WriteBatch

_ENTRY = struct.Struct("<qqqq")  # kept time (us), kept offset, previous time, previous offset
_META_KEY = b"\x00meta"
NONE = -1


@dataclass(frozen=True)
class DedupDecision:
    keep: list[bool]
    late: list[bool]

    @property
    def dropped(self) -> int:
        return sum(not k for k in self.keep)


class PartitionDedup:
    """The dedup memory of one Kafka partition; open it for one offset range at a time."""

    def __init__(self, path: str | Path, window_us: int, cleanup_every: int = 1_000_000) -> None:
        self.path = Path(path)
        self.window_us = window_us
        self.cleanup_every = cleanup_every

    def decide(
        self,
        keys: Sequence[bytes],
        times_us: Sequence[int],
        offsets: Sequence[int],
        start: int,
    ) -> DedupDecision:
        """Decide keep/drop for records (in offset order) of the range starting at `start`."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        opts = Options(raw_mode=True)
        opts.create_if_missing(True)
        db = Rdict(str(self.path), opts)
        try:
            return self._decide(db, keys, times_us, offsets, start)
        finally:
            db.close()

    def _decide(
        self,
        db: Rdict,
        keys: Sequence[bytes],
        times_us: Sequence[int],
        offsets: Sequence[int],
        start: int,
    ) -> DedupDecision:
        window = self.window_us
        hw_before = _resolve(db.get(_META_KEY), start)
        hw = hw_before[0] if hw_before else None
        late_before = hw - window if hw is not None else None

        unique = list(dict.fromkeys(keys))
        stored = db.get(unique) if unique else []
        prior: dict[bytes, tuple[int, int] | None] = {
            k: _resolve(v, start) for k, v in zip(unique, stored, strict=True)
        }
        current: dict[bytes, tuple[int, int]] = {}  # kept in this range: key -> (time, offset)
        keep: list[bool] = []
        late: list[bool] = []
        newest = hw
        for key, t, off in zip(keys, times_us, offsets, strict=True):
            if late_before is not None and t < late_before:
                keep.append(True)
                late.append(True)
                continue
            late.append(False)
            ref = current.get(key) or prior[key]
            if ref is not None and abs(t - ref[0]) < window:
                keep.append(False)
                continue
            keep.append(True)
            current[key] = (t, off)
            if newest is None or t > newest:
                newest = t

        batch = WriteBatch(raw_mode=True)
        for key, (t, off) in current.items():
            base = prior[key] or (NONE, NONE)
            batch.put(key, _ENTRY.pack(t, off, base[0], base[1]))
        if newest is not None and offsets:
            base_hw = hw_before or (NONE, NONE)
            batch.put(_META_KEY, _ENTRY.pack(newest, offsets[-1], base_hw[0], base_hw[1]))
        db.write(batch)
        if (
            offsets
            and hw is not None
            and start // self.cleanup_every != (offsets[-1] + 1) // self.cleanup_every
        ):
            self._cleanup(db, hw - 2 * window, start)
        return DedupDecision(keep, late)

    def _cleanup(self, db: Rdict, older_than_us: int, start: int) -> None:
        """Forget keys no non-late record can match any more (kept more than 2 windows ago)."""
        batch = WriteBatch(raw_mode=True)
        for key, value in db.items():
            if key == _META_KEY:
                continue
            t, off, _, _ = _ENTRY.unpack(value)
            if t < older_than_us and off < start:
                batch.delete(key)
        db.write(batch)


def _resolve(value: bytes | None, start: int) -> tuple[int, int] | None:
    """The entry as it stood before offset `start` (undoing a failed run of the same range)."""
    if value is None:
        return None
    t, off, prev_t, prev_off = _ENTRY.unpack(value)
    if off < start:
        return t, off
    if prev_off != NONE and prev_off < start:
        return prev_t, prev_off
    return None


def encode_key(values: Sequence[object]) -> bytes:
    """A stable byte key for one record's dedup key values."""
    if len(values) == 1 and isinstance(values[0], str):
        return values[0].encode()
    return "\x1f".join("\x00" if v is None else repr(v) for v in values).encode()
