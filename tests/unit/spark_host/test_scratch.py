"""Spark's scratch directories: a process's own is kept, those of ended processes are swept."""

from __future__ import annotations

import os
import subprocess
import sys

from streamsift.spark_host import scratch


def _ended_process() -> tuple[int, str]:
    """The id and start time of a process that has just ended."""
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    start = scratch.process_start(child.pid)
    child.kill()
    child.wait()
    assert start is not None
    return child.pid, start


def test_process_start_names_a_live_process_and_not_an_ended_one():
    assert scratch.process_start(os.getpid()) == scratch.process_start(os.getpid())
    pid, _ = _ended_process()
    assert scratch.process_start(pid) is None


def test_sweep_removes_only_the_directories_of_ended_processes(tmp_path):
    pid, start = _ended_process()
    ns = scratch.pid_namespace()
    gone = tmp_path / f"{ns}-{pid}-{start}"
    (gone / "spark-1" / "userFiles").mkdir(parents=True)
    (gone / "librocksdbjni1.so").write_bytes(b"x" * 1024)
    live = tmp_path / scratch.scratch_name(os.getpid())
    live.mkdir()
    reused = tmp_path / f"{ns}-{os.getpid()}-1"  # this pid, but another process's start time
    reused.mkdir()
    other_namespace = tmp_path / f"1{ns}-{pid}-{start}"  # a container's: not ours to judge
    other_namespace.mkdir()
    foreign = tmp_path / "notes"  # not named by us: left alone
    foreign.mkdir()

    assert sorted(scratch.sweep(tmp_path)) == sorted([gone, reused])
    assert not gone.exists() and not reused.exists()
    assert live.is_dir() and other_namespace.is_dir() and foreign.is_dir()


def test_claim_sweeps_then_gives_this_process_one_directory(tmp_path):
    pid, start = _ended_process()
    (tmp_path / f"{scratch.pid_namespace()}-{pid}-{start}").mkdir()
    mine = scratch.claim(tmp_path)
    assert mine.is_dir() and mine.name == scratch.scratch_name(os.getpid())
    assert [p.name for p in tmp_path.iterdir()] == [mine.name]
    assert scratch.claim(tmp_path) == mine
    assert not scratch.owner_is_gone(mine.name)
