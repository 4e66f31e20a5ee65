"""`join.mode: latest`'s rule (latest_rule.step) for every key of a batch at once, on columns.

The same rule as `step`, record for record: a left record picks the newest right version of its
key with `tl - Wr <= tr <= tl` (ties: the last by Kafka position), else the first with
`tl < tr <= tl + Wl` (ties: the first by position); a left record without one waits, and
expires once `tl + Wl <= watermark`; the right versions kept are those `prune` keeps. The
empty key text is a NULL key: it never matches, and its right records are not kept.

Why: the rule in Python costs per record, and the records crossing to Python as JSON text cost
more (docs/benchmarks.md, "What a join kept by streamsift could reach"). Here only four
columns a side are looked at (key text, event time, partition, offset); the caller keeps the
fields the output needs as Arrow columns and takes the rows by the indices returned. Both
picks are pandas' `merge_asof` over the versions sorted by (event time, partition, offset):
backward takes the last version at or before `tl`, forward the first after it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from streamsift.transforms.join.latest_rule import Windows

_POSITION = ["et", "p", "o"]  # a record's order: event time, then Kafka partition and offset


@dataclass(frozen=True)
class Columns:
    """Records as columns: key text ("" for a NULL key), event time (µs), Kafka partition and
    offset. Row i of each array is record i."""

    keys: np.ndarray
    et: np.ndarray
    partition: np.ndarray
    offset: np.ndarray

    def frame(self, index: str) -> pd.DataFrame:
        return pd.DataFrame(
            {
                "k": self.keys,
                "et": np.asarray(self.et, dtype=np.int64),
                "p": np.asarray(self.partition, dtype=np.int64),
                "o": np.asarray(self.offset, dtype=np.int64),
                index: np.arange(len(self.keys), dtype=np.int64),
            }
        )


@dataclass(frozen=True)
class ColumnStep:
    """What `join_columns` decided, as row indices into its inputs: the matched pairs (left,
    right; in the order of the left records' positions), the left records that expired, and
    the state after the batch (right versions kept, left records still waiting)."""

    matched_left: np.ndarray
    matched_right: np.ndarray
    expired: np.ndarray
    kept_rights: np.ndarray
    waiting: np.ndarray


def join_columns(rights: Columns, lefts: Columns, watermark_us: int, w: Windows) -> ColumnStep:
    """The rule for every key of `rights` and `lefts` (the state's records and the batch's new
    ones together; a record given twice counts once)."""
    r = rights.frame("ri")
    r = r[r["k"] != ""].drop_duplicates(["k", *_POSITION]).sort_values(_POSITION, kind="stable")
    left = lefts.frame("li").drop_duplicates(["k", *_POSITION])
    left = left.sort_values(_POSITION, kind="stable")
    versions = r[["k", "et", "ri"]]
    before = _pick(left, versions, "backward", w.right_us)  # the last with tl - Wr <= tr <= tl
    hit = before["ri"].notna().to_numpy()
    after = _pick(left[~hit], versions, "forward", w.left_us)  # the first, tl < tr <= tl + Wl
    later = after["ri"].notna().to_numpy()
    matched = pd.concat([before[hit], after[later]]).sort_values(_POSITION, kind="stable")
    unmatched = after[~later]
    ends = unmatched["et"].to_numpy() + w.left_us
    return ColumnStep(
        matched_left=matched["li"].to_numpy(dtype=np.int64),
        matched_right=matched["ri"].to_numpy(dtype=np.int64),
        expired=unmatched["li"].to_numpy(dtype=np.int64)[ends <= watermark_us],
        kept_rights=_pruned(r, watermark_us - w.slack_us, w),
        waiting=unmatched["li"].to_numpy(dtype=np.int64)[ends > watermark_us],
    )


def _pick(lefts: pd.DataFrame, versions: pd.DataFrame, direction: str, window_us: int) -> Any:
    """Each left record's version of its key in `direction` within `window_us` (`ri` NaN:
    none); backward takes a version at the left record's time, forward only a later one."""
    return pd.merge_asof(
        lefts,
        versions,
        on="et",
        by="k",
        direction=direction,
        tolerance=window_us,
        allow_exact_matches=direction == "backward",
    )


def _pruned(versions: pd.DataFrame, watermark_us: int, w: Windows) -> np.ndarray:
    """latest_rule.prune on every key: the versions not older than `watermark - Wr`; of those
    at or before the watermark, only the newest of each key (`versions` sorted by position)."""
    times = versions["et"].to_numpy()
    alive = versions[times >= watermark_us - w.right_us]
    settled = alive["et"].to_numpy() <= watermark_us
    newest = alive[settled].drop_duplicates("k", keep="last")
    kept = pd.concat([newest, alive[~settled]])
    return np.sort(kept["ri"].to_numpy(dtype=np.int64))
