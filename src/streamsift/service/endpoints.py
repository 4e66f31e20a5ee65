"""One ClickHouse HTTP endpoint per embedded ClickHouse directory, for the service.

chdb allows one process per data directory, yet the service must query an embedded
ClickHouse (dead letters, row counts) while pipelines write into it, and several pipelines
may share one directory. So the service runs the chdb-backed endpoint
(embedded/clickhouse_server.py) for each directory, started on demand, and hands the
pipelines that write there the endpoint's host and port instead of the path
(`served_document`).

An endpoint runs in a session of its own and is recorded in `<data_dir>/endpoints/`, so that
after a server restart the next server finds it (pipelines still running write into it) and
uses it rather than starting a second owner of the directory.
"""

from __future__ import annotations

import contextlib
import copy
import hashlib
import json
import logging
import os
import signal
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from streamsift.embedded.clickhouse_server import spawn_server
from streamsift.spark_host.processes import command_line

HOST = "127.0.0.1"
MODULE = "streamsift.embedded.clickhouse_server"
STOP_TIMEOUT_S = 15.0

log = logging.getLogger("streamsift.service")


class EmbeddedEndpoints:
    """The endpoints this data dir's service runs, by embedded ClickHouse directory."""

    def __init__(self, data_dir: Path) -> None:
        self.records = Path(data_dir) / "endpoints"
        self.records.mkdir(parents=True, exist_ok=True)
        self._children: dict[int, subprocess.Popen[bytes]] = {}
        self._lock = threading.Lock()

    def address(self, path: Path) -> tuple[str, int]:
        """The host and port of the endpoint of `path`: the running one, or a new one.

        A running endpoint that does not answer (busy, or stopped by a debugger or SIGSTOP) is
        still the directory's one owner: its address is returned, and callers retry as with
        any ClickHouse that is slow. A second endpoint on the same directory would make two
        owners of it; a new one starts only when the recorded process is gone."""
        path = Path(path).resolve()
        with self._lock:
            record = self._read(path)
            if record and _is_endpoint(record["pid"], path):
                return HOST, int(record["port"])
            path.parent.mkdir(parents=True, exist_ok=True)
            proc, port = spawn_server(path)
            self._children[proc.pid] = proc
            self._record(path).write_text(
                json.dumps({"path": str(path), "pid": proc.pid, "port": port})
            )
            log.info("embedded ClickHouse %s served on %s:%d (pid %d)", path, HOST, port, proc.pid)
            return HOST, port

    def stop_all(self) -> None:
        """Stop every recorded endpoint (when no pipeline writes into them any more)."""
        with self._lock:
            for record_file in self.records.glob("*.json"):
                record = json.loads(record_file.read_text())
                if _is_endpoint(record["pid"], Path(record["path"])):
                    self._stop(int(record["pid"]))
                record_file.unlink(missing_ok=True)

    def _stop(self, pid: int) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
        child = self._children.pop(pid, None)
        deadline = time.monotonic() + STOP_TIMEOUT_S
        while time.monotonic() < deadline:
            if (child.poll() is not None) if child else command_line(pid) is None:
                return
            time.sleep(0.1)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        if child is not None:
            child.wait(10)

    def _record(self, path: Path) -> Path:
        return self.records / f"{hashlib.sha1(str(path).encode()).hexdigest()[:16]}.json"

    def _read(self, path: Path) -> dict[str, Any] | None:
        try:
            return json.loads(self._record(path).read_text())
        except (OSError, ValueError):
            return None


def served_document(doc: dict[str, Any], host: str, port: int) -> dict[str, Any]:
    """The document with its embedded sink (`sink.clickhouse.path`) replaced by the
    endpoint's host and port; the rest of the connection (database, user) is kept."""
    served = copy.deepcopy(doc)
    conn = served["sink"]["clickhouse"]
    conn.pop("path", None)
    conn.update({"host": host, "port": port, "secure": False})
    return served


def _is_endpoint(pid: int, path: Path) -> bool:
    args = command_line(int(pid))
    return args is not None and MODULE in args and str(path) in args
