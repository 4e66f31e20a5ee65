"""The load generator's stream, truth and rate limit, and the bench's pure measures (no broker)."""

from __future__ import annotations

import json
import time
from datetime import datetime, timedelta

import pytest

from streamsift.sample_data.reference import JoinTruth, dedup_first, reference_join
from streamsift.sample_data.schema import id_checksum_part, pair_checksum_part
from streamsift_bench.common import interpolate, verify
from streamsift_bench.loadgen import (
    LATE_USER_PREFIX,
    JoinLoadSpec,
    LoadGenerator,
    LoadSpec,
    TokenBucket,
)
from streamsift_bench.measures import drain_rates, judge_step, memory_flatness, sustained_rate
from streamsift_bench.report import markdown
from streamsift_bench.verdicts import ratios, targets


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
        (start + t, max(0, int(interpolate(produced, start + t)) - lag)) for t, lag in lags_by_time
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
            "raw_vec": {**ok, "rates": drain_rates("raw_vec", ok)},
            "dedup": {**bad, "rates": drain_rates("streamsift", bad)},
        },
        "live": {},
    }
    assert results["drain"]["raw_vec"]["rates"]["processing_rate"] == 2_000
    assert results["drain"]["dedup"]["rates"]["processing_rate"] is None
    assert ratios(results)[0]["processing_rate"] is None
    met = {t["target"]: t["met"] for t in targets(results)}
    assert met["dedup drain vs raw_vec (wall, start-up included)"] is None
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


# ---------------------------------------------------------------------- the join stream and truth

S = 1000  # ms
WL, WR, DEDUP = timedelta(seconds=30), timedelta(seconds=60), timedelta(hours=1)
T = 1_000_000  # a left record's event time, ms


def _pairs(left, right, dedup=DEDUP):
    truth = reference_join(left, right, WL, WR, dedup)
    return truth.expected_rows, truth.distinct_pairs


@pytest.mark.parametrize(
    ("case", "left", "right", "rows", "distinct"),
    [
        ("same time", [("l1", "u1", T)], [("r1", "u1", T)], 1, 1),
        ("right earlier, inside", [("l1", "u1", T)], [("r1", "u1", T - 59 * S)], 1, 1),
        ("right earlier, on the edge", [("l1", "u1", T)], [("r1", "u1", T - 60 * S)], 1, 1),
        ("right earlier, 1 ms outside", [("l1", "u1", T)], [("r1", "u1", T - 60 * S - 1)], 0, 0),
        ("right later, on the edge", [("l1", "u1", T)], [("r1", "u1", T + 30 * S)], 1, 1),
        ("right later, 1 ms outside", [("l1", "u1", T)], [("r1", "u1", T + 30 * S + 1)], 0, 0),
        ("no right of that key", [("l1", "u1", T)], [("r1", "u2", T)], 0, 0),
        ("no right at all", [("l1", "u1", T)], [], 0, 0),
        (
            "one left, two rights in window, one outside",
            [("l1", "u1", T)],
            [("r1", "u1", T - 10 * S), ("r2", "u1", T + 10 * S), ("r3", "u1", T + 31 * S)],
            2,
            2,
        ),
        (
            "two lefts share a right",
            [("l1", "u1", T), ("l2", "u1", T + 20 * S)],
            [("r1", "u1", T + 5 * S)],
            2,
            2,
        ),
        (
            "left re-send within the dedup window: dropped",
            [("l1", "u1", T), ("l1", "u1", T)],
            [("r1", "u1", T)],
            1,
            1,
        ),
        (
            "right re-send within the dedup window: dropped",
            [("l1", "u1", T)],
            [("r1", "u1", T), ("r1", "u1", T)],
            1,
            1,
        ),
        (
            "re-sends on both sides",
            [("l1", "u1", T), ("l2", "u1", T), ("l1", "u1", T), ("l2", "u1", T)],
            [("r1", "u1", T), ("r1", "u1", T), ("r2", "u1", T), ("r1", "u1", T)],
            4,
            4,
        ),
        (
            "a left id again a dedup window later: kept, joins again",
            [("l1", "u1", T), ("l1", "u1", T + 3_600 * S)],
            [("r1", "u1", T), ("r2", "u1", T + 3_600 * S)],
            2,
            2,
        ),
        ("keys compare whole", [("l1", "u1", T)], [("r1", "u10", T)], 0, 0),
        (
            "two kept versions of an id, the right far from both",
            [("l1", "u1", T), ("l1", "u1", T + 3_600 * S)],
            [("r1", "u1", T + 1_800 * S)],
            0,
            0,
        ),
    ],
)
def test_reference_join_table(case, left, right, rows, distinct):
    assert _pairs(left, right) == (rows, distinct), case


def test_reference_join_counts_a_pair_kept_twice_as_two_rows():
    # A short dedup window keeps the left re-send (1 s later) as a new row; both join r1.
    left = [("l1", "u1", T), ("l1", "u1", T + S)]
    right = [("r1", "u1", T)]
    truth = reference_join(left, right, WL, WR, timedelta(milliseconds=500))
    assert (truth.expected_rows, truth.distinct_pairs) == (2, 1)
    assert truth.left_kept == 2 and truth.left_duplicates == 0
    assert truth.pair_checksum == 2 * pair_checksum_part("l1", "r1")


def test_reference_join_counts_and_checksum():
    left = [("l1", "u1", T), ("l2", "u2", T), ("l1", "u1", T), ("l3", "u9", T)]
    right = [("r1", "u1", T), ("r2", "u2", T + S), ("r2", "u2", T + S), ("r3", "u1", T - S)]
    truth = reference_join(left, right, WL, WR, DEDUP)
    assert truth == JoinTruth(
        left_messages=4,
        right_messages=4,
        left_kept=3,
        right_kept=3,
        left_duplicates=1,
        right_duplicates=1,
        left_matched=2,
        left_unmatched=1,
        expected_rows=3,
        distinct_pairs=3,
        pair_checksum=sum(
            pair_checksum_part(a, b) for a, b in [("l1", "r1"), ("l1", "r3"), ("l2", "r2")]
        ),
    )
    assert pair_checksum_part("l1", "r2") != pair_checksum_part("l2", "r1")


def test_dedup_first_follows_the_documented_timeline():
    h = 3_600 * S
    records = [("A", "k", 10 * h), ("A", "k", 10 * h + h // 2), ("A", "k", 11 * h - 1)]
    records += [("A", "k", 11 * h), ("A", "k", 11 * h + S), ("A", "k", 11 * h + h // 2)]
    kept, dropped = dedup_first(records, h)
    assert [t for _, _, t in kept] == [10 * h, 11 * h] and dropped == 4


def _join_gen(events=2_000, right=200, late=0.0, **join):
    spec = LoadSpec(duplicates=0.2, keys=100, late=late, seed=11)
    jspec = JoinLoadSpec(right_events=right, left_events=events, **join)
    return LoadGenerator(spec, "127.0.0.1:1", "left", join=jspec, join_topic="right")


def _brute_force(left_events, right_events, jspec):
    """Every (left, right) pair checked against the windows: O(n*m), obviously right."""

    one_ms = timedelta(milliseconds=1)

    def first(events, at):
        seen, kept = {}, []
        for e in events:
            t = int(datetime.fromisoformat(e[at]).timestamp() * 1000)
            if e["event_id"] in seen and abs(t - seen[e["event_id"]]) < jspec.dedup_window / one_ms:
                continue
            seen[e["event_id"]] = t
            kept.append((e, t))
        return kept

    rows = []
    rights = first(right_events, "updated_at")
    for le, tl in first(left_events, "created_at"):
        for re_, tr in rights:
            if le["user"]["id"] != re_["user"]["id"]:
                continue
            if tl - jspec.right_window / one_ms <= tr <= tl + jspec.left_window / one_ms:
                rows.append((le["event_id"], re_["event_id"]))
    return rows


def test_generated_join_truth_matches_a_brute_force_join():
    g = _join_gen(events=3_000, right=400, late=0.02, left_window=timedelta(seconds=5))
    left = list(g.events(3_000))
    right = g.right_events()
    rows = _brute_force(left, right, g.join)
    truth = g.join_truth()
    assert truth.expected_rows == len(rows) > 50
    assert truth.distinct_pairs == len(set(rows))
    assert truth.pair_checksum == sum(pair_checksum_part(a, b) for a, b in rows)
    assert truth.left_messages == 3_000 and truth.right_messages == len(right) == 400
    assert truth.left_kept == g.truth.expected_unique
    assert 0 < truth.left_unmatched < truth.left_kept


def test_join_mode_leaves_the_events_alone_but_late_user_ids():
    plain = LoadGenerator(LoadSpec(duplicates=0.2, keys=100, late=0.05, seed=11), "x", "left")
    a = list(plain.events(2_000))
    b = list(_join_gen(late=0.05).events(2_000))
    late = 0
    for x, y in zip(a, b, strict=True):
        if y["user"]["id"].startswith(LATE_USER_PREFIX):
            late += 1
            assert y["created_at"] < "2026-01-01"
            y = {**y, "user": {**y["user"], "id": y["user"]["id"][len(LATE_USER_PREFIX) :]}}
        assert json.dumps(x, sort_keys=True) == json.dumps(y, sort_keys=True)
    assert late > 0


def test_the_right_stream_shape_resends_unmatched_users_and_times():
    g = _join_gen(events=5_000, right=1_000, duplicates=0.3, unmatched=0.2)
    left = list(g.events(5_000))
    right = g.right_events()
    assert len(right) == 1_000  # right_events per left_events, exactly
    ids: dict[str, dict] = {}
    for e in right:
        if e["event_id"] in ids:
            original = ids[e["event_id"]]
            assert e["attempt"] > 0 and e["updated_at"] == original["updated_at"]
            assert e["user"] == original["user"]
        else:
            assert e["attempt"] == 0
            ids[e["event_id"]] = e
    assert 0.25 < (len(right) - len(ids)) / len(right) < 0.35
    users = {e["user"]["id"] for e in right}
    assert not users & set(g.join_unmatched_users) and len(g.join_unmatched_users) == 200
    assert {e["user"]["id"] for e in left} - users  # some events have no profile at all
    # profile times follow the events' clock within a quarter of the smaller window
    newest = max(e["created_at"] for e in left)
    jitter = timedelta(seconds=30) / 4
    for e in right:
        assert datetime.fromisoformat(e["updated_at"]) <= datetime.fromisoformat(newest) + jitter
    assert all(len(json.dumps(e, separators=(",", ":"))) == 1024 for e in right)


class FakeProducer:
    def __init__(self):
        self.sent = []

    def produce(self, topic, value, key, on_delivery):
        self.sent.append((topic, key, value))
        on_delivery(None, None)

    def poll(self, _timeout=0):
        return 0

    def flush(self, _timeout=0):
        return 0


def test_send_interleaves_the_right_stream_after_the_events_it_follows():
    g = _join_gen(events=3_000, right=300)
    g._producer_instance = producer = FakeProducer()
    report = g.send(g.prepare(1_000), None)
    report2 = g.send(2_000, None)
    assert report.acked == 1_000 and report.join_sent == report.join_acked == 100
    assert report2.join_sent == 200 and "join_acked" in report2.as_dict()
    topics = [t for t, _, _ in producer.sent]
    assert topics.count("left") == 3_000 and topics.count("right") == 300
    for topic, key, value in producer.sent:
        if topic == "right":  # keyed by the profile event's id, its dedup key
            assert json.loads(value)["event_id"].encode() == key
    assert topics[-1] == "right"
    # the n-th right message goes out after 10 * n events (never ahead of them)
    firsts = [i for i, t in enumerate(topics) if t == "right"]
    assert all(topics[:i].count("left") >= 10 * (n + 1) for n, i in enumerate(firsts))


def test_join_spec_rejects_impossible_values():
    with pytest.raises(ValueError):
        JoinLoadSpec(duplicates=1.0)
    with pytest.raises(ValueError):
        JoinLoadSpec(unmatched=1.0)
    with pytest.raises(ValueError):
        JoinLoadSpec(left_window=timedelta(0))
    with pytest.raises(ValueError):
        JoinLoadSpec(left_events=0)
    with pytest.raises(ValueError):
        LoadGenerator(LoadSpec(), "x", "t", join=JoinLoadSpec())  # no join topic


def test_memory_flatness_compares_early_and_late_rss_per_role():
    step = {"started_at": 0.0, "ended_at": 100.0}
    mb = 2**20

    # JVM flat at 1,000 MB; Python workers grow from 500 to 800 MB
    def roles(t: float) -> dict[str, int]:
        return {"jvm": 1000 * mb, "python_workers": int((500 + 3 * t) * mb)}

    times = [float(t) for t in range(0, 101)]
    role_samples = [(t, roles(t)) for t in times]
    samples = [(t, sum(roles(t).values()), 0.0) for t in times]
    mem = memory_flatness(samples, step, role_samples)
    assert mem["by_role"]["jvm"]["change"] == 0.0
    assert mem["by_role"]["python_workers"]["early_rss_mb"] == 500 + 3 * 25
    assert mem["by_role"]["python_workers"]["end_rss_mb"] == 500 + 3 * 95
    assert mem["change"] == pytest.approx((1785 - 1575) / 1575, abs=1e-4)
    assert mem["flat"] is False  # +13% over the step
    flat = memory_flatness([(t, 1000 * mb, 0.0) for t in times], step)
    assert (flat["change"], flat["flat"], flat["by_role"]) == (0.0, True, {})
