"""Exact, replay-safe deduplication of one Kafka partition, with its memory on local disk.

Semantics (docs/semantics.md): records arrive in offset order; the first record of a key is
kept; a later record with the same key is a duplicate when its event time lies within
`window` of the kept record's event time; otherwise it is kept and becomes the new reference.
A record whose event time is more than one window older than the newest event time seen in
its partition (before this batch) is *late*: it is kept (never lost), counted, and not
compared, because the state it would be compared with may have been cleaned up.
Records are vetted before they get here: one whose event time runs too far ahead of its Kafka
timestamp is a dead letter (transforms/event_time.py), so one bad clock cannot make every
later record of its partition late.

Why not Spark's dropDuplicatesWithinWatermark: it drops every same-key record of a
micro-batch whatever their times, keeps keys until the watermark passes first + delay
(so the effective window depends on batch boundaries), and drops late records silently.

Replays: Spark re-runs an uncommitted micro-batch over the same offset range. Every state
entry remembers the offset that wrote it and the entry it replaced, so a re-run of range
[start, end) reads the state as it was before `start` and decides exactly as the first run.

Modes (docs/semantics.md; their keys: keys.py): `first` keys by the dedup key; `exact` keys by
a hash of the canonical payload, with the same first-wins rule; `last` keys by the dedup key
but compares payload hashes too: a record is dropped only when it repeats the payload of the key's latest
kept version within the window, so every new version passes (an A, B, A sequence keeps all
three, and the table's ReplacingMergeTree keeps the last).
"""

from __future__ import annotations

import itertools
import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
from rocksdict import Rdict

from streamsift.transforms.dedup.columnar import (
    as_key_array,
    decide_columns,
    pack_entries,
    stored_entries,
)
from streamsift.transforms.dedup.shared_state import (
    CACHE_KEY,
    CachedState,
    SharedPartitionState,
    Write,
    apply_writes,
    open_db,
)

_ENTRY = struct.Struct("<qqqq")  # kept time (us), kept offset, previous time, previous offset
# Mode last also remembers the payload hash of the kept and the previous version.
_VERSIONED_ENTRY = struct.Struct("<qq16sqq16s")
_META_KEY = b"\x00meta"
NONE = -1
_NO_HASH = b"\x00" * 16
Ref = tuple[int, int, bytes]  # event time (us), offset, payload hash
# A range's records: keys, event times (us), offsets, and the range's start offset.
_Records = tuple[Sequence[bytes] | pa.Array, Sequence[int], Sequence[int], int]
_Writes = list[Write] | None  # the changes, kept for a shared state's changelog


@dataclass(frozen=True)
class DedupDecision:
    keep: list[bool]
    late: list[bool]

    @property
    def dropped(self) -> int:
        return sum(not k for k in self.keep)


class PartitionDedup:
    """The dedup memory of one Kafka partition; open it for one offset range at a time.

    Without `shared`, `path` is the state itself (a local run's checkpoint). With `shared`, the
    state lives on shared storage (shared_state.py) and `path` is this process's
    cache of it; `decide` then needs the range's `end`.
    """

    def __init__(
        self,
        path: str | Path,
        window_us: int,
        cleanup_every: int = 1_000_000,
        compare_payload: bool = False,
        shared: SharedPartitionState | None = None,
    ) -> None:
        self.path = Path(path)
        self.window_us = window_us
        self.cleanup_every = cleanup_every
        self.compare_payload = compare_payload  # mode last: drop only repeats of the latest payload
        self.shared = shared

    def decide(
        self,
        keys: Sequence[bytes] | pa.Array,
        times_us: Sequence[int],
        offsets: Sequence[int],
        start: int,
        hashes: Sequence[bytes] | None = None,
        end: int | None = None,
    ) -> DedupDecision:
        """Decide keep/drop for records (in offset order) of the range [start, end).

        `hashes` (payload hashes, one per record) are needed with `compare_payload`.
        """
        if self.compare_payload and hashes is None:
            raise ValueError("payload hashes are needed to compare payloads")
        writes: list[Write] | None = None  # what a shared state's changelog needs
        if self.shared is not None:
            writes = []
            if end is None:
                raise ValueError("the range's end is needed with a shared state")
            cached = CachedState(self.shared, self.path)
            db = cached.open(start, end)
            try:
                decision = self._decide(db, keys, times_us, offsets, start, hashes, writes)
                cached.commit(db, start, end, writes or [])
                return decision
            finally:
                db.close()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        db = open_db(self.path)
        try:
            return self._decide(db, keys, times_us, offsets, start, hashes, writes)
        finally:
            db.close()

    def _decide(
        self,
        db: Rdict,
        keys: Sequence[bytes] | pa.Array,
        times_us: Sequence[int],
        offsets: Sequence[int],
        start: int,
        hashes: Sequence[bytes] | None,
        writes: list[Write] | None,
    ) -> DedupDecision:
        """Decide, and apply the state's changes, also appended to `writes`."""
        window = self.window_us
        hw_before = _resolve(db.get(_META_KEY), start)
        hw = hw_before[0] if hw_before else None
        if not self.compare_payload and hashes is None:
            records = (keys, times_us, offsets, start)
            decision = self._decide_columns(db, records, hw_before, writes)
            if decision is not None:
                return decision
        if not isinstance(keys, list):  # the loop wants Python values
            keys = as_key_array(keys).to_pylist()
        if isinstance(times_us, np.ndarray):
            times_us = times_us.tolist()
        if isinstance(offsets, np.ndarray):
            offsets = offsets.tolist()
        late_before = hw - window if hw is not None else None

        unique = list(dict.fromkeys(keys))
        stored = db.get(unique) if unique else []
        resolve = _resolve_versioned if self.compare_payload else _resolve_plain
        prior: dict[bytes, Ref | None] = {
            k: resolve(v, start) for k, v in zip(unique, stored, strict=True)
        }
        current: dict[bytes, Ref] = {}  # kept in this range: key -> (time, offset, hash)
        keep: list[bool] = []
        late: list[bool] = []
        newest = hw
        payloads = hashes if hashes is not None else [_NO_HASH] * len(keys)
        for key, t, off, h in zip(keys, times_us, offsets, payloads, strict=True):
            if late_before is not None and t < late_before:
                keep.append(True)
                late.append(True)
                continue
            late.append(False)
            ref = current.get(key) or prior[key]
            if ref is not None and abs(t - ref[0]) < window and ref[2] == h:
                keep.append(False)
                continue
            keep.append(True)
            current[key] = (t, off, h)
            if newest is None or t > newest:
                newest = t

        changes: list[Write] = []
        for key, (t, off, h) in current.items():
            base = prior[key] or (NONE, NONE, _NO_HASH)
            if self.compare_payload:
                changes.append((key, _VERSIONED_ENTRY.pack(t, off, h, base[0], base[1], base[2])))
            else:
                changes.append((key, _ENTRY.pack(t, off, base[0], base[1])))
        self._finish(db, changes, newest, offsets, start, hw_before, writes)
        return DedupDecision(keep, late)

    def _decide_columns(
        self, db: Rdict, records: _Records, hw_before: tuple[int, int] | None, writes: _Writes
    ) -> DedupDecision | None:
        """`_decide` on whole columns (columnar.py), keys without payload hashes; None when
        the record-by-record loop must decide (nothing is read or written then)."""
        keys, times_us, offsets, start = records
        encoded = as_key_array(keys).dictionary_encode()
        unique = encoded.dictionary.to_pylist()
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        present, entries = stored_entries(db.get(unique) if unique else [])
        times = np.asarray(times_us, dtype=np.int64)
        offs = np.asarray(offsets, dtype=np.int64)
        hw = hw_before[0] if hw_before else None
        got = decide_columns(codes, times, offs, present, entries, start, hw, self.window_us)
        if got is None:
            return None
        # An iterator, not a list of pairs: a list of tuples this long wakes the cyclic GC.
        changes = zip(map(unique.__getitem__, got.changed), pack_entries(got.entries), strict=True)
        self._finish(db, changes, got.newest, offsets, start, hw_before, writes)
        return DedupDecision(got.keep.tolist(), got.late.tolist())

    def _finish(
        self,
        db: Rdict,
        changes: Iterable[Write],
        newest: int | None,
        offsets: Sequence[int],
        start: int,
        hw_before: tuple[int, int] | None,
        writes: list[Write] | None,
    ) -> None:
        """Write the keys' changes and the new high-water mark; clean up now and then."""
        last = len(offsets) and int(offsets[-1])
        if newest is not None and len(offsets):
            base_hw = hw_before or (NONE, NONE)
            meta = (_META_KEY, _ENTRY.pack(newest, last, base_hw[0], base_hw[1]))
            changes = itertools.chain(changes, [meta])
        _write(db, changes, writes)
        if (
            len(offsets)
            and hw_before is not None
            and start // self.cleanup_every != (last + 1) // self.cleanup_every
        ):
            self._cleanup(db, hw_before[0] - 2 * self.window_us, start, writes)

    def _cleanup(
        self, db: Rdict, older_than_us: int, start: int, writes: list[Write] | None
    ) -> None:
        """Forget keys no non-late record can match any more (kept more than 2 windows ago)."""
        entry = _VERSIONED_ENTRY if self.compare_payload else _ENTRY
        doomed: list[Write] = []
        for key, value in db.items():
            if key in (_META_KEY, CACHE_KEY):
                continue  # the partition's high-water mark, the cache's own marker
            t, off = entry.unpack(value)[:2]
            if t < older_than_us and off < start:
                doomed.append((key, None))
        _write(db, doomed, writes)


def _write(db: Rdict, changes: Iterable[Write], writes: list[Write] | None) -> None:
    """Apply puts (and deletes: value None) in one batch, and remember them in `writes`
    for a shared state's changelog; None: a local state, written without RocksDB's log
    (shared_state.apply_writes: `decide` closes it before the range's rows leave)."""
    if writes is not None:
        changes = list(changes)
        writes.extend(changes)
    apply_writes(db, changes, wal=writes is not None)


def _resolve_plain(value: bytes | None, start: int) -> Ref | None:
    entry = _resolve(value, start)
    return (entry[0], entry[1], _NO_HASH) if entry else None


def _resolve_versioned(value: bytes | None, start: int) -> Ref | None:
    """Like `_resolve`, for entries that also hold payload hashes (mode last)."""
    if value is None:
        return None
    t, off, h, prev_t, prev_off, prev_h = _VERSIONED_ENTRY.unpack(value)
    if off < start:
        return t, off, h
    if prev_off != NONE and prev_off < start:
        return prev_t, prev_off, prev_h
    return None


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
