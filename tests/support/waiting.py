"""Waiting for a condition: the one polling loop of the suite."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")


def wait_for(
    check: Callable[[], T],
    timeout: float,
    *,
    what: str = "the condition",
    interval: float = 0.5,
    proc: subprocess.Popen | None = None,
    log: Path | None = None,
    ignoring: type[BaseException] | tuple[type[BaseException], ...] = (),
) -> T:
    """Call `check` every `interval` seconds until it returns something true, and return
    that. Fail (AssertionError naming `what`) after `timeout` seconds, or as soon as `proc`
    has ended (with the tail of `log`, its output). Exceptions of the `ignoring` types count
    as "not yet" (a table not created yet, a server not listening yet)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if result := check():
                return result
        except ignoring:
            pass
        if proc is not None and proc.poll() is not None:
            tail = _tail(log)
            raise AssertionError(f"the process ended (exit {proc.returncode}) before {what}{tail}")
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}{_tail(log)}")
        time.sleep(interval)


def _tail(log: Path | None, chars: int = 3000) -> str:
    if log is None or not log.exists():
        return ""
    return ":\n" + log.read_text(errors="replace")[-chars:]
