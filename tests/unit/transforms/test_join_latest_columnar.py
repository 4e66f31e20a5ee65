"""`join.mode: latest`'s rule on columns (transforms/join/latest_columnar.py) decides as the
rule for one key (latest_rule.step) does, batch by batch, on random histories of many keys."""

from __future__ import annotations

import random

import numpy as np
import pytest

from streamsift.transforms.join.latest_columnar import Columns, join_columns
from streamsift.transforms.join.latest_rule import Record, Windows, step

S = 1_000_000
WINDOWS = [Windows(30 * S, 60 * S), Windows(5 * S, 0), Windows(20 * S, 40 * S, slack_us=15 * S)]
KEYS = ["", '{"k":1}', '{"k":2}', '{"k":3}', '{"k":"x"}']  # "": a NULL key


def columns(records: list[tuple[str, Record]]) -> Columns:
    return Columns(
        keys=np.array([k for k, _ in records], dtype=object),
        et=np.array([r.et for _, r in records], dtype=np.int64),
        partition=np.array([r.partition for _, r in records], dtype=np.int64),
        offset=np.array([r.offset for _, r in records], dtype=np.int64),
    )


def history(rng: random.Random, batches: int) -> list[tuple[list, list, int]]:
    """Batches of (new rights, new lefts, watermark): keyed records whose times often tie,
    some behind the watermark, the watermark moving on by steps."""
    offsets = {"R": 0, "L": 0}
    out, watermark = [], 0
    for _ in range(batches):
        new: dict[str, list[tuple[str, Record]]] = {"R": [], "L": []}
        for side in ("R", "L"):
            for _ in range(rng.randint(0, 12)):
                t = max(0, watermark + rng.choice([-10, 0, 5, 10, 20, 40, 70]) * S)
                t += rng.choice([0, 0, 1])  # ties on event time, and near-ties
                partition = rng.randint(0, 2)
                offsets[side] += 1
                record = Record(t, partition, offsets[side], f"{side}{offsets[side]}")
                new[side].append((rng.choice(KEYS), record))
        out.append((new["R"], new["L"], watermark))
        watermark += rng.choice([0, 5, 10, 30]) * S
    return out


@pytest.mark.parametrize("windows", WINDOWS, ids=["30s-60s", "5s-0", "with slack"])
@pytest.mark.parametrize("seed", range(20))
def test_the_columns_decide_as_the_rule_for_each_key(seed: int, windows: Windows) -> None:
    rng = random.Random(seed)
    by_key: dict[str, tuple[tuple[Record, ...], tuple[Record, ...]]] = {}
    rights: list[tuple[str, Record]] = []  # the columnar state
    lefts: list[tuple[str, Record]] = []
    for new_rights, new_lefts, watermark in history(rng, 12):
        expected = {"matched": set(), "expired": set(), "rights": set(), "lefts": set()}
        for key in {k for k, _ in [*new_rights, *new_lefts]} | set(by_key):
            before = by_key.get(key, ((), ()))
            result = step(
                before[0],
                before[1],
                [r for k, r in new_rights if k == key],
                [r for k, r in new_lefts if k == key],
                watermark,
                windows,
                key_is_null=key == "",
            )
            expected["matched"] |= {(key, lt, rt) for lt, rt in result.matched}
            expected["expired"] |= {(key, lt) for lt in result.expired}
            expected["rights"] |= {(key, r) for r in result.rights}
            expected["lefts"] |= {(key, r) for r in result.lefts}
            by_key[key] = (result.rights, result.lefts)

        all_rights, all_lefts = rights + new_rights, lefts + new_lefts
        got = join_columns(columns(all_rights), columns(all_lefts), watermark, windows)
        matched = list(zip(got.matched_left, got.matched_right, strict=True))
        assert {(all_lefts[li][0], all_lefts[li][1], all_rights[ri][1]) for li, ri in matched} == (
            expected["matched"]
        )
        assert len(matched) == len(expected["matched"])  # one row per left record
        assert {all_lefts[i] for i in got.expired} == expected["expired"]
        rights = [all_rights[i] for i in got.kept_rights]
        lefts = [all_lefts[i] for i in got.waiting]
        assert set(rights) == expected["rights"]
        assert set(lefts) == expected["lefts"]


def test_a_version_after_the_left_record_is_picked_only_without_one_before() -> None:
    key = '{"k":1}'
    w = Windows(30 * S, 60 * S)
    rights = columns([(key, Record(10 * S, 0, 1, "")), (key, Record(25 * S, 0, 2, ""))])
    lefts = columns([(key, Record(20 * S, 0, 1, "")), (key, Record(5 * S, 0, 2, ""))])
    got = join_columns(rights, lefts, 0, w)
    # ordered by the left records' positions: the one at 5 s first
    assert got.matched_left.tolist() == [1, 0]
    assert got.matched_right.tolist() == [0, 0]  # 5 s: the first after it; 20 s: the one before


def test_a_null_key_never_matches_and_its_right_records_are_not_kept() -> None:
    w = Windows(30 * S, 60 * S)
    got = join_columns(
        columns([("", Record(10 * S, 0, 1, ""))]), columns([("", Record(10 * S, 0, 1, ""))]), 0, w
    )
    assert got.matched_left.size == 0 and got.kept_rights.size == 0
    assert got.waiting.tolist() == [0]
