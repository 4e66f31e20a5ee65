"""The `streamsift` command as a user runs it: a separate process, real broker, real chdb."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from streamsift.testing.broker import Broker
from streamsift.testing.generator import EventSpec, Truth, generate, produce

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]


def streamsift(*args: str, timeout: float = 300, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "streamsift.cli.main", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=kw.pop("cwd", REPO),
        env={**os.environ, **kw.pop("env", {})},
    )


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
