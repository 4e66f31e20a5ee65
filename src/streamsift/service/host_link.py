"""The service's end of the pipeline host (service/pipeline_host.py): where a pipeline runs,
starting the host (or finding the one a previous server left running), and its requests.

A pipeline runs in the host unless it asks for a process of its own
(`runtime.isolation: process`), runs on a cluster master (its own Spark application there),
or sets Spark settings a session cannot take (anything outside `spark.sql.*`: only a new
application reads them). `placement` says which, and why.

The host's heap is sized from the pipelines the data dir holds when it starts
(`host_memory`): 2 GB, plus 256 MB per pipeline beyond four (docs/operations.md).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from streamsift.config.models import Isolation, Pipeline
from streamsift.service.errors import HostUnavailable
from streamsift.service.pipeline_host import HOST_DIR, LOG_FILE, RECORD_FILE
from streamsift.spark_host.processes import command_line, kill_pid_tree, kill_tree
from streamsift.spark_host.session import is_local_master, resolve_master

HOST_MODULE = "streamsift.service.pipeline_host"
START_TIMEOUT_S = 240.0
REQUEST_TIMEOUT_S = 30.0
ALIVE_FOR_S = 0.25
log = logging.getLogger("streamsift.service")


def placement(pipeline: Pipeline) -> tuple[Isolation, str]:
    """Where the service runs `pipeline`, and why (for its log)."""
    runtime = pipeline.runtime
    if runtime.isolation is Isolation.PROCESS:
        return Isolation.PROCESS, "runtime.isolation: process"
    master = resolve_master(runtime.master)
    if not is_local_master(master):
        return Isolation.PROCESS, f"it runs on {master}, as a Spark application of its own"
    static = sorted(key for key in runtime.spark_conf if not key.startswith("spark.sql."))
    if static:
        return Isolation.PROCESS, (
            f"runtime.spark_conf sets {', '.join(static)}, which only a Spark application of "
            "its own can take"
        )
    return Isolation.HOST, "the pipeline host"


def host_memory(pipelines: int) -> str:
    """The host's driver heap for a data dir of `pipelines` pipelines."""
    return f"{2048 + 256 * max(0, pipelines - 4)}m"


def is_host(pid: int, data_dir: Path) -> bool:
    """Is `pid` alive and the pipeline host of `data_dir` (not a reused pid)?"""
    args = command_line(pid)
    return args is not None and HOST_MODULE in args and str(data_dir) in args


class HostLink:
    """The pipeline host of one data dir, as the service sees it."""

    def __init__(self, data_dir: Path) -> None:
        self.data_dir = Path(data_dir).resolve()
        self.directory = self.data_dir / HOST_DIR
        self._record: dict[str, Any] | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()
        self._alive_seen: tuple[int, float, bool] | None = None  # (pid, when, alive)
        self.closed = False  # shut down by its service: nothing more starts

    @property
    def pid(self) -> int | None:
        """The live host's pid, if one runs (ours or a previous server's)."""
        record = self._record or self._read_record()
        if record is not None and is_host(int(record["pid"]), self.data_dir):
            return int(record["pid"])
        return None

    def alive(self, pid: int) -> bool:
        """Is `pid` this data dir's host? (Answered from a look at most ALIVE_FOR_S old: the
        supervisor asks for each of its pipelines in turn.)"""
        now = time.monotonic()
        seen = self._alive_seen
        if seen is None or seen[0] != pid or now - seen[1] > ALIVE_FOR_S:
            seen = self._alive_seen = (pid, now, is_host(pid, self.data_dir))
        return seen[2]

    def ensure(self, memory: str | None = None) -> int:
        """The host's pid: the running one's, or a new one's once it is warm (seconds)."""
        with self._lock:
            record = self._read_record()
            if record is not None and is_host(int(record["pid"]), self.data_dir):
                self._record = record
                return int(record["pid"])
            return self._start(memory)

    def _start(self, memory: str | None) -> int:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / RECORD_FILE).unlink(missing_ok=True)
        command = [sys.executable, "-m", HOST_MODULE, "--data-dir", str(self.data_dir)]
        if memory:
            command += ["--driver-memory", memory]
        with (self.directory / LOG_FILE).open("ab") as log_file:
            proc = subprocess.Popen(
                command,
                stdin=subprocess.DEVNULL,
                stdout=log_file,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a server killed with kill -9 leaves it running
            )
        self._proc = proc
        log.info("pipeline host starting (pid %d)", proc.pid)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.closed:  # the server is going away: a host still starting goes too
                kill_tree(proc)
                raise HostUnavailable("the service closed while its pipeline host started")
            record = self._read_record()
            if record is not None and int(record["pid"]) == proc.pid:
                self._record = record
                log.info("pipeline host ready (pid %d)", proc.pid)
                return proc.pid
            if proc.poll() is not None:
                raise HostUnavailable(
                    f"the pipeline host exited with code {proc.returncode} while starting",
                    f"see {self.directory / LOG_FILE}",
                )
            time.sleep(0.2)
        kill_pid_tree(proc.pid, alive=True)
        raise HostUnavailable(
            f"the pipeline host was not ready within {START_TIMEOUT_S:.0f}s",
            f"see {self.directory / LOG_FILE}",
        )

    def _read_record(self) -> dict[str, Any] | None:
        try:
            return json.loads((self.directory / RECORD_FILE).read_text())
        except (OSError, ValueError):
            return None

    # ------------------------------------------------------------------ requests

    def request(
        self, op: str, timeout_s: float = REQUEST_TIMEOUT_S, **fields: Any
    ) -> dict[str, Any]:
        """Send one request to the running host; its answer. HostUnavailable when no host
        answers, or it refuses."""
        record = self._record or self._read_record()
        if record is None or not is_host(int(record["pid"]), self.data_dir):
            raise HostUnavailable("no pipeline host runs for this data dir")
        body = json.dumps({"token": record["token"], "op": op, **fields}).encode() + b"\n"
        try:
            with socket.create_connection(("127.0.0.1", int(record["port"])), timeout_s) as conn:
                conn.sendall(body)
                with conn.makefile("rb") as answers:
                    line = answers.readline()
        except OSError as exc:
            raise HostUnavailable(f"the pipeline host did not answer: {exc}") from exc
        try:
            answer = json.loads(line)
        except ValueError as exc:
            raise HostUnavailable("the pipeline host's answer was cut short") from exc
        if not answer.get("ok"):
            raise HostUnavailable(f"the pipeline host refused: {answer.get('error')}")
        return answer

    def start_pipeline(
        self,
        pipeline_id: str,
        directory: Path,
        document: dict[str, Any],
        pipeline: Pipeline,
        driver_inserts: bool,
        retry_attempts: int | None,
        memory: str | None = None,
    ) -> int:
        """Start the pipeline's run in the host (started first if need be); the host's pid."""
        self.ensure(memory)
        answer = self.request(
            "start",
            id=pipeline_id,
            dir=str(directory),
            document=document,
            driver_inserts=driver_inserts,
            retry_attempts=retry_attempts,
            weight=pipeline.runtime.weight,
            spark_conf=dict(pipeline.runtime.spark_conf),
        )
        return int(answer["pid"])

    def running(self) -> dict[str, str]:
        """The pipelines whose runs are alive in the host, with their states ({} without a
        host)."""
        try:
            return dict(self.request("ping")["pipelines"])
        except HostUnavailable:
            return {}

    def heartbeat(self) -> None:
        """Tell a running host that its server is there (quietly: none may run)."""
        if self.pid is not None:
            with contextlib.suppress(HostUnavailable):
                self.request("ping", timeout_s=5)

    def stop(self, pipeline_id: str) -> None:
        with contextlib.suppress(HostUnavailable):
            self.request("stop", id=pipeline_id)

    def abort(self, pipeline_id: str, wait_s: float = 30.0) -> bool:
        """End the pipeline's query at once; whether its run ended within `wait_s`."""
        try:
            return bool(self.request("abort", wait_s + 5, id=pipeline_id, wait_s=wait_s)["ended"])
        except HostUnavailable:
            return True

    def shutdown(self, wait_s: float = 30.0) -> None:
        """Ask the host to stop its pipelines and exit; killed if it is still there after
        `wait_s` (its pipelines resume from their checkpoints). A host still starting is
        ended at once."""
        self.closed = True
        pid = self.pid
        if pid is None:
            if self._proc is not None and self._proc.poll() is None:  # still starting
                kill_tree(self._proc)
            return
        with contextlib.suppress(HostUnavailable):
            self.request("shutdown")
        deadline = time.monotonic() + wait_s
        while self.alive(pid) and time.monotonic() < deadline:
            time.sleep(0.2)
        if self.alive(pid):
            kill_pid_tree(pid, alive=True)
        if self._proc is not None:
            with contextlib.suppress(OSError):
                self._proc.wait(5)
        self._record = None
        with contextlib.suppress(OSError):
            os.unlink(self.directory / RECORD_FILE)
