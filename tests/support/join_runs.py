"""Running a join pipeline continuously until a condition holds (so Spark also runs the
micro-batches in which only the watermark moved, which write left-outer rows), or killed
mid-run and resumed."""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable
from pathlib import Path

from streamsift.engine.faults import FAULT_ENV
from streamsift.engine.runner import PipelineRunner
from support.cli import run_until_caught_up


def run_until(runner: PipelineRunner, done: Callable[[], bool], timeout: float = 120.0) -> dict:
    """Run continuously until `done()`; return the run's stats."""
    result: dict = {}
    thread = threading.Thread(target=lambda: result.update(r=runner.run()))
    thread.start()
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline and not done():
            time.sleep(0.5)
    finally:
        runner.stop()
        thread.join(120)
    assert "r" in result, "the pipeline did not stop"
    return result["r"].stats


def killed_then_resumed(doc: dict, tmp_path: Path, count: Callable[[], int]) -> int:
    """`streamsift run --until-caught-up` of `doc` killed (SIGKILL) right after its 3rd
    insert, then run again to the end; return `count()` (rows in the table) after the kill."""
    partial = -1
    for env, code in (({FAULT_ENV: "kill_after_insert:3"}, -signal.SIGKILL), (None, 0)):
        run = run_until_caught_up(doc, tmp_path, env=env)
        assert run.returncode == code, run.stderr[-2000:]
        partial = count() if partial < 0 else partial
    return partial
