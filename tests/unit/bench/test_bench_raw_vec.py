"""The vectorised ceiling's pure parts: first-wins dedup on Arrow arrays, the pyarrow parse of
the load generator's events, and the verification's sample of column values."""

from __future__ import annotations

import json
import random

import pyarrow as pa

from streamsift_bench.common import ARROW_SCHEMA, check_sample, sample_record
from streamsift_bench.loadgen import SAMPLE_MAX, LoadTruth
from streamsift_bench.raw_vec import first_wins, parse_events


def test_first_wins_keeps_the_first_occurrence_of_each_id_across_calls():
    seen: set[str] = set()
    first = first_wins(pa.array(["a", "b", "a", "c", "b"]), seen)
    assert first.tolist() == [True, True, False, True, False]
    second = first_wins(pa.chunked_array([["c", "d"], ["d", "a", "e"]]), seen)
    assert second.tolist() == [False, True, False, False, True]
    assert seen == {"a", "b", "c", "d", "e"}
    assert first_wins(pa.array([], pa.string()), seen).tolist() == []


def test_first_wins_matches_a_plain_set_on_random_ids():
    rng = random.Random(3)
    seen_vec: set[str] = set()
    seen_ref: set[str] = set()
    for _ in range(20):
        ids = [f"id{rng.randrange(500)}" for _ in range(rng.randrange(1, 200))]
        expected = []
        for i in ids:
            expected.append(i not in seen_ref)
            seen_ref.add(i)
        assert first_wins(pa.array(ids), seen_vec).tolist() == expected


def _event(i: int, attempt: int = 0) -> dict:
    return {
        "event_id": f"e{i}",
        "type": "view",
        "user": {"id": f"u{i}", "name": "n", "country": "NL"},
        "session": {"id": f"s{i}", "device": {"os": "linux", "browser": "x"}},
        "page": {"url": "/p"},
        "tags": ["a", "b"][: i % 3],
        "amount": i + 0.25,
        "attempt": attempt,
        "created_at": f"2026-01-01T00:00:0{i}.123000+00:00",
        "note": "xxxx",
        "produced_at_ms": 1_700_000_000_000 + i,
    }


def test_parse_events_gives_the_tables_columns():
    values = [json.dumps(_event(i, attempt=i % 2)).encode() for i in range(3)]
    table = parse_events(values)
    assert table.schema == ARROW_SCHEMA
    row = table.slice(1, 1).to_pylist()[0]
    assert row["event_id"] == "e1" and row["user_id"] == "u1" and row["country"] == "NL"
    assert row["session_id"] == "s1" and row["os"] == "linux" and row["tags"] == ["a"]
    assert row["amount"] == 1.25 and row["attempt"] == 1
    assert row["created_at"].isoformat() == "2026-01-01T00:00:01.123000+00:00"


def _as_rows(events: list[dict]) -> list[tuple]:
    """What ClickHouse answers for the sample query, from events."""
    out = []
    for e in events:
        r = sample_record(e)
        out.append(
            (*(r[c] for c in ("event_id", "amount", "user_id", "country", "session_id")),
             r["os"], r["created_ms"], e["attempt"])
        )  # fmt: skip
    return out


def test_the_sample_check_compares_values_and_first_versions():
    events = [_event(i) for i in range(3)]
    sample = [sample_record(e) for e in events]
    resend = _event(1, attempt=1)
    ok = check_sample(lambda _sql: _as_rows([*events, resend]), "t", sample)
    assert ok["ok"] and ok["sampled"] == 3 and ok["rows_checked"] == 4
    wrong = _event(2)
    wrong["amount"] = 99.0
    bad = check_sample(lambda _sql: _as_rows([events[0], events[1], wrong]), "t", sample)
    assert not bad["ok"] and "e2 amount" in bad["wrong_values"][0]
    shifted = _event(0)
    shifted["created_at"] = "2026-01-01T00:00:00.124000+00:00"  # a millisecond off
    assert not check_sample(lambda _sql: _as_rows([shifted, *events[1:]]), "t", sample)["ok"]
    missing = check_sample(lambda _sql: _as_rows(events[:2]), "t", sample)
    assert not missing["ok"] and missing["ids_without_one_first_version"] == ["e2"]
    twice = check_sample(lambda _sql: _as_rows([*events, events[0]]), "t", sample)
    assert not twice["ok"] and twice["ids_without_one_first_version"] == ["e0"]


def test_the_truth_sample_is_spread_over_the_stream_and_bounded():
    truth = LoadTruth()
    for i in range(5_000):
        truth.offer(i, _event(i % 10))
    assert SAMPLE_MAX // 2 <= len(truth.sample) <= SAMPLE_MAX
    assert truth.sample_every == 32
    assert truth.as_dict()["sample"][0]["created_ms"] % 1000 == 123


def test_raw_vec_server_runs_only_beside_dedup_in_server_mode():
    from streamsift_bench.options import BenchOptions
    from streamsift_bench.runner import Bench

    def runs(**opts: object) -> bool:
        return Bench._runs_with("raw_vec_server", BenchOptions(**opts))  # type: ignore[arg-type]

    assert runs(clickhouse="server", scenarios=("dedup",))
    assert not runs(clickhouse="embedded", scenarios=("dedup",))
    assert not runs(clickhouse="server", scenarios=("ingest",))
    assert Bench._runs_with("raw_vec", BenchOptions(clickhouse="server"))
