"""Fault injection for the embedded ClickHouse endpoint, for chaos and exactly-once tests.

The endpoint can answer the next N query/insert requests with a ClickHouse error (or drop
the connection), optionally after running the statement (an insert commits, the client still
sees a failure), and delay every request. In-process tests set this on the server object;
tests driving a spawned endpoint use its ``/_faults`` URL (``set_remote_faults``).
"""

from __future__ import annotations

import json
import threading
import urllib.request
from dataclasses import asdict, dataclass
from typing import Any
from urllib.parse import urlencode

from streamsift.embedded.clickhouse_protocol import ClickHouseError

# The names ClickHouse gives the error codes a test typically injects.
_FAULT_NAMES = {
    1002: "UNKNOWN_EXCEPTION",
    202: "TOO_MANY_SIMULTANEOUS_QUERIES",
    209: "SOCKET_TIMEOUT",
    210: "NETWORK_ERROR",
    252: "TOO_MANY_PARTS",
}


@dataclass
class Faults:
    """Fault injection for chaos tests; applies to query and insert requests, not /ping.

    ``fail_remaining`` requests answer ``status`` with a ClickHouse error of ``code`` (status 0:
    drop the connection without an answer). With ``after_execute`` the statement runs first, so
    an insert commits and the client still sees a failure. ``delay_ms`` delays every request.
    """

    fail_remaining: int = 0
    status: int = 503
    code: int = 1002
    after_execute: bool = False
    delay_ms: int = 0


@dataclass(frozen=True)
class Fault:
    """One request's injected failure."""

    status: int  # 0: drop the connection
    code: int
    after_execute: bool

    def error(self) -> ClickHouseError:
        return ClickHouseError(
            self.code,
            _FAULT_NAMES.get(self.code, "INJECTED_FAULT"),
            f"Injected fault (HTTP {self.status})",
        )


class FaultInjector:
    """The faults set on one endpoint; safe to change while requests run."""

    def __init__(self) -> None:
        self.faults = Faults()
        self._lock = threading.Lock()

    def fail_next(
        self, n: int = 1, status: int = 503, *, code: int = 1002, after_execute: bool = False
    ) -> None:
        """Make the next n query/insert requests fail (see Faults); status 0 drops the connection."""
        with self._lock:
            self.faults.fail_remaining = n
            self.faults.status = status
            self.faults.code = code
            self.faults.after_execute = after_execute

    def take(self) -> Fault | None:
        """The fault of the request starting now, if one is due."""
        with self._lock:
            if self.faults.fail_remaining <= 0:
                return None
            self.faults.fail_remaining -= 1
            return Fault(self.faults.status, self.faults.code, self.faults.after_execute)

    def configure(self, params: dict[str, str]) -> dict[str, Any]:
        """Apply ``/_faults?fail_next=N&status=S&code=C&after_execute=1&delay_ms=X``; return the
        faults now set. Raises ValueError for a parameter that is not a number."""
        if "fail_next" in params:
            self.fail_next(
                int(params["fail_next"]),
                int(params.get("status", 503)),
                code=int(params.get("code", 1002)),
                after_execute=params.get("after_execute", "0") in ("1", "true"),
            )
        if "delay_ms" in params:
            self.faults.delay_ms = int(params["delay_ms"])
        return asdict(self.faults)


def set_remote_faults(url: str, **faults: int | bool) -> dict[str, Any]:
    """Set faults on a running endpoint (e.g. a spawned one): fail_next, status, code, after_execute, delay_ms."""
    query = urlencode({k: int(v) for k, v in faults.items()})
    with urllib.request.urlopen(f"{url.rstrip('/')}/_faults?{query}", data=b"", timeout=10) as resp:
        return json.loads(resp.read())
