"""One run of one pipeline for the service, wherever it runs: in a worker process of its own
(service/pipeline_process.py) or as a query in the service's pipeline host
(service/pipeline_host.py).

The run reads its document (secrets in clear, handed over in memory: never written to disk
in clear), runs it with `PipelineRunner` until stopped or failed, and retries transient
faults from the checkpoint (engine/retrying.py). About once a second it writes
`<dir>/status.json` (atomically: a temporary file, then a rename): its state (starting,
running, retrying, stopping, stopped, failed), the pid of the process it runs in, the run's
counts, the lag per partition, the last micro-batch, the retry under way and the error (one
line and a hint) it failed with; its last status also holds the run's `exit_code`. The
supervisor reads it, also after a server restart.

Exit codes: 0 after a stop, 1 after a failure, EXIT_RESTART when the Spark JVM is gone and a
new process must take over.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NoReturn

STATUS_FILE = "status.json"
STATUS_EVERY_S = 1.0
UNCHANGED_EVERY_S = 5.0
EXIT_STOPPED = 0
EXIT_FAILED = 1
EXIT_RESTART = 75  # EX_TEMPFAIL: the service starts the pipeline in a new process
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
    """The run's status, rewritten whole about once a second and at every change."""

    def __init__(self, directory: Path, isolation: str) -> None:
        self.path = directory / STATUS_FILE
        self.isolation = isolation  # "process" or "host"
        self.state = "starting"
        self.runner: Any = None
        self.error: str | None = None
        self.hint: str | None = None
        self.exit_code: int | None = None  # set by the last status only
        self.retry: dict[str, Any] | None = None  # the retry under way (RetryAttempt)
        self.retries_total = 0  # retries of transient faults in this run
        self.secrets: list[str] = []
        self.started_at = datetime.now(timezone.utc).isoformat()
        self._lock = threading.Lock()
        self._written: dict[str, Any] | None = None  # the last status written, but its time
        self._written_at = 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="status-file", daemon=True)

    def start(self) -> None:
        self.write()
        self._thread.start()

    def finish(self, state: str, error: str | None, hint: str | None, exit_code: int) -> None:
        """The last status: written after the periodic writes stop, so it stays."""
        self._done.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(5)
        self.state, self.error, self.hint, self.exit_code = state, error, hint, exit_code
        self.write()

    @property
    def finished(self) -> bool:
        return self.exit_code is not None

    def _loop(self) -> None:
        while not self._done.wait(STATUS_EVERY_S):
            try:
                self.write(force=False)
            except OSError as exc:  # a full disk must not end the run; say so in the log
                log.warning("cannot write %s: %s", self.path, exc)

    def write(self, force: bool = True) -> None:
        """Write the status; unless `force`, only when it says something new, or every
        UNCHANGED_EVERY_S (an idle run's status is the same second after second)."""
        with self._lock:
            status = self.snapshot()
            news = {k: v for k, v in status.items() if k != "updated_at"}
            now = time.monotonic()
            if not force and news == self._written and now - self._written_at < UNCHANGED_EVERY_S:
                return
            self._written, self._written_at = news, now
            write_status(self.path.parent, status)

    def snapshot(self) -> dict[str, Any]:
        runner = self.runner
        return {
            "state": self.state,
            "pid": os.getpid(),
            "isolation": self.isolation,
            "started_at": self.started_at,  # counters count from here (metrics' `_created`)
            "updated_at": datetime.now(timezone.utc).isoformat(),
            **(runner.report() if runner is not None else NO_RUN),
            "error": self.masked(self.error),
            "hint": self.masked(self.hint),
            "retries_total": self.retries_total,
            "retry": None
            if self.retry is None
            else {**self.retry, "reason": self.masked(self.retry["reason"])},
            "exit_code": self.exit_code,
        }

    def masked(self, text: str | None) -> str | None:
        if text is None:
            return None
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text


def write_status(directory: Path, status: dict[str, Any]) -> None:
    """Replace `<directory>/status.json` whole (a temporary file, then a rename): a reader
    never sees half of it."""
    tmp = Path(directory) / f".{STATUS_FILE}.tmp"
    tmp.write_text(json.dumps(status, indent=1))
    os.replace(tmp, Path(directory) / STATUS_FILE)


def exit_now(code: int) -> NoReturn:
    """Leave the process without waiting for Spark's threads."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


def read_status(directory: Path) -> dict[str, Any] | None:
    """A run's last written status, if any."""
    try:
        return json.loads((Path(directory) / STATUS_FILE).read_text())
    except (OSError, ValueError):
        return None


class PipelineRun:
    """Runs one pipeline until stopped, retrying transient faults (see the module docstring).

    `max_attempts`: the server's retry limit, for a pipeline that sets none. `session` and
    `scheduler_pool`: the Spark session and FAIR pool of a run in the pipeline host (None:
    this process's own session). `stop()` and `abort()` may come from any thread.
    """

    def __init__(
        self,
        directory: Path,
        document: dict[str, Any],
        driver_inserts: bool,
        max_attempts: int | None = None,
        session: Callable[[], Any] | None = None,
        scheduler_pool: str | None = None,
    ) -> None:
        from streamsift.engine.signals import StopFlag

        self.directory = Path(directory)
        self.document = document
        self.driver_inserts = driver_inserts
        self.max_attempts = max_attempts
        self.session = session
        self.scheduler_pool = scheduler_pool
        self.status = StatusFile(self.directory, "process" if session is None else "host")
        self.flag = StopFlag()
        self.stop_timeout_s = 30.0  # the pipeline's runtime.stop_timeout, once parsed

    def run(self) -> int:
        """Run until stopped or failed; the exit code (also in the last status)."""
        from streamsift.config import ConfigError, parse_pipeline
        from streamsift.config.secrets import secret_values
        from streamsift.engine.registry_fields import parse_resolved
        from streamsift.engine.retrying import ProcessLost, run_with_retries
        from streamsift.engine.runner import PipelineRunner
        from streamsift.errors import StreamsiftError

        status = self.status
        status.start()
        try:
            pipeline = parse_pipeline(self.document)  # registry fields come with each try
        except ConfigError as exc:
            return self.end("failed", str(exc), "edit the pipeline's document", EXIT_FAILED)
        status.secrets = secret_values(pipeline)
        self.stop_timeout_s = pipeline.runtime.stop_timeout.total_seconds()

        def make_runner() -> PipelineRunner:
            # registry fields fetched with the real secrets (a registry that does not answer
            # is retried like any transient fault)
            resolved = parse_resolved(self.document) if pipeline.fields_pending else pipeline
            status.runner = PipelineRunner(
                resolved,
                base_dir=self.directory,
                on_progress=lambda _stats: self._running(),
                stop=self.flag,
                driver_inserts=self.driver_inserts,
                session=self.session,
                scheduler_pool=self.scheduler_pool,
            )
            return status.runner

        try:
            result = run_with_retries(
                make_runner, pipeline.runtime.retry, self.flag, self._on_retry, self.max_attempts
            )
        except ProcessLost as exc:
            log.error("the pipeline's Spark process is gone: %s", status.masked(exc.message))
            return self.end(
                "retrying",
                exc.message,
                "a new process takes over from the checkpoint",
                EXIT_RESTART,
            )
        except StreamsiftError as exc:
            log.error("pipeline %s failed: %s", pipeline.name, status.masked(exc.message))
            return self.end("failed", exc.message, exc.hint, EXIT_FAILED)
        except Exception as exc:  # anything else still ends the run with a readable status
            log.exception("pipeline %s failed unexpectedly", pipeline.name)
            # the first line that says something: Spark's exceptions start with a blank one
            text = next((ln.strip() for ln in str(exc).splitlines() if ln.strip()), "")
            return self.end("failed", f"{type(exc).__name__}: {text}"[:500], None, EXIT_FAILED)
        if result.note:
            log.info("pipeline %s: %s", pipeline.name, result.note)
        status.retry = None
        return self.end("stopped", None, result.note, EXIT_STOPPED)

    def end(self, state: str, error: str | None, hint: str | None, code: int) -> int:
        """Write the run's last status (once: the first end wins) and return `code`."""
        if not self.status.finished:
            self.status.finish(state, error, hint, code)
        return self.status.exit_code if self.status.exit_code is not None else code

    def stop(self) -> None:
        """Graceful: the micro-batch in flight finishes (within runtime.stop_timeout)."""
        if not self.status.finished:
            self.status.state = "stopping"
        self.flag.set()

    def abort(self) -> None:
        """At once: the micro-batch in flight is given up; the next run redoes it."""
        runner = self.status.runner
        if runner is not None:
            runner.abort()
        self.flag.set()

    def _on_retry(self, attempt: Any) -> None:
        status = self.status
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

    def _running(self) -> None:
        status = self.status
        if status.state == "starting" or (status.state == "retrying" and status.retry is None):
            status.state = "running"
