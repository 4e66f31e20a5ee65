"""The `streamsift` command as a user runs it: a separate process, real broker, real chdb."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml

from streamsift.embedded.broker import Broker
from streamsift.sample_data.generator import EventSpec, Truth, generate, produce
from support.cli import STREAMSIFT, streamsift
from support.paths import REPO

pytestmark = pytest.mark.e2e


def test_demo_json_reports_matching_counts(tmp_path):
    proc = streamsift("demo", "--events", "3000", "--duplicates", "0.25", "--keys", "300", "--json")
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert report["ok"] is True
    assert report["produced"] == 3000
    assert report["expected_unique"] == 2250
    assert report["rows_in_clickhouse"] == 2250
    assert report["duplicates_dropped"] == 750
    assert report["dlq"] == 0
    assert 0 < report["first_rows_seconds"] <= report["run_seconds"]  # from the pipeline's start
    # the JVM's own start-up notice is not the user's business
    assert "Using incubator modules" not in proc.stderr, proc.stderr


def test_validate_ok_and_errors(tmp_path):
    ok = streamsift("validate", "examples/pipelines/users-dedup.yaml")
    assert ok.returncode == 0 and ok.stdout.startswith("ok"), ok.stderr
    bad = tmp_path / "bad.yaml"
    doc = yaml.safe_load((REPO / "examples/pipelines/users-dedup.yaml").read_text())
    doc["dedup"]["time_window"] = "9d"
    bad.write_text(yaml.safe_dump(doc))
    proc = streamsift("validate", str(bad))
    assert proc.returncode == 2
    assert "dedup.time_window: 9d exceeds the 7d maximum" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_run_until_caught_up_then_resume(tmp_path):
    with Broker() as broker:
        broker.create_topic("users", 3)
        truth = Truth()
        produce(
            broker.bootstrap_servers, "users", generate(EventSpec(2_000, 0.2, 100, seed=11), truth)
        )
        doc = yaml.safe_load((REPO / "examples/pipelines/users-dedup.yaml").read_text())
        doc["source"]["bootstrap_servers"] = broker.bootstrap_servers
        doc["sink"]["clickhouse"]["path"] = str(tmp_path / "ch")
        path = tmp_path / "p.yaml"
        path.write_text(yaml.safe_dump(doc))

        first = streamsift(
            "run", str(path), "--until-caught-up", "--data-dir", str(tmp_path / "state")
        )
        assert first.returncode == 0, first.stderr
        assert "written 1,600" in first.stdout and "duplicates dropped 400" in first.stdout
        assert "Traceback" not in first.stderr

        produce(broker.bootstrap_servers, "users", generate(EventSpec(500, 0.0, seed=12), truth))
        second = streamsift(
            "run", str(path), "--until-caught-up", "--data-dir", str(tmp_path / "state")
        )
        assert second.returncode == 0, second.stderr
        assert "read 500" in second.stdout and "written 500" in second.stdout


def test_run_against_missing_broker_fails_cleanly(tmp_path):
    doc = yaml.safe_load((REPO / "examples/pipelines/users-dedup.yaml").read_text())
    doc["source"]["bootstrap_servers"] = "127.0.0.1:1"
    doc["source"]["connect_timeout"] = "5s"
    doc["sink"]["clickhouse"]["path"] = str(tmp_path / "ch")
    path = tmp_path / "p.yaml"
    path.write_text(yaml.safe_dump(doc))
    proc = streamsift(
        "run", str(path), "--until-caught-up", "--data-dir", str(tmp_path / "s"), timeout=180
    )
    assert proc.returncode == 1
    assert "error:" in proc.stderr and "127.0.0.1:1" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_broker_gone_mid_run_ends_with_a_clear_error_and_an_intact_checkpoint(tmp_path):
    import time

    broker = Broker().start()
    try:
        broker.create_topic("users", 3)
        truth = Truth()
        produce(broker.bootstrap_servers, "users", generate(EventSpec(1_000, 0.0, seed=13), truth))
        doc = yaml.safe_load((REPO / "examples/pipelines/users-dedup.yaml").read_text())
        doc["source"]["bootstrap_servers"] = broker.bootstrap_servers
        doc["source"]["connect_timeout"] = "8s"
        doc["source"]["read_timeout"] = "8s"  # once running, the read's wait for the broker
        doc["sink"]["clickhouse"]["path"] = str(tmp_path / "ch")
        path = tmp_path / "p.yaml"
        path.write_text(yaml.safe_dump(doc))
        state = tmp_path / "state"
        proc = subprocess.Popen(
            [*STREAMSIFT, "run", str(path), "--data-dir", str(state)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
        )
        commits = state / "checkpoints" / "users-dedup" / "spark" / "commits"
        deadline = time.monotonic() + 120
        while not (commits.exists() and any(commits.iterdir())) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert commits.exists() and any(commits.iterdir()), "no batch was committed"
        broker.stop()
        started = time.monotonic()
        out, err = proc.communicate(timeout=120)
        waited = time.monotonic() - started
    finally:
        broker.stop()
    assert proc.returncode == 1, err
    assert "did not answer" in err and broker.bootstrap_servers in err
    assert "Traceback" not in err
    assert waited >= 5  # it waited for the broker rather than failing at once
    assert any(commits.iterdir())  # the checkpoint is still there to resume from
