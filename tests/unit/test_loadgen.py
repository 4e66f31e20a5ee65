"""The load generator's stream, truth and rate limit, and the bench's pure measures (no broker)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta

import pytest

from streamsift.bench.common import verify
from streamsift.bench.report import markdown, ratios, targets
from streamsift.bench.runner import _interp, drain_rates, judge_step, sustained_rate
from streamsift.testing.loadgen import (
    LoadGenerator,
    LoadSpec,
    TokenBucket,
    id_checksum_part,
)


def gen(**spec) -> LoadGenerator:
    return LoadGenerator(LoadSpec(**spec), "127.0.0.1:1", "t")


def test_same_seed_same_stream_other_seed_other_stream():
    a = [json.dumps(e, sort_keys=True) for e in gen(seed=3).events(2_000)]
    b = [json.dumps(e, sort_keys=True) for e in gen(seed=3).events(2_000)]
    c = [json.dumps(e, sort_keys=True) for e in gen(seed=4).events(2_000)]
    assert a == b
    assert a != c


def test_truth_counts_and_checksum_match_the_stream():
    g = gen(duplicates=0.3, keys=50, late=0.05, seed=1)
    events = list(g.events(10_000))
    first: dict[str, dict] = {}
    originals: list[str] = []
    for position, e in enumerate(events):
        if e["event_id"] in first:
            assert e["attempt"] > 0, "a re-send carries a higher attempt"
            # a re-send repeats one of the last `keys` originals
            assert e["event_id"] in originals[-50:], position
        else:
            assert e["attempt"] == 0
            first[e["event_id"]] = e
            if e["created_at"] >= "2026-01-01":  # late events are never re-sent
                originals.append(e["event_id"])
    t = g.truth
    assert t.produced == 10_000
    assert t.expected_unique == len(first)
    assert t.duplicates == 10_000 - len(first)
    assert 0.27 < t.duplicates / t.produced < 0.33
    assert t.id_checksum == sum(id_checksum_part(i) for i in first)
    late = [e for e in first.values() if e["created_at"] < "2026-01-01"]
    assert len(late) == t.late > 0


def test_late_events_are_behind_by_late_by_and_never_resent():
    g = gen(duplicates=0.5, keys=10_000, late=0.2, late_by=timedelta(hours=3), seed=5)
    events = list(g.events(5_000))
    counts: dict[str, int] = {}
    for e in events:
        counts[e["event_id"]] = counts.get(e["event_id"], 0) + 1
    late_ids = {
        e["event_id"]
        for e in events
        if datetime.fromisoformat(e["created_at"])
        < datetime.fromisoformat("2026-01-01T00:00:00+00:00")
    }
    assert late_ids and all(counts[i] == 1 for i in late_ids)
    newest = datetime.fromisoformat("2026-01-01T00:00:00+00:00") + timedelta(
        milliseconds=10 * 5_000
    )
    for e in events:
        if e["event_id"] in late_ids:
            assert newest - datetime.fromisoformat(e["created_at"]) >= timedelta(
                hours=3
            ) - timedelta(minutes=1)


@pytest.mark.parametrize("size", [600, 1024, 4096])
def test_payloads_are_padded_to_size_and_stamped_last(size):
    g = gen(payload_bytes=size)
    for key, head in g.prepare(200):
        value = head + b"1795436352951}"
        assert len(value) == size
        doc = json.loads(value)
        assert doc["produced_at_ms"] == 1795436352951
        assert key.decode() == doc["event_id"]
        assert doc["session"]["device"]["os"] and doc["user"]["country"]


def test_spec_rejects_impossible_shares():
    with pytest.raises(ValueError):
        LoadSpec(duplicates=1.0)
    with pytest.raises(ValueError):
        LoadSpec(duplicates=0.6, late=0.5)
    with pytest.raises(ValueError):
        LoadSpec(keys=0)


def test_token_bucket_never_exceeds_rate_plus_burst():
    bucket = TokenBucket(2_000, burst=50)
    started = time.monotonic()
    granted = 0
    while time.monotonic() - started < 0.3:
        granted += bucket.take(1_000)
    elapsed = time.monotonic() - started
    assert granted <= 50 + 2_000 * elapsed + 1
    assert granted > 0


# ---------------------------------------------------------------------- bench measures


def _step(lags_by_time, rate=1_000, seconds=8.0, achieved=1_000.0, drained=True):
    start = 100.0
    produced = [(start, 0), (start + seconds, int(rate * seconds))]
    committed = [
        (start + t, max(0, int(_interp(produced, start + t)) - lag)) for t, lag in lags_by_time
    ]
    report = {
        "started_at": start,
        "ended_at": start + seconds,
        "achieved_rps": achieved,
        "acked": int(rate * seconds),
    }
    return judge_step("ramp", rate, report, produced, committed, drained, start + seconds + 1)


def test_a_step_with_flat_lag_is_sustained_and_a_growing_one_is_not():
    flat = _step([(t, 1_500) for t in range(1, 9)])
    assert flat["sustained"] and flat["max_lag"] == 1_500
    growing = _step([(t, 600 * t) for t in range(1, 9)])
    assert not growing["sustained"]
    assert not _step([(t, 1_000) for t in range(1, 9)], drained=False)["sustained"]
    slow_generator = _step([(t, 100) for t in range(1, 9)], achieved=700.0)
    assert not slow_generator["sustained"] and not slow_generator["generator_kept_up"]


def test_verify_needs_every_count_and_the_checksum():
    truth = {"produced": 10, "expected_unique": 8, "id_checksum": 123}

    def fake(rows, distinct, later, checksum):
        def query(sql):
            return (checksum,) if "DISTINCT" in sql else (rows, distinct, later)

        return query

    assert verify(fake(8, 8, 0, 123), "t", truth, dedup=True)["exact"]
    assert not verify(fake(8, 8, 0, 124), "t", truth, dedup=True)["exact"]  # other ids
    assert not verify(fake(8, 8, 1, 123), "t", truth, dedup=True)["exact"]  # a later version
    assert not verify(fake(9, 8, 1, 123), "t", truth, dedup=True)["exact"]  # a duplicate
    assert verify(fake(10, 8, 2, 123), "t", truth, dedup=False)["exact"]
    assert not verify(fake(9, 8, 2, 123), "t", truth, dedup=False)["exact"]


def test_a_failed_run_gets_no_rate_and_no_ratio():
    ok = {"exact": True, "read": 1_000, "processing_seconds": 0.5, "wall_seconds": 2.0}
    bad = {"exact": False, "read": 1_000, "busy_seconds": 0.1, "wall_seconds": 1.0, "rows": 7}
    results = {
        "started_at": "now",
        "options": {"payload_bytes": 1024, "partitions": 3, "duplicates": 0.2, "keys": 10},
        "machine": {"cores": 2, "cpu": "", "memory_gb": 1, "python": "3", "versions": {}},
        "drain": {
            "raw": {**ok, "rates": drain_rates("raw", ok)},
            "dedup": {**bad, "rates": drain_rates("streamsift", bad)},
        },
        "live": {},
    }
    assert results["drain"]["raw"]["rates"]["processing_rate"] == 2_000
    assert results["drain"]["dedup"]["rates"]["processing_rate"] is None
    assert ratios(results)[0]["processing_rate"] is None
    met = {t["target"]: t["met"] for t in targets(results)}
    assert met["dedup vs raw consumer (processing rate)"] is None
    text = markdown({**results, "ratios": ratios(results), "targets": targets(results)})
    assert "**FAILED**" in text and "SOME RUNS FAILED" in text


def test_sustained_rate_is_the_highest_rate_below_the_first_failure():
    steps = [
        {"rate": 1_000, "sustained": True},
        {"rate": 20_000, "sustained": True},
        {"rate": 5_000, "sustained": False},
        {"rate": 2_500, "sustained": True},
    ]
    assert sustained_rate(steps) == 2_500
    assert sustained_rate([{"rate": 1_000, "sustained": False}]) is None
