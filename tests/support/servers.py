"""Servers for the API tests: the API in a thread (uvicorn on a free loopback port), and
`streamsift serve` as a process of its own, as a user starts it."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import threading
from pathlib import Path
from typing import Any

import httpx
import uvicorn

from support.cli import STREAMSIFT
from support.waiting import wait_for


class ServerThread:
    """uvicorn serving `app` in a thread; `url` is where it answers once entered. `port`: a
    given loopback port (a server that comes back where it was), else a free one.
    `graceful_s`: how long its shutdown waits for requests still being answered before it
    cancels them (None: until they end)."""

    def __init__(self, app: Any, port: int = 0, graceful_s: float | None = None) -> None:
        self.sock = socket.create_server(("127.0.0.1", port))
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        config = uvicorn.Config(
            app, log_level="warning", lifespan="on", timeout_graceful_shutdown=graceful_s
        )
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, kwargs={"sockets": [self.sock]})

    def __enter__(self) -> ServerThread:
        self.thread.start()

        def started() -> bool:
            assert self.thread.is_alive(), "the server's thread ended"
            return self.server.started

        wait_for(started, 30, what="the server to start", interval=0.05)
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(30)
        self.sock.close()


class Serve:
    """`streamsift serve --port 0 --data-dir DATA_DIR ARGS` in a process of its own, with
    `env` added to this environment; its stderr appended to `log` (a server started again on
    the same log reads its own part), `url` once it listens."""

    def __init__(
        self,
        data_dir: Path,
        log: Path,
        args: tuple[str, ...] | list[str] = (),
        env: dict[str, str] | None = None,
    ) -> None:
        self.data_dir, self.log = data_dir, log
        self.args, self.env = list(args), dict(env or {})
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""
        self._offset = 0

    def start(
        self,
        wait_ready: bool = True,
        may_refuse: bool = False,
        listen_timeout: float = 60,
        ready_timeout: float = 120,
    ) -> Serve:
        """Start it and wait until it listens, then (`wait_ready`) until /readyz says ready.
        A server that ends before it listens fails the test, unless it `may_refuse` to
        start: then `url` stays empty and the test reads `text()`."""
        self._offset = self.log.stat().st_size if self.log.exists() else 0
        command = [*STREAMSIFT, "serve", "--port", "0", "--data-dir", str(self.data_dir)]
        with self.log.open("ab") as err:
            self.proc = subprocess.Popen(
                command + self.args,
                stderr=err,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
            )
        proc = self.proc

        def listening() -> bool:
            return self._listening_line() is not None or (may_refuse and proc.poll() is not None)

        # both checks are cheap (a log read, a GET): polled often, a start is seen at once
        wait_for(
            listening, listen_timeout, what="serve to listen", proc=proc, log=self.log, interval=0.1
        )
        line = self._listening_line()
        if line is None:
            return self  # it refused to start
        self.url = line.split()[2]
        if wait_ready:
            wait_for(
                self._ready, ready_timeout, what="/readyz", proc=proc, log=self.log, interval=0.1
            )
        return self

    def text(self) -> str:
        """What this start of the server wrote to its stderr so far."""
        if not self.log.exists():
            return ""
        return self.log.read_bytes()[self._offset :].decode("utf-8", "replace")

    def client(self, timeout: float = 120) -> Any:
        """The SDK's client of this server, with the token its environment gave it."""
        from streamsift.sdk import Client

        return Client(self.url, token=self.env.get("STREAMSIFT_API_TOKEN"), timeout=timeout)

    def kill(self) -> None:
        """kill -9 of the server alone: its pipelines' workers live on."""
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self, timeout: float = 60) -> None:
        """SIGTERM, then SIGKILL after `timeout` seconds."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def _listening_line(self) -> str | None:
        """The API's "listening on URL ..." line, once written."""
        return next((x for x in self.text().splitlines() if x.startswith("listening on")), None)

    def _ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/readyz", timeout=5).status_code == 200
        except httpx.HTTPError:
            return False
