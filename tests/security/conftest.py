"""A real `streamsift serve` on a loopback port for the security tests: a subprocess with
its own data dir, no OTLP receiver, the flags a test asks for, and its stderr kept."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

TOKEN = "security-test-token"


class Serve:
    """`streamsift serve --port 0` with `args`; `url` once it listens, `log` its stderr."""

    def __init__(self, data_dir: Path, args: list[str], env: dict[str, str]) -> None:
        self.data_dir = data_dir
        self.log = data_dir.parent / f"{data_dir.name}-serve.log"
        self.args, self.env = args, env
        self.proc: subprocess.Popen[bytes] | None = None
        self.url = ""

    def start(self, wait_ready: bool = True) -> Serve:
        with self.log.open("ab") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "streamsift.cli.main", "serve", "--port", "0"]
                + ["--data-dir", str(self.data_dir), "--no-otlp", *self.args],
                stderr=err,
                env={**os.environ, "PYTHONUNBUFFERED": "1", **self.env},
            )
        deadline = time.monotonic() + 60
        while "listening on" not in self.text():
            if self.proc.poll() is not None:
                return self  # ended (a refusal to start): the test reads `text()`
            assert time.monotonic() < deadline, f"serve did not listen:\n{self.text()}"
            time.sleep(0.1)
        line = next(x for x in self.text().splitlines() if "listening on" in x)
        self.url = line.split()[2]
        while wait_ready and not self._ready():
            assert time.monotonic() < deadline, f"serve not ready:\n{self.text()}"
            time.sleep(0.1)
        return self

    def text(self) -> str:
        return self.log.read_text() if self.log.exists() else ""

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def _ready(self) -> bool:
        try:
            return httpx.get(f"{self.url}/readyz", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False


@pytest.fixture(scope="module")
def serve_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., Serve]]:
    """Start servers with the given flags and environment; all stop with the module."""
    started: list[Serve] = []

    def start(*args: str, env: dict[str, str] | None = None, wait_ready: bool = True) -> Serve:
        data_dir = tmp_path_factory.mktemp("serve") / "data"
        server = Serve(data_dir, list(args), env or {}).start(wait_ready)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture(scope="module")
def open_server(serve_factory: Callable[..., Serve]) -> Serve:
    """A server without a token on loopback (as `serve --demo` runs)."""
    return serve_factory()


@pytest.fixture(scope="module")
def token_server(serve_factory: Callable[..., Serve]) -> Serve:
    """A server with a token."""
    return serve_factory(env={"STREAMSIFT_API_TOKEN": TOKEN})


@pytest.fixture
def client(open_server: Serve) -> Iterator[httpx.Client]:
    """An HTTP client of the token-less server, sending JSON as a same-origin page would."""
    with httpx.Client(base_url=open_server.url, timeout=60) as http:
        yield http
