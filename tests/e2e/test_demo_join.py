"""`streamsift demo --join` as a user runs it, plus the demo's wiring, reference and data.

The Spark run is a separate process with its own bundled broker and data directory (chdb:
one per process). It uses the left outer join: its rows are the inner join's pairs plus one
NULL row per order without a match, so one run checks the pairs and the watermark events
that make the NULL rows come out; the default (inner) goes through the same code, and its
wiring is checked below without Spark.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from datetime import datetime, timedelta, timezone

import pytest

from streamsift.cli import demo_join
from streamsift.cli.demo_join import report_lines
from streamsift.cli.main import main
from streamsift.sample_data.generator import JoinSpec, generate_join_streams
from streamsift.sample_data.join_events import BAD_ORDERS, BAD_USERS, reference_rows
from support.cli import streamsift

EVENTS, USERS = 300, 15  # seed 7: 60 order re-sends, 15 user re-sends, 25 orders of no user


@pytest.mark.e2e
def test_demo_join_left_outer_writes_exactly_the_expected_rows(tmp_path):
    started = time.monotonic()
    proc = streamsift(
        *["demo", "--join", "--join-type", "left", "--json"],
        *["--events", str(EVENTS), "--keys", str(USERS), "--data-dir", str(tmp_path / "demo")],
        timeout=240,
    )
    print(f"\ndemo --join --join-type left: {time.monotonic() - started:.1f}s")
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "Traceback" not in proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])

    streams = generate_join_streams(JoinSpec(orders=EVENTS, users=USERS))
    assert (streams.order_resends, streams.user_resends, streams.orphan_orders) == (60, 15, 25)
    assert report["ok"] is True
    assert report["join_type"] == "left"
    # Every message was read, and each re-send the generator made was dropped, on each side.
    assert report["orders_produced"] == EVENTS + 1 + len(BAD_ORDERS)  # + the watermark event
    assert report["users_produced"] == len(streams.users) + len(BAD_USERS) == 78
    assert report["read"] == report["orders_produced"] + report["users_produced"]
    assert report["duplicates_dropped_orders"] == report["expected_duplicates_orders"] == 60
    assert report["duplicates_dropped_users"] == report["expected_duplicates_users"] == 15
    assert report["duplicates_dropped"] == 75
    assert report["dlq"] == report["expected_dlq"] == len(BAD_ORDERS) + len(BAD_USERS) == 4
    assert report["late_dropped"] == report["late"] == 0
    # The full row set equals the reference's: 240 pairs (inner) + 25 NULL rows. Every order
    # of a known user has a profile event in its window (one per hour, window 1h), so the
    # orders without a match are exactly those of users that never publish a profile.
    assert report["rows_equal"] is True
    assert report["missing_rows"] == report["unexpected_rows"] == 0
    assert report["rows_in_clickhouse"] == report["expected_rows"] == 265
    assert report["null_rows_in_clickhouse"] == report["expected_null_rows"] == 25
    assert report["expected_unmatched_orders"] == streams.orphan_orders
    assert report["expected_pending"] == 0
    matched_orders = EVENTS - 60 - 25 + 1  # new orders of known users + the watermark order
    pairs = 265 - 25
    assert pairs > matched_orders  # some orders see two profile events


def fake_report(ok: bool) -> dict:
    return {
        "join_type": "inner",
        "watermark_events": 2,
        "orders_produced": 13,
        "orders_resent": 2,
        "orders_malformed": 2,
        "orders_of_unknown_users": 1,
        "users_produced": 8,
        "users_resent": 1,
        "users_malformed": 2,
        "duplicates_dropped_orders": 2,
        "expected_duplicates_orders": 2,
        "duplicates_dropped_users": 1,
        "expected_duplicates_users": 1,
        "expected_rows": 9,
        "expected_null_rows": 0,
        "expected_unmatched_orders": 1,
        "rows_in_clickhouse": 9 if ok else 8,
        "rows_equal": ok,
        "missing_rows": 0 if ok else 1,
        "unexpected_rows": 0,
        "null_rows_in_clickhouse": 0,
        "dlq": 4,
        "expected_dlq": 4,
        "late_dropped": 0,
        "run_seconds": 1.0,
        "ok": ok,
    }


@pytest.mark.parametrize(("ok", "code"), [(True, 0), (False, 1)])
def test_demo_join_defaults_to_inner_and_exits_1_on_a_mismatch(monkeypatch, capsys, ok, code):
    seen = []

    def run(opts, progress=None, stop=None):
        seen.append(opts)
        return fake_report(ok)

    monkeypatch.setattr(demo_join, "run_join_demo", run)
    assert main(["demo", "--join", "--events", "500", "--keys", "20", "--seed", "3"]) == code
    assert seen == [
        demo_join.JoinDemoOptions(events=500, users=20, duplicates=0.2, join_type="inner", seed=3)
    ]
    out = capsys.readouterr().out
    assert out.splitlines()[-1] == (
        "OK: ClickHouse holds exactly the reference's joined rows" if ok else "MISMATCH: see above"
    )
    assert main(["demo", "--join", "--join-type", "left", "--json"]) == code
    assert seen[-1].join_type == "left" and (seen[-1].events, seen[-1].users) == (10_000, 1_000)
    assert json.loads(capsys.readouterr().out)["ok"] is ok


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--join-type", "left"], "--join-type goes with --join"),
        (["demo", "--join", "--duplicates", "1"], "--duplicates must be a share"),
        (["demo", "--join", "--keys", "0"], "--events, --keys and --partitions must be positive"),
    ],
)
def test_demo_join_refuses_bad_arguments(capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


# ---------------------------------------------------------------------------- no Spark below

T0 = datetime(2026, 3, 1, 12, 0, tzinfo=timezone.utc)
MS = timedelta(milliseconds=1)


def order(oid: str, user: str, at: datetime, amount: float = 1.0) -> dict:
    return {"order_id": oid, "user_id": user, "amount": amount, "created_at": at.isoformat()}


def profile(eid: str, user: str, at: datetime) -> dict:
    return {
        "event_id": eid,
        "user": {"id": user, "name": f"n-{eid}", "plan": "pro"},
        "updated_at": at.isoformat(),
    }


FAR = T0 + timedelta(days=1)  # watermark events: both sides move a day ahead


def case_streams() -> tuple[list[dict], list[dict]]:
    orders = [
        order("o1", "u1", T0),
        order("o1", "u1", T0),  # a re-send
        order("o2", "u2", T0),
        order("o3", "ghost", T0),
        order("o4", "u4", T0),
        order("tail", "tail", FAR),
    ]
    users = [
        profile("e1a", "u1", T0 - timedelta(hours=1)),  # the before edge: in
        profile("e1b", "u1", T0 - timedelta(hours=1) - MS),  # just outside
        profile("e1c", "u1", T0 + timedelta(minutes=5)),  # the after edge: in
        profile("e1c", "u1", T0 + timedelta(minutes=5)),  # a re-send
        profile("e2", "u2", T0 + timedelta(minutes=5) + MS),  # just outside: o2 has no match
        profile("e4", "u4", T0),
        profile("e4", "u4", T0 + timedelta(hours=1)),  # same id, a window later: kept
        profile("tail", "tail", FAR),
    ]
    return orders, users


def test_reference_inner_pairs_within_both_edges_and_drops_repeats():
    orders, users = case_streams()
    expected = reference_rows(orders, users, "inner")
    assert expected.rows == Counter(
        {
            ("o1", "e1a", 1.0, "n-e1a", "pro"): 1,
            ("o1", "e1c", 1.0, "n-e1c", "pro"): 1,
            ("o4", "e4", 1.0, "n-e4", "pro"): 1,
            ("tail", "tail", 1.0, "n-tail", "pro"): 1,
        }
    )
    assert (expected.order_duplicates, expected.user_duplicates) == (1, 1)
    assert expected.unmatched_orders == 2  # o2 (profile 1 ms too late) and o3 (no such user)
    assert expected.null_rows == expected.pending == 0


def test_reference_left_outer_null_rows_wait_for_the_watermark():
    orders, users = case_streams()
    expected = reference_rows(orders, users, "left")
    assert expected.null_rows == 2
    assert expected.rows[("o2", None, 1.0, None, None)] == 1
    assert expected.rows[("o3", None, 1.0, None, None)] == 1
    assert sum(expected.rows.values()) == 6
    # Without the watermark events no window has closed: the NULL rows are still pending.
    cut = reference_rows(orders[:-1], users[:-1], "left")
    assert cut.null_rows == 0 and cut.pending == 2
    assert sum(cut.rows.values()) == 3


def test_generated_streams_resend_within_the_dedup_window_and_end_with_watermark_events():
    spec = JoinSpec(orders=2_000, users=40, duplicates=0.25, orphans=0.1, seed=3)
    streams = generate_join_streams(spec)
    assert len(streams.orders) == spec.orders + 1
    assert streams.order_resends == 500
    assert round(streams.user_resends / (len(streams.users) - 1), 2) == 0.25
    assert streams.orders[-1]["order_id"] == "tail-order"
    assert streams.users[-1]["user"]["id"] == "tail-user"
    newest = []
    for events, key, at in (
        (streams.orders[:-1], "order_id", "created_at"),
        (streams.users[:-1], "event_id", "updated_at"),
    ):
        seen: dict[str, tuple[int, dict]] = {}  # key -> (index among new events, event)
        for event in events:
            if event[key] in seen:
                index, original = seen[event[key]]
                assert event == original  # a re-send is an exact copy ...
                assert len(seen) - 1 - index <= 5  # ... at most five new events later
            else:
                seen[event[key]] = (len(seen), event)
        newest.append(max(datetime.fromisoformat(e[at]) for e in events))
    assert streams.orders[-1]["created_at"] == streams.users[-1]["updated_at"]
    tail = datetime.fromisoformat(streams.orders[-1]["created_at"])
    assert tail - max(newest) == timedelta(days=1)
    expected = reference_rows(streams.orders, streams.users, "left")
    assert expected.order_duplicates == streams.order_resends
    assert expected.user_duplicates == streams.user_resends
    assert expected.unmatched_orders == streams.orphan_orders
    assert expected.pending == 0


def test_report_lines_name_the_mismatch():
    report = {**fake_report(False), "join_type": "left", "expected_null_rows": 1}
    lines = report_lines(report)
    assert lines[-1] == "MISMATCH: see above"
    assert "(8 new + 2 re-sends + 2 malformed + 1 watermark event; 1 of users" in lines[0]
    assert any("(1 missing, 0 not expected)" in line for line in lines)
    assert any("NULL rows in ClickHouse" in line and "(expected 1)" in line for line in lines)
