"""The process that runs one pipeline for the service.

    python -m streamsift.service.pipeline_process --dir <data_dir>/pipelines/<id> [--driver-inserts]

It reads the pipeline document (JSON, secrets in clear) from its stdin, so that no secret is
ever written to disk in clear, and runs it with `PipelineRunner` until SIGTERM (graceful:
the micro-batch in flight finishes; a second one aborts) or a failure. Checkpoints go under
`--dir` (unless the document names its own `runtime.checkpoint_dir`).

About once a second it writes `<dir>/status.json` (atomically: a temporary file, then a
rename): its state (starting, running, stopping, stopped, failed), its pid, the run's
counts (with the histograms and per-class counts `/metrics` shows), the lag per partition,
the last micro-batch's time and duration, and the error (one line and a hint) it failed
with. The supervisor reads it, also after a server restart, when this process is no longer
its child. Exit code 0 after a graceful stop, 1 after a failure.
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
from typing import Any

STATUS_FILE = "status.json"
STATUS_EVERY_S = 1.0
EXIT_FAILED = 1
ABORTED_EXIT_CODE = 130

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
        }

    def masked(self, text: str | None) -> str | None:
        if text is None:
            return None
        for secret in self.secrets:
            text = text.replace(secret, "***")
        return text


def run(directory: Path, document: dict[str, Any], driver_inserts: bool) -> int:
    """Run the pipeline until stopped; the exit code for the process."""
    from streamsift.config import ConfigError
    from streamsift.config.secrets import secret_values
    from streamsift.engine.registry_fields import parse_resolved
    from streamsift.engine.runner import PipelineRunner
    from streamsift.engine.signals import AbortRequested, install_stop_handlers
    from streamsift.errors import StreamsiftError

    status = StatusFile(directory)
    status.start()
    try:
        pipeline = parse_resolved(document)  # registry fields fetched with the real secrets
    except ConfigError as exc:
        status.finish("failed", str(exc), "edit the pipeline's document")
        return EXIT_FAILED
    status.secrets = secret_values(pipeline)
    status.runner = runner = PipelineRunner(
        pipeline,
        base_dir=directory,
        on_progress=lambda _stats: _running(status),
        driver_inserts=driver_inserts,
    )

    def stop() -> None:
        status.state = "stopping"
        runner.stop()

    install_stop_handlers(stop)
    try:
        result = runner.run(until_caught_up=False)
    except AbortRequested:
        status.finish("stopped", None, "aborted: the micro-batch in flight was not committed")
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(ABORTED_EXIT_CODE)  # skip waiting for Spark's threads, like the CLI
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
    status.finish("stopped", None, result.note)
    return 0


def _running(status: StatusFile) -> None:
    if status.state == "starting":
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
    args = parser.parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(levelname)s %(message)s"
    )
    args.dir.mkdir(parents=True, exist_ok=True)
    document = json.loads(sys.stdin.read())
    with contextlib.suppress(OSError):
        sys.stdin.close()
    return run(args.dir.resolve(), document, args.driver_inserts)


if __name__ == "__main__":
    sys.exit(main())
