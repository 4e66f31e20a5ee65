"""Ctrl-C and SIGTERM once Spark is up: `run` and `demo` (`--join` too) finish the micro-batch
in flight, say so in one line and exit 0; a second Ctrl-C aborts at once. Nothing is lost or
doubled.

The CLI runs in its own process group, as under a terminal, so a Ctrl-C (SIGINT to the
group) reaches every process of that group, as it does when a user presses the keys.
"""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from streamsift.engine.signals import STOPPING_MESSAGE
from streamsift.sample_data.generator import EventSpec, Truth, generate, produce
from support.cli import start_streamsift, streamsift
from support.clickhouse import embedded_count
from support.paths import EXAMPLES
from support.waiting import wait_for

pytestmark = pytest.mark.e2e
EXAMPLE = EXAMPLES / "users-dedup.yaml"


def has_files(directory: Path) -> Callable[[], bool]:
    return lambda: directory.exists() and any(directory.iterdir())


def assert_clean(stderr: str) -> None:
    assert "Traceback" not in stderr, stderr
    assert "py4j" not in stderr, stderr
    assert "KeyboardInterrupt" not in stderr, stderr
    assert "Exception in thread" not in stderr and "\tat " not in stderr, stderr  # JVM traces


@pytest.fixture
def users_pipeline(broker, tmp_path, unique_name) -> tuple[Path, Truth]:
    """A dedup pipeline over a topic with 600 events (480 unique), 100 rows per micro-batch."""
    broker.create_topic(unique_name, 2)
    truth = Truth()
    produce(broker.bootstrap_servers, unique_name, generate(EventSpec(600, 0.2, 50, seed=5), truth))
    doc = yaml.safe_load(EXAMPLE.read_text())
    doc["name"] = unique_name.replace("_", "-")[:60]
    doc["source"]["bootstrap_servers"] = broker.bootstrap_servers
    doc["source"]["topic"] = unique_name
    doc["sink"]["clickhouse"]["path"] = str(tmp_path / "ch")
    doc["runtime"] = {"checkpoint_dir": str(tmp_path / "checkpoint"), "max_rows_per_batch": 100}
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path, truth


def finish_and_check(path: Path, tmp_path: Path, truth: Truth) -> None:
    """Run the pipeline to the end of the topic: ClickHouse then holds each key exactly once."""
    rerun = streamsift("run", str(path), "--until-caught-up")
    assert rerun.returncode == 0, rerun.stderr
    assert embedded_count(tmp_path / "ch", "users_dedup") == truth.expected_unique


def send_stop(proc: subprocess.Popen, how: str) -> None:
    if how == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    elif how == "kill -INT":
        os.kill(proc.pid, signal.SIGINT)
    else:
        os.kill(proc.pid, signal.SIGTERM)


@pytest.mark.parametrize("how", ["ctrl-c", "kill -INT", "SIGTERM"])
def test_ctrl_c_after_spark_is_up_stops_after_the_batch_in_flight(users_pipeline, tmp_path, how):
    path, truth = users_pipeline
    proc = start_streamsift("run", str(path), out=tmp_path)
    try:
        commits = has_files(tmp_path / "checkpoint" / "spark" / "commits")
        wait_for(commits, 240, what="a commit", proc=proc, interval=0.2)
        send_stop(proc, how)
        code = proc.wait(timeout=180)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    stderr = (tmp_path / "stderr").read_text()
    assert code == 0, stderr
    assert_clean(stderr)
    assert "stopping after the current micro-batch" in stderr
    assert "done: read" in (tmp_path / "stdout").read_text()
    finish_and_check(path, tmp_path, truth)


def test_second_ctrl_c_aborts_at_once_and_the_rerun_is_exact(users_pipeline, tmp_path):
    """The second Ctrl-C goes out as soon as the first one's line is; a run whose stop was
    done before it landed (it then exits 0 with its `done:` line: nothing was left to abort)
    is tried again from its checkpoint."""
    path, truth = users_pipeline
    commits = tmp_path / "checkpoint" / "spark" / "commits"
    stderr_file = tmp_path / "stderr"
    for _attempt in range(3):
        before = count_files(commits)
        proc = start_streamsift("run", str(path), out=tmp_path)
        try:
            wait_for(
                lambda n=before: count_files(commits) > n,
                240,
                what="a commit",
                proc=proc,
                interval=0.2,
            )
            os.killpg(proc.pid, signal.SIGINT)
            wait_for(
                lambda: STOPPING_MESSAGE in stderr_file.read_text(),
                30,
                what="the first Ctrl-C's line",
                interval=0.01,
            )
            os.killpg(proc.pid, signal.SIGINT)
            code = proc.wait(timeout=60)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGKILL)
        if code != 0:
            break
        assert "done:" in (tmp_path / "stdout").read_text()
    stderr = stderr_file.read_text()
    assert code == 130, stderr
    assert_clean(stderr)
    assert stderr.count("aborted") == 1, stderr
    finish_and_check(path, tmp_path, truth)


def count_files(directory: Path) -> int:
    return len(list(directory.glob("[0-9]*"))) if directory.exists() else 0


@pytest.mark.parametrize(
    ("demo", "how"),
    [(["demo"], "ctrl-c"), (["demo"], "kill -INT"), (["demo", "--join"], "ctrl-c")],
)
def test_ctrl_c_during_the_demo_stops_it_cleanly(tmp_path, demo, how):
    data = tmp_path / "demo"
    proc = start_streamsift(*demo, "--events", "20000", "--data-dir", str(data), out=tmp_path)
    name = "demo-join" if "--join" in demo else "demo"
    try:
        offsets = data / "checkpoints" / name / "spark" / "offsets"
        wait_for(has_files(offsets), 240, what="the first micro-batch", proc=proc, interval=0.2)
        send_stop(proc, how)
        code = proc.wait(timeout=240)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    stderr = (tmp_path / "stderr").read_text()
    assert code == 0, stderr
    assert_clean(stderr)
    assert "stopping after the current micro-batch" in stderr
    if "--join" in demo:  # a stopped join may lack its last watermark batches: no report
        assert "demo stopped before it finished: nothing to compare" in stderr
