"""Ctrl-C and SIGTERM for long-running commands (`run`, `demo`, a future `serve`).

The first signal asks for a graceful stop: the micro-batch in flight is finished (or, when it
is stuck retrying a sink that does not answer, given up uncommitted) and the command exits 0.
The second one aborts at once. Either way the checkpoint stays consistent: Spark commits a
micro-batch only after its inserts, and a redone batch carries the same insert tokens.

PySpark's SparkContext replaces the SIGINT handler when it starts (with one that cancels all
jobs and raises KeyboardInterrupt, which surfaces as a py4j traceback); `spark_session()` puts
back a handler installed before it, and `install_stop_handlers` may also be called after the
session exists.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from collections.abc import Callable, Iterator
from types import FrameType

STOPPING_MESSAGE = "stopping after the current micro-batch (again to abort)..."
ABORT_MESSAGE = (
    "aborted: the micro-batch in flight was not committed; the next run redoes it from the "
    "checkpoint"
)
ABORT_EXIT_CODE = 130  # the shell's convention for "ended by SIGINT"


class StopRequested(BaseException):
    """Raised in a start-up step that a stop signal interrupted (see StopFlag.interruptible).

    A BaseException, like KeyboardInterrupt, so that no `except Exception` swallows it.
    """


class AbortRequested(BaseException):
    """A second stop signal: leave now, without waiting for anything."""


class StopFlag:
    """A stop request that a signal handler may set: no locks are taken when setting it (a
    handler runs on the main thread between two bytecodes, possibly while that thread holds a
    lock), and waiting on it polls.

    Inside `interruptible()`, a `set()` on the same thread, which can only come from a signal
    handler interrupting that thread, raises StopRequested there: start-up steps (connecting
    to ClickHouse, asking Kafka for the topic) have nothing in flight and end at once.
    """

    POLL_S = 0.1

    def __init__(self) -> None:
        self._set = False
        self._interruptible: threading.Thread | None = None

    def set(self) -> None:
        self._set = True
        if self._interruptible is threading.current_thread():
            self._interruptible = None
            raise StopRequested

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float) -> bool:
        """Sleep up to `timeout` seconds or until the flag is set; return whether it is."""
        deadline = time.monotonic() + timeout
        while not self._set:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            time.sleep(min(left, self.POLL_S))
        return self._set

    @contextlib.contextmanager
    def interruptible(self) -> Iterator[None]:
        """A section of the current thread that a stop signal ends with StopRequested."""
        if self._set:
            raise StopRequested
        self._interruptible = threading.current_thread()
        try:
            yield
        finally:
            self._interruptible = None


def install_stop_handlers(stop: Callable[[], None]) -> None:
    """Make SIGINT (Ctrl-C) and SIGTERM call `stop` the first time and abort the second time.

    Must run on the main thread. The first signal writes one line and calls `stop`; the second
    writes one line and raises AbortRequested on the main thread (the CLI exits with
    ABORT_EXIT_CODE). Lines are written with os.write: a handler may interrupt a print.
    """
    fired = False

    def handler(signum: int, _frame: FrameType | None) -> None:
        nonlocal fired
        if fired:
            _say(ABORT_MESSAGE)
            raise AbortRequested
        fired = True
        _say(STOPPING_MESSAGE)
        stop()

    signal.signal(signal.SIGINT, handler)
    signal.signal(signal.SIGTERM, handler)


def _say(line: str) -> None:
    with contextlib.suppress(OSError):  # stderr closed: nothing to tell
        os.write(2, ("\n" + line + "\n").encode())
