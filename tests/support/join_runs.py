"""Running a join pipeline continuously until a condition holds (so Spark also runs the
micro-batches in which only the watermark moved, which write left-outer rows)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from streamsift.engine.runner import PipelineRunner


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
