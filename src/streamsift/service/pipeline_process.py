"""The process that runs one pipeline for the service.

    python -m streamsift.service.pipeline_process --dir <data_dir>/pipelines/<id> [--driver-inserts]

It reads the pipeline document (JSON, secrets in clear) from its stdin, so that no secret is
ever written to disk in clear, and runs it (service/pipeline_run.py, which also writes its
status.json) until SIGTERM (graceful: the micro-batch in flight finishes; a second one
aborts) or a failure. Checkpoints go under `--dir` (unless the document names its own
`runtime.checkpoint_dir`). This is a pipeline's home under `runtime.isolation: process`;
the others share the service's pipeline host (service/pipeline_host.py).

A stop that outlasts `runtime.stop_timeout` (plus a grace for Spark's own shutdown) ends the
process anyway. Exit codes: those of pipeline_run.py, and 130 after an abort.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import sys
import threading
from pathlib import Path
from typing import Any

from streamsift.service.pipeline_run import (
    EXIT_FAILED,
    EXIT_RESTART,
    STATUS_FILE,
    STOP_GRACE_S,
    PipelineRun,
    exit_now,
)

__all__ = ["EXIT_FAILED", "EXIT_RESTART", "STATUS_FILE", "main", "run"]

ABORTED_EXIT_CODE = 130

log = logging.getLogger("streamsift.worker")


def run(
    directory: Path,
    document: dict[str, Any],
    driver_inserts: bool,
    max_attempts: int | None = None,
) -> int:
    """Run the pipeline until stopped, retrying transient faults; the process's exit code.
    `max_attempts`: the server's retry limit, for a pipeline that sets none."""
    from streamsift.engine.signals import AbortRequested, install_stop_handlers

    pipeline_run = PipelineRun(directory, document, driver_inserts, max_attempts)

    def stop() -> None:
        _end_after(pipeline_run.stop_timeout_s + STOP_GRACE_S, pipeline_run)
        pipeline_run.stop()

    install_stop_handlers(stop)
    try:
        return pipeline_run.run()
    except AbortRequested:
        pipeline_run.end("stopped", None, "aborted: the micro-batch in flight was not committed", 0)
        exit_now(ABORTED_EXIT_CODE)


def _end_after(seconds: float, pipeline_run: PipelineRun) -> None:
    """A stop must end: if the process is still here after `seconds`, it says so and exits
    (the micro-batch in flight is not committed; the next run redoes it)."""

    def end() -> None:
        note = (
            f"stopped by ending its process: the stop took longer than {seconds:.0f}s "
            "(runtime.stop_timeout plus Spark's shutdown); the micro-batch in flight is redone "
            "on resume"
        )
        log.warning("%s", note)
        pipeline_run.end("stopped", None, note, 0)
        exit_now(0)

    timer = threading.Timer(seconds, end)
    timer.daemon = True
    timer.start()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m streamsift.service.pipeline_process",
        description="Run one pipeline of the service; its document (JSON) comes on stdin.",
    )
    parser.add_argument("--dir", type=Path, required=True, help="the pipeline's directory")
    parser.add_argument(
        "--driver-inserts",
        action="store_true",
        help="insert into ClickHouse from the driver, not from the executors",
    )
    parser.add_argument(
        "--retry-attempts",
        type=int,
        default=None,
        help="retries of a transient fault before failing, for a pipeline that sets none",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )
    args.dir.mkdir(parents=True, exist_ok=True)
    document = json.loads(sys.stdin.read())
    with contextlib.suppress(OSError):
        sys.stdin.close()
    return run(args.dir.resolve(), document, args.driver_inserts, args.retry_attempts)


if __name__ == "__main__":
    sys.exit(main())
