"""The service's pipeline runs: starting, watching, stopping, terminating, adopting.

A pipeline runs either as a query in the data dir's pipeline host (service/pipeline_host.py,
reached through service/host_link.py; the default) or in a worker process of its own
(service/pipeline_process.py, `runtime.isolation: process`). Both live in sessions of their
own, so that a server killed with kill -9 leaves them running; terminating a worker kills its
whole tree (the Spark JVM, PySpark's daemons) at once, terminating a hosted run ends its
query at once. A thread polls the runs about twice
a second: their `status.json` (whose last version holds the run's exit code; the only way
to learn how a run that a previous server started ended: it is not our child) and whether
the process they run in is alive. What it sees goes to two callbacks: every
change of a worker's reported state (running, retrying, ...) and its end; the pipelines' states
themselves are the service's business.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from streamsift.config.models import Pipeline
from streamsift.service.errors import HostUnavailable
from streamsift.service.host_link import HostLink
from streamsift.service.pipeline_run import EXIT_RESTART, STATUS_FILE, read_status, write_status
from streamsift.spark_host.processes import command_line, kill_pid_tree, kill_tree

WORKER_MODULE = "streamsift.service.pipeline_process"
LOG_FILE = "worker.log"
POLL_S = 0.5
# how often a live host hears from its server (a host nobody talks to, with no pipeline, ends)
HEARTBEAT_S = 10.0
# How an adopted worker ended, told by its last status (a child tells by its exit code).
_EXIT_OF_FINAL_STATE = {"stopped": 0, "failed": 1}
ENDED_WITHOUT_STATUS = -9

log = logging.getLogger("streamsift.service")


@dataclass
class Worker:
    """A pipeline's run: a worker process, our child (`proc`) or one adopted from a previous
    server, or a run in the pipeline host (`host`, whose pid is `pid` once it started)."""

    pipeline_id: str
    directory: Path
    pid: int
    proc: subprocess.Popen[bytes] | None = None
    host: HostLink | None = None
    starting: bool = False  # a hosted run being handed to the host
    reported_state: str | None = None  # the state last passed to `on_state`
    reported_attempt: int | None = None  # and the retry attempt it reported with it
    _status_seen: tuple[tuple[int, int, int], dict[str, Any] | None] | None = None

    def latest_status(self) -> dict[str, Any] | None:
        """Its status.json, read again only when the file was replaced (each write is a new
        file: an idle run's status, polled twice a second, changes every few seconds)."""
        try:
            stat = (self.directory / STATUS_FILE).stat()
        except OSError:
            return None
        mark = (stat.st_ino, stat.st_mtime_ns, stat.st_size)
        if self._status_seen is None or self._status_seen[0] != mark:
            self._status_seen = (mark, read_status(self.directory))
        return self._status_seen[1]

    def exit_code(self, status: dict[str, Any] | None = None) -> int | None:
        """None while it runs; then its exit code (for an adopted one, from its status).
        `status`: its status.json, when the caller has just read it."""
        if self.host is not None:
            return self._hosted_exit_code(self.host, status)
        if self.proc is not None:
            return self.proc.poll()
        if is_worker(self.pid, self.directory):
            return None
        status = (status if status is not None else read_status(self.directory)) or {}
        if status.get("exit_code") is not None:
            return int(status["exit_code"])
        return _EXIT_OF_FINAL_STATE.get(status.get("state"), ENDED_WITHOUT_STATUS)

    def _hosted_exit_code(self, host: HostLink, status: dict[str, Any] | None) -> int | None:
        if self.starting:
            return None
        status = (status if status is not None else read_status(self.directory)) or {}
        if status.get("exit_code") is not None:
            return int(status["exit_code"])
        return None if host.alive(self.pid) else ENDED_WITHOUT_STATUS


def is_worker(pid: int, directory: Path) -> bool:
    """Is `pid` alive and our worker for `directory` (not a reused pid)?"""
    args = command_line(pid)
    return args is not None and WORKER_MODULE in args and str(directory) in args


def find_worker(directory: Path) -> int | None:
    """The pid of a live worker for `directory`, found among all processes, if any."""
    for entry in Path("/proc").glob("[0-9]*"):
        if is_worker(int(entry.name), directory):
            return int(entry.name)
    return None


class Supervisor:
    """Starts and watches the workers of one data dir.

    `on_state(id, state, status)`: a worker reports a new state (`running`, `retrying`, ...)
    or a new retry attempt. `on_exit(id, code, status)`: a worker ended by itself or after
    `stop` (not after `terminate`, whose caller knows).
    """

    def __init__(
        self,
        data_dir: Path,
        on_state: Callable[[str, str, dict[str, Any]], None],
        on_exit: Callable[[str, int, dict[str, Any]], None],
    ) -> None:
        self.pipelines_dir = Path(data_dir).resolve() / "pipelines"
        self.host = HostLink(data_dir)
        self._on_state = on_state
        self._on_exit = on_exit
        self._workers: dict[str, Worker] = {}
        self._lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._watch, name="supervisor", daemon=True)

    def directory(self, pipeline_id: str) -> Path:
        return self.pipelines_dir / pipeline_id

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Stop watching; the workers keep running (a next server adopts them), and so does
        the pipeline host while it runs pipelines (an idle one is shut down)."""
        self._done.set()
        if self._thread.is_alive():
            self._thread.join(10)
        if not self.host.running():  # (also a host still starting)
            self.host.shutdown()

    # ------------------------------------------------------------------ workers

    def launch(
        self,
        pipeline_id: str,
        document: dict[str, Any],
        driver_inserts: bool,
        retry_attempts: int | None = None,
        hosted: Pipeline | None = None,
        host_memory: str | None = None,
    ) -> int | None:
        """Start the pipeline's run, handing it `document` (secrets in clear, in memory
        only): in the pipeline host when `hosted` (the document's model) is given, else in a
        worker process of its own. Returns the pid it runs in (None while a hosted run is
        still being handed to the host). `retry_attempts`: the server's retry limit."""
        directory = self.directory(pipeline_id)
        directory.mkdir(parents=True, exist_ok=True)
        (directory / STATUS_FILE).unlink(missing_ok=True)  # the last run's says nothing now
        if hosted is not None:
            return self._launch_hosted(
                pipeline_id, document, driver_inserts, retry_attempts, hosted, host_memory
            )
        command = [sys.executable, "-m", WORKER_MODULE, "--dir", str(directory)]
        if driver_inserts:
            command.append("--driver-inserts")
        if retry_attempts is not None:
            command += ["--retry-attempts", str(retry_attempts)]
        with (directory / LOG_FILE).open("ab") as log_file:
            proc = subprocess.Popen(
                command,
                stdin=subprocess.PIPE,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        assert proc.stdin is not None
        # a worker that dies at once (its log says why) is reported by the watch as it ends
        with contextlib.suppress(BrokenPipeError), proc.stdin:
            proc.stdin.write(json.dumps(document).encode())
        with self._lock:
            self._workers[pipeline_id] = Worker(pipeline_id, directory, proc.pid, proc)
        log.info("pipeline %s: worker started (pid %d)", pipeline_id, proc.pid)
        return proc.pid

    def _launch_hosted(
        self,
        pipeline_id: str,
        document: dict[str, Any],
        driver_inserts: bool,
        retry_attempts: int | None,
        pipeline: Pipeline,
        host_memory: str | None,
    ) -> int | None:
        """Hand the run to the host on a thread of its own (a host that must start first
        takes seconds); a host that fails to take it ends the run as one to start again."""
        directory = self.directory(pipeline_id)
        worker = Worker(pipeline_id, directory, self.host.pid or 0, host=self.host, starting=True)
        with self._lock:
            self._workers[pipeline_id] = worker

        def hand_over() -> None:
            try:
                worker.pid = self.host.start_pipeline(
                    pipeline_id,
                    directory,
                    document,
                    pipeline,
                    driver_inserts,
                    retry_attempts,
                    host_memory,
                )
                log.info(
                    "pipeline %s: running in the pipeline host (pid %d)", pipeline_id, worker.pid
                )
            except HostUnavailable as exc:
                log.warning("pipeline %s: %s", pipeline_id, exc.message)
                write_status(
                    directory,
                    {
                        "state": "retrying",
                        "error": exc.message,
                        "hint": exc.hint,
                        "exit_code": EXIT_RESTART,
                    },
                )
            finally:
                worker.starting = False

        threading.Thread(target=hand_over, name=f"host-start-{pipeline_id}", daemon=True).start()
        return worker.pid or None

    def warm_host(self, memory: str | None = None) -> None:
        """Start the pipeline host now, in the background, so the first create finds it warm."""

        def warm() -> None:
            try:
                self.host.ensure(memory)
            except HostUnavailable as exc:
                if not self.host.closed:
                    log.warning("%s (%s)", exc.message, exc.hint)

        threading.Thread(target=warm, name="host-warm", daemon=True).start()

    def adopt(self, pipeline_id: str, pid: int | None) -> bool:
        """Watch a worker a previous server started, if it still runs; False if it does not.

        The recorded pid first; else any live worker for the pipeline's directory (one whose
        pid the previous server had no time to record): never two workers on one checkpoint.
        """
        directory = self.directory(pipeline_id)
        status = read_status(directory) or {}
        if status.get("isolation") == "host":
            return self._adopt_hosted(pipeline_id, directory, status)
        if pid is None or not is_worker(pid, directory):
            pid = find_worker(directory)
        if pid is None:
            return False
        with self._lock:  # (its state is reported at the next poll, in case the previous
            # server died before it could record it)
            self._workers[pipeline_id] = Worker(pipeline_id, directory, pid, None)
        log.info("pipeline %s: adopted its running worker (pid %d)", pipeline_id, pid)
        return True

    def _adopt_hosted(self, pipeline_id: str, directory: Path, status: dict[str, Any]) -> bool:
        """A run in the host a previous server started, if it is still alive there."""
        if status.get("exit_code") is not None or pipeline_id not in self.host.running():
            return False
        with self._lock:
            self._workers[pipeline_id] = Worker(
                pipeline_id, directory, int(status["pid"]), host=self.host
            )
        log.info("pipeline %s: adopted its run in the pipeline host", pipeline_id)
        return True

    def is_running(self, pipeline_id: str) -> bool:
        with self._lock:
            return pipeline_id in self._workers

    def running(self) -> list[str]:
        with self._lock:
            return list(self._workers)

    def stop(self, pipeline_id: str) -> None:
        """Ask the worker to stop after its micro-batch in flight (SIGTERM)."""
        with self._lock:
            worker = self._workers.get(pipeline_id)
        if worker is not None and worker.host is not None:
            worker.host.stop(pipeline_id)
        elif worker is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(worker.pid, signal.SIGTERM)

    def terminate(self, pipeline_id: str) -> None:
        """Kill the worker's whole session at once (SIGKILL), or end a hosted run's query at
        once; returns when it is gone."""
        with self._lock:
            worker = self._workers.pop(pipeline_id, None)
        if worker is None:
            return
        if worker.host is not None:
            while worker.starting:
                time.sleep(0.1)
            if not worker.host.abort(pipeline_id):
                log.warning("pipeline %s: its query had not ended 30s after terminate", pipeline_id)
            log.info("pipeline %s: its run in the pipeline host was terminated", pipeline_id)
            return
        if worker.proc is not None:
            kill_tree(worker.proc)
        else:
            kill_pid_tree(worker.pid, alive=is_worker(worker.pid, worker.directory))
        log.info("pipeline %s: worker terminated (pid %d)", pipeline_id, worker.pid)

    def status(self, pipeline_id: str) -> dict[str, Any] | None:
        return read_status(self.directory(pipeline_id))

    # ------------------------------------------------------------------ watching

    def _watch(self) -> None:
        last_heartbeat = 0.0
        while not self._done.wait(POLL_S):
            self.poll()
            if time.monotonic() - last_heartbeat >= HEARTBEAT_S:
                last_heartbeat = time.monotonic()
                self.host.heartbeat()

    def poll(self) -> None:
        """One look at every worker: report the ones now running and the ones that ended."""
        with self._lock:
            workers = list(self._workers.values())
        for worker in workers:
            status = worker.latest_status()
            code = worker.exit_code(status)
            if code is None:
                self._report_state(worker, status or {})
                continue
            with self._lock:
                if self._workers.get(worker.pipeline_id) is not worker:
                    continue  # terminated meanwhile: its caller knows
                del self._workers[worker.pipeline_id]
            status = read_status(worker.directory) or {}
            self._report(self._on_exit, worker.pipeline_id, code, status)

    def _report_state(self, worker: Worker, status: dict[str, Any]) -> None:
        """Pass on a running worker's new state, or its new retry attempt."""
        state = status.get("state")
        attempt = (status.get("retry") or {}).get("attempt")
        if state is None or (state, attempt) == (worker.reported_state, worker.reported_attempt):
            return
        worker.reported_state, worker.reported_attempt = state, attempt
        self._report(self._on_state, worker.pipeline_id, state, status)

    @staticmethod
    def _report(callback: Callable[..., None], *args: Any) -> None:
        try:
            callback(*args)
        except Exception:  # one pipeline's bookkeeping must not stop the watch of the others
            log.exception("pipeline %s: handling its worker's report failed", args[0])
