"""The process that runs one pipeline for the service.

    python -m streamsift.service.pipeline_process --dir <data_dir>/pipelines/<id> [--driver-inserts]

It reads the pipeline document (JSON, secrets in clear) from its stdin, so that no secret is
ever written to disk in clear, and runs it with `PipelineRunner` until SIGTERM (graceful:
the micro-batch in flight finishes; a second one aborts) or a failure. Checkpoints go under
`--dir` (unless the document names its own `runtime.checkpoint_dir`).

About once a second it writes `<dir>/status.json` (atomically: a temporary file, then a
rename): its state (starting, running, retrying, stopping, stopped, failed), its pid, the
run's counts (with the histograms and per-class counts `/metrics` shows), the lag per
partition, the last micro-batch's time and duration, the retry under way (reason, attempt,
next try) and the error (one line and a hint) it failed with. The supervisor reads it, also
after a server restart, when this process is no longer its child.

Transient faults are retried here, in the same process, from the checkpoint
(engine/retrying.py); only when the Spark JVM itself is gone does the worker exit with
EXIT_RESTART for the service to start a new one. A stop that outlasts `runtime.stop_timeout`
(plus a grace for Spark's own shutdown) ends the process anyway. Exit codes: 0 after a stop,
1 after a failure, EXIT_RESTART when a new process must take over.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import logging
import os
import sys
import threading
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NoReturn

STATUS_FILE = "status.json"
STATUS_EVERY_S = 1.0
EXIT_FAILED = 1
EXIT_RESTART = 75  # EX_TEMPFAIL: the service starts the pipeline in a new process
ABORTED_EXIT_CODE = 130
STOP_GRACE_S = 15.0  # beyond runtime.stop_timeout: Spark's own shutdown after the query

log = logging.getLogger("streamsift.worker")
# The run's part of the status before the run exists
NO_RUN: dict[str, Any] = {
    "stats": {},
    "lag_by_partition": {},
    "last_batch_at": None,
    "last_batch_duration_ms": None,
}


class StatusFile:
    """The worker's status, rewritten whole about once a second and at every change."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / STATUS_FILE
        self.state = "starting"
        self.runner: Any = None
        self.error: str | None = None
        self.hint: str | None = None
        self.retry: dict[str, Any] | None = None  # the retry under way (RetryAttempt)
        self.retries_total = 0  # retries of transient faults by this process
        self.secrets: list[str] = []
        self.started_at = datetime.now(timezone.utc).isoformat()
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="status-file", daemon=True)

    def start(self) -> None:
        self.write()
        self._thread.start()

    def finish(self, state: str, error: str | None = None, hint: str | None = None) -> None:
        """The last status: written after the periodic writes stop, so it stays."""
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(5)
        self.state, self.error, self.hint = state, error, hint
        self.write()

    def _loop(self) -> None:
        while not self._done.wait(STATUS_EVERY_S):
            try:
                self.write()
            except OSError as exc:  # a full disk must not end the run; say so in the log
                log.warning("cannot write %s: %s", self.path, exc)

    def write(self) -> None:
        with self._lock:
            status = self.snapshot()
            tmp = self.path.with_name(f".{self.path.name}.tmp")
            tmp.write_text(json.dumps(status, indent=1))
            os.replace(tmp, self.path)

    def snapshot(self) -> dict[str, Any]:
        runner = self.runner
        return {
            "state": self.state,
            "pid": os.getpid(),
            "started_at": self.started_at,  # counters count from here (metrics' `_created`)
            "updated_at": datetime.now(timezone.utc).isoformat(),
            **(runner.report() if runner is not None else NO_RUN),
            "error": self.masked(self.error),
            "hint": self.masked(self.hint),
            "retries_total": self.retries_total,
            "retry": None
            if self.retry is None
            else {**self.retry, "reason": self.masked(self.retry["reason"])},
        }

    def masked(self, text: str | None) -> str | None:
        if text is None:
            return None
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text


def run(
    directory: Path,
    document: dict[str, Any],
    driver_inserts: bool,
    max_attempts: int | None = None,
) -> int:
    """Run the pipeline until stopped, retrying transient faults; the process's exit code.
    `max_attempts`: the server's retry limit, for a pipeline that sets none."""
    from streamsift.config import ConfigError, parse_pipeline
    from streamsift.config.secrets import secret_values
    from streamsift.engine.registry_fields import parse_resolved
    from streamsift.engine.retrying import ProcessLost, RetryAttempt, run_with_retries
    from streamsift.engine.runner import PipelineRunner
    from streamsift.engine.signals import AbortRequested, StopFlag, install_stop_handlers
    from streamsift.errors import StreamsiftError

    status = StatusFile(directory)
    status.start()
    try:
        pipeline = parse_pipeline(document)  # its settings; registry fields come with each try
    except ConfigError as exc:
        status.finish("failed", str(exc), "edit the pipeline's document")
        return EXIT_FAILED
    status.secrets = secret_values(pipeline)
    flag = StopFlag()

    def make_runner() -> PipelineRunner:
        # registry fields fetched with the real secrets (a registry that does not answer is
        # retried like any transient fault)
        resolved = parse_resolved(document) if pipeline.fields_pending else pipeline
        status.runner = PipelineRunner(
            resolved,
            base_dir=directory,
            on_progress=lambda _stats: _running(status),
            stop=flag,
            driver_inserts=driver_inserts,
        )
        return status.runner

    def on_retry(attempt: RetryAttempt | None) -> None:
        if attempt is None:  # the retried run committed a micro-batch
            status.retry = None
            if status.state == "retrying":
                status.state = "running"
        else:
            status.retry = attempt.as_dict()
            status.retries_total += 1
            if status.state != "stopping":
                status.state = "retrying"
            log.warning("pipeline retrying (attempt %d): %s", attempt.attempt, attempt.reason)
        status.write()

    def stop() -> None:
        status.state = "stopping"
        flag.set()
        _end_after(pipeline.runtime.stop_timeout.total_seconds() + STOP_GRACE_S, status)

    install_stop_handlers(stop)
    try:
        result = run_with_retries(make_runner, pipeline.runtime.retry, flag, on_retry, max_attempts)
    except AbortRequested:
        status.finish("stopped", None, "aborted: the micro-batch in flight was not committed")
        _exit_now(ABORTED_EXIT_CODE)
    except ProcessLost as exc:
        log.error("the pipeline's Spark process is gone: %s", status.masked(exc.message))
        status.finish("retrying", exc.message, "a new process takes over from the checkpoint")
        return EXIT_RESTART
    except StreamsiftError as exc:
        log.error("pipeline failed: %s", status.masked(exc.message))
        status.finish("failed", exc.message, exc.hint)
        return EXIT_FAILED
    except Exception as exc:  # anything else still ends the worker with a readable status
        log.exception("pipeline failed unexpectedly")
        # the first line that says something: Spark's exceptions start with a blank one
        text = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
        status.finish("failed", f"{type(exc).__name__}: {text}"[:500], None)
        return EXIT_FAILED
    if result.note:
        log.info("%s", result.note)
    status.retry = None
    status.finish("stopped", None, result.note)
    return 0


def _end_after(seconds: float, status: StatusFile) -> None:
    """A stop must end: if the process is still here after `seconds`, it says so and exits
    (the micro-batch in flight is not committed; the next run redoes it)."""

    def end() -> None:
        note = (
            f"stopped by ending its process: the stop took longer than {seconds:.0f}s "
            "(runtime.stop_timeout plus Spark's shutdown); the micro-batch in flight is redone "
            "on resume"
        )
        log.warning("%s", note)
        status.finish("stopped", None, note)
        _exit_now(0)

    timer = threading.Timer(seconds, end)
    timer.daemon = True
    timer.start()


def _exit_now(code: int) -> NoReturn:
    """Leave without waiting for Spark's threads (as the CLI does after an abort)."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def _running(status: StatusFile) -> None:
    if status.state == "starting" or (status.state == "retrying" and status.retry is None):
        status.state = "running"


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
