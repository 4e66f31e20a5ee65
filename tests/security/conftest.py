"""A real `streamsift serve` on a loopback port for the security tests (support.servers.Serve):
a subprocess with its own data dir, no OTLP receiver, the flags a test asks for, and its
stderr kept.

These tests judge requests, not runs: the servers start no pipeline host (`--isolation
process`; the few pipelines created run in a worker of their own and are ended at once), and
their connection probes wait `PROBE_TIMEOUT_S` for a peer that does not answer as it should."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import httpx
import pytest

from support.servers import Serve

TOKEN = "security-test-token"
# A peer that never answers as Kafka or ClickHouse costs each probe this long (default 10 s).
PROBE_TIMEOUT_S = 1.0


@pytest.fixture(scope="module")
def serve_factory(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Callable[..., Serve]]:
    """Start servers with the given flags and environment; all stop with the module."""
    started: list[Serve] = []

    def start(*args: str, env: dict[str, str] | None = None, wait_ready: bool = True) -> Serve:
        data_dir = tmp_path_factory.mktemp("serve") / "data"
        log = data_dir.parent / f"{data_dir.name}-serve.log"
        quick = ["--no-otlp", "--isolation", "process", "--probe-timeout", str(PROBE_TIMEOUT_S)]
        server = Serve(data_dir, log, [*quick, *args], env)
        server.start(wait_ready, may_refuse=True, ready_timeout=60)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop(30)


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
