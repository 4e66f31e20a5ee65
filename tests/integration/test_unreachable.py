"""An unreachable ClickHouse server: a bounded start-up wait (`sink.connect_timeout`), then one
line naming host:port; SIGTERM during the wait ends the run at once; no urllib3 noise."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import pytest
import yaml

from support.cli import start_streamsift, streamsift
from support.clickhouse import count
from support.paths import REPO
from support.ports import closed_port
from support.waiting import wait_for

pytestmark = pytest.mark.integration


def pipeline_file(tmp_path: Path, port: int, connect_timeout: str) -> Path:
    doc = yaml.safe_load((REPO / "examples/pipelines/users-dedup.yaml").read_text())
    doc["source"]["bootstrap_servers"] = "127.0.0.1:1"
    doc["sink"]["clickhouse"] = {"host": "127.0.0.1", "port": port}
    doc["sink"]["connect_timeout"] = connect_timeout
    doc["runtime"] = {"checkpoint_dir": str(tmp_path / "checkpoint")}
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_unreachable_clickhouse_fails_after_connect_timeout_with_one_line(tmp_path):
    port = closed_port()
    proc = start_streamsift("run", str(pipeline_file(tmp_path, port, "2s")), out=tmp_path)
    code = proc.wait(timeout=120)
    stderr = (tmp_path / "stderr").read_text()
    assert code == 1, stderr
    errors = [ln for ln in stderr.splitlines() if ln.startswith("error:")]
    assert len(errors) == 1, stderr
    assert f"127.0.0.1:{port}" in errors[0] and "did not answer within 2s" in errors[0]
    assert "connection refused" in errors[0].lower()
    assert any(ln.startswith("hint:") for ln in stderr.splitlines()), stderr
    assert "Traceback" not in stderr and "urllib3" not in stderr and "Retrying" not in stderr
    assert "WARNING" not in stderr, stderr


def test_sigterm_during_the_start_up_wait_stops_at_once(tmp_path):
    port = closed_port()
    proc = start_streamsift("run", str(pipeline_file(tmp_path, port, "10m")), out=tmp_path)
    try:
        wait_for(
            lambda: "running" in (tmp_path / "stderr").read_text(),
            60,
            what="the run's start",
            proc=proc,
            interval=0.1,
        )
        time.sleep(1.5)  # inside the retry loop's back-off by now
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)  # far below the 10 minutes it would otherwise wait
    finally:
        if proc.poll() is None:
            proc.kill()
    stderr = (tmp_path / "stderr").read_text()
    assert code == 0, stderr
    assert "Traceback" not in stderr and "urllib3" not in stderr
    assert f"127.0.0.1:{port}" in stderr


def uncommitted(spark_dir: Path) -> list[str]:
    """Micro-batches Spark planned (offset log) but did not commit (commit log)."""

    def ids(log: str) -> set[str]:
        d = spark_dir / log
        return {f.name for f in d.iterdir() if f.name.isdigit()} if d.exists() else set()

    return sorted(ids("offsets") - ids("commits"))


def test_sigterm_while_inserts_retry_leaves_the_batch_uncommitted(broker, tmp_path, unique_name):
    """Server mode: ClickHouse goes away mid-run; SIGTERM ends the retrying at once, the batch
    in flight is not committed, and a later run with ClickHouse back writes each row once."""
    from streamsift.embedded.clickhouse_server import spawn_server
    from streamsift.sample_data.generator import EventSpec, Truth, generate, produce

    ch_data = tmp_path / "ch"
    server, port = spawn_server(ch_data)
    broker.create_topic(unique_name, 2)
    doc = yaml.safe_load((REPO / "examples/pipelines/users-dedup.yaml").read_text())
    doc["source"]["bootstrap_servers"] = broker.bootstrap_servers
    doc["source"]["topic"] = unique_name
    doc["sink"]["clickhouse"] = {"host": "127.0.0.1", "port": port}
    doc["runtime"] = {"checkpoint_dir": str(tmp_path / "checkpoint")}
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(doc))
    spark_dir = tmp_path / "checkpoint" / "spark"
    proc = start_streamsift("run", str(path), out=tmp_path)
    try:
        deadline = time.monotonic() + 240
        while not (spark_dir / "metadata").exists():  # the query runs (no data yet)
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        server.kill()
        server.wait()
        truth = Truth()
        produce(broker.bootstrap_servers, unique_name, generate(EventSpec(300, 0.2, 30, 9), truth))
        while not uncommitted(spark_dir):  # a batch is in flight
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        time.sleep(5)  # its inserts fail and are retried; the driver's ping notices
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=200)  # the retries alone would go on for 10 minutes
    finally:
        if proc.poll() is None:
            proc.kill()
        if server.poll() is None:
            server.kill()
    stderr = (tmp_path / "stderr").read_text()
    assert code == 0, stderr
    assert "not committed" in stderr
    assert "Traceback" not in stderr and "urllib3" not in stderr
    assert "Exception in thread" not in stderr and "\tat " not in stderr  # no JVM trace
    assert uncommitted(spark_dir)  # the batch in flight stays to be redone

    server, port = spawn_server(ch_data, port)
    try:
        rerun = streamsift("run", str(path), "--until-caught-up")
        assert rerun.returncode == 0, rerun.stderr
        assert count(port, "users_dedup") == truth.expected_unique
    finally:
        server.terminate()
        server.wait()
