"""Short runs of the kill -9 harness (the full ones: `streamsift chaos --kills 20`, with
`--shape join` for the dedup + join pipeline)."""

from __future__ import annotations

import os
import re
from datetime import datetime, timedelta

import pytest

from streamsift.sample_data.generator import JoinSpec, generate_join_streams
from streamsift.sample_data.join_events import LATENESS, ORDERS_TOPIC, USERS_TOPIC, in_step
from streamsift_bench.chaos import ChaosOptions, run_chaos

pytestmark = pytest.mark.integration

SWEPT = re.compile(r"scratch directories of ended processes under \S+: 1, (\S+) MB")


@pytest.mark.parametrize("mode", ["embedded", "server"])
def test_three_random_kills_lose_and_double_nothing(tmp_path, mode, monkeypatch):
    temp = tmp_path / "temp"  # the runs' temp directory, to see what the kills leave there
    temp.mkdir()
    monkeypatch.setenv("TMPDIR", str(temp))
    work = tmp_path / "work"
    report = run_chaos(
        ChaosOptions(
            kills=3, events=12_000, mode=mode, min_up_s=5, max_up_s=16, seed=3, work_dir=work
        ),
        log=lambda _line: None,
    )
    assert report.shape == "dedup"
    assert report.kills == 3
    assert report.missing == 0
    assert report.duplicated == 0
    assert report.wrong_version == 0
    assert report.in_clickhouse == report.expected > 0
    assert report.dlq_in_clickhouse == report.dlq_expected > 0
    # Spark's temp files of each killed run (the whole process tree, the JVM included) were
    # in its scratch directory, which the next run removed; the last run's holds no file.
    swept = [
        float(m.group(1))
        for path in sorted((work / "logs").glob("run-*.log"))
        for m in SWEPT.finditer(path.read_text())
    ]
    # (how much each held depends on how far its start-up got: test_scratch_dirs.py shows
    # what Spark keeps there)
    assert len(swept) >= 2, swept
    # (a kill may leave other temp files behind, e.g. a tmp*.raw seen once: not Spark's)
    (last,) = (temp / f"streamsift-spark-{os.getuid()}").iterdir()
    assert [p for p in last.rglob("*") if not p.is_dir()] == []


@pytest.mark.parametrize("mode", ["embedded", "server"])
def test_three_random_kills_of_the_join_pipeline_lose_and_double_no_joined_row(tmp_path, mode):
    """Orders ⋈ users (inner), both topics growing while the pipeline is killed: ClickHouse
    ends with exactly the reference join's rows, each once, and every malformed message in
    the DLQ. Each kill comes 0.5-6 s after the run started working on a micro-batch (Spark
    can take 30 s to start on a busy 2-core machine; a join micro-batch takes a second or
    more), so the kills land in reads, joins, inserts and commits rather than in start-up."""
    lines: list[str] = []
    report = run_chaos(
        ChaosOptions(
            shape="join",
            kills=3,
            events=4_000,
            users=150,
            mode=mode,
            min_up_s=0.5,
            max_up_s=6,
            up_from="work",
            malformed_every=400,
            seed=5,
            work_dir=tmp_path,
        ),
        log=lines.append,
    )
    print("\n" + "\n".join(lines) + "\n" + report.table() + f"\n{report.seconds}s")
    assert report.shape == "join (inner)"
    assert report.kills == 3
    assert report.kills_mid_run >= 2  # at most one round may fail to show work in time
    assert report.missing == 0
    assert report.duplicated == 0
    assert report.in_clickhouse == report.expected > 3_000
    assert report.dlq_in_clickhouse == report.dlq_expected > 10


def test_three_random_kills_of_the_latest_join_write_each_order_once(tmp_path):
    """The same with `join.mode: latest` (embedded): every order with a profile in its
    windows once, with one of those profiles, none doubled, the DLQ exact."""
    lines: list[str] = []
    report = run_chaos(
        ChaosOptions(
            shape="join",
            join_mode="latest",
            kills=3,
            events=4_000,
            users=150,
            min_up_s=0.5,
            max_up_s=6,
            up_from="work",
            malformed_every=400,
            seed=7,
            work_dir=tmp_path,
        ),
        log=lines.append,
    )
    print("\n" + "\n".join(lines) + "\n" + report.table() + f"\n{report.seconds}s")
    assert report.shape == "join (inner, latest)"
    assert report.kills == 3
    assert report.kills_mid_run >= 2
    assert (report.missing, report.duplicated, report.wrong_version) == (0, 0, 0)
    assert report.in_clickhouse == report.expected > 2_000
    assert report.dlq_in_clickhouse == report.dlq_expected > 10


def test_join_streams_are_produced_in_step_so_no_record_falls_behind_the_watermark():
    """The join shape's produce order keeps each stream's own order (re-sends included) and
    never lets a record fall behind the join watermark of what was produced before it, the
    older side's newest event time minus the allowed lateness, wherever batches are cut."""
    streams = generate_join_streams(JoinSpec(orders=3_000, users=60, tail=None, seed=2))
    order = in_step(streams.orders, streams.users)
    assert [e for t, e in order if t == ORDERS_TOPIC] == streams.orders
    assert [e for t, e in order if t == USERS_TOPIC] == streams.users
    newest: dict[str, datetime] = {}
    worst = timedelta(0)
    for topic, event in order:
        at = datetime.fromisoformat(event["created_at" if topic == ORDERS_TOPIC else "updated_at"])
        if len(newest) == 2:
            watermark = min(newest.values()) - LATENESS
            assert at >= watermark
            worst = max(worst, min(newest.values()) - at)
        newest[topic] = max(newest.get(topic, at), at)
    assert worst < LATENESS / 4  # far from the edge: the two topics stay close in event time
