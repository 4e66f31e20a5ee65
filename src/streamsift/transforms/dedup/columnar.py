"""The keep/drop decision of partition.py on whole columns at once, for keys without payload
hashes (modes `first` and `exact`).

Same rule as PartitionDedup's record-by-record loop (docs/semantics.md): in offset order, a
record within the window of its key's reference (the last kept record, or the state's entry
as it stood before the range) is dropped, else kept as the new reference; a record more than
one window older than the partition's high-water mark is late (kept, not compared). Records
of different keys never meet, so the records are taken in rounds: round r decides every
key's r-th record at once, each against its key's reference after round r - 1. A range has
few repeats of a key, hence few rounds; `decide_columns` returns None where the loop is the
better tool (many repeats, or times so extreme that differences could overflow 64 bits).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

NONE = -1
MAX_ROUNDS = 64  # more repeats of one key in a range: the loop decides
_SAFE = 1 << 61  # times and windows within this magnitude: differences fit in int64
_ENTRY_WORDS = 4  # kept time, kept offset, previous time, previous offset (partition._ENTRY)


@dataclass(frozen=True)
class ColumnDecision:
    """keep and late per record; the state's changes as (key, entry words) in the order the
    loop makes them (by each key's first kept record)."""

    keep: np.ndarray
    late: np.ndarray
    newest: int | None
    changed: list[int]  # codes of the keys whose entries change
    entries: np.ndarray  # int64, one row of _ENTRY_WORDS per changed key


def as_key_array(keys: Sequence[bytes] | pa.Array) -> pa.Array:
    """The keys as an Arrow binary array (a list of bytes is converted in C)."""
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    return keys if isinstance(keys, pa.Array) else pa.array(keys, pa.binary())


def stored_entries(stored: Sequence[bytes | None]) -> tuple[np.ndarray, np.ndarray]:
    """The entries a multi-get returned: (present per key, int64 words per key; zeros where
    absent). Raises ValueError for an entry that is not one of partition._ENTRY."""
    arr = pa.array(stored, pa.binary())
    present = arr.is_valid().to_numpy(zero_copy_only=False)
    words = np.zeros((len(arr), _ENTRY_WORDS), dtype=np.int64)
    count = int(present.sum())
    if count:
        packed = arr.drop_null()
        size = 8 * _ENTRY_WORDS
        lengths = np.diff(np.frombuffer(packed.buffers()[1], dtype=np.int32)[: count + 1])
        if (lengths != size).any():
            raise ValueError("a dedup state entry has the wrong size")
        start = np.frombuffer(packed.buffers()[1], dtype=np.int32)[0]
        data = np.frombuffer(
            packed.buffers()[2], dtype="<i8", count=count * _ENTRY_WORDS, offset=int(start)
        )
        words[present] = data.reshape(count, _ENTRY_WORDS)
    return present, words


def decide_columns(
    codes: np.ndarray,
    times: np.ndarray,
    offsets: np.ndarray,
    present: np.ndarray,
    stored: np.ndarray,
    start: int,
    high_water: int | None,
    window: int,
) -> ColumnDecision | None:
    """Decide records (in offset order) whose keys are `codes` (indices into the distinct
    keys, numbered in order of first appearance); `present`/`stored`: each distinct key's
    state entry. None: the loop should decide (see the module's docstring)."""
    n = len(codes)
    lo_hi = [int(times.min()), int(times.max())] if n else []
    if high_water is not None:
        lo_hi.append(high_water)
    if any(abs(v) >= _SAFE for v in lo_hi) or not 0 <= window < _SAFE:
        return None
    u = len(present)
    # Each key's reference as the state stood before `start` (partition._resolve).
    cur_off, prev_t, prev_off = stored[:, 1], stored[:, 2], stored[:, 3]
    use_cur = present & (cur_off < start)
    use_prev = present & ~use_cur & (prev_off != NONE) & (prev_off < start)
    has_base = use_cur | use_prev
    base_t = np.where(use_cur, stored[:, 0], np.where(use_prev, prev_t, NONE))
    base_off = np.where(use_cur, cur_off, np.where(use_prev, prev_off, NONE))
    if ((base_t >= _SAFE) | (base_t <= -_SAFE))[has_base].any():
        return None  # a reference the loop stored for an extreme time

    late = times < high_water - window if high_water is not None else np.zeros(n, dtype=bool)
    active = np.flatnonzero(~late)
    act_codes = codes[active]
    counts = np.bincount(act_codes, minlength=u)
    rounds = int(counts.max()) if len(active) else 0
    if rounds > MAX_ROUNDS:
        return None
    # Each active record's rank among its key's active records (offset order kept).
    order = np.argsort(act_codes, kind="stable")
    group_start = np.concatenate(([0], np.cumsum(counts)[:-1]))
    rank = np.empty(len(active), dtype=np.int64)
    rank[order] = np.arange(len(active)) - group_start[act_codes[order]]
    by_rank = active[np.argsort(rank, kind="stable")]
    per_round = np.bincount(rank, minlength=rounds)

    keep = np.ones(n, dtype=bool)
    ref_t, has_ref = base_t.copy(), has_base.copy()
    last_off = np.full(u, NONE, dtype=np.int64)
    at = 0
    for size in per_round.tolist():
        idx = by_rank[at : at + size]
        at += size
        c = codes[idx]
        t = times[idx]
        dup = has_ref[c] & (np.abs(t - ref_t[c]) < window)
        keep[idx[dup]] = False
        kept = idx[~dup]
        kc = codes[kept]
        ref_t[kc] = times[kept]
        last_off[kc] = offsets[kept]
        has_ref[kc] = True

    kept_idx = np.flatnonzero(keep & ~late)
    newest = high_water
    if len(kept_idx):
        top = int(times[kept_idx].max())
        newest = top if newest is None or top > newest else newest
    first_kept = np.unique(codes[kept_idx], return_index=True)
    changed_codes = first_kept[0][np.argsort(first_kept[1], kind="stable")]
    entries = np.empty((len(changed_codes), _ENTRY_WORDS), dtype=np.int64)
    entries[:, 0] = ref_t[changed_codes]
    entries[:, 1] = last_off[changed_codes]
    entries[:, 2] = base_t[changed_codes]
    entries[:, 3] = base_off[changed_codes]
    return ColumnDecision(keep, late, newest, changed_codes.tolist(), entries)


def pack_entries(entries: np.ndarray) -> list[bytes]:
    """Each row of int64 words as one little-endian state entry."""
    raw = entries.astype("<i8", copy=False).tobytes()
    size = 8 * _ENTRY_WORDS
    return [raw[i : i + size] for i in range(0, len(raw), size)]
