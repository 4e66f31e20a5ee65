"""Retry with exponential backoff for transient failures, logging once per episode.

Each failed try is reported as a typed `RetryStatus` (what is retried, which try, why), so
whoever shows or counts retries reads fields instead of parsing status text.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol, TypeVar

from streamsift.sinks.errors import RetryInterrupted, SinkTransientError

T = TypeVar("T")
log = logging.getLogger("streamsift.sink")


class StopCheck(Protocol):
    """A stop request to honour while backing off (threading.Event or runtime's StopFlag)."""

    def is_set(self) -> bool: ...

    def wait(self, timeout: float) -> bool: ...


@dataclass(frozen=True)
class RetryStatus:
    """One transient failure of an action that is about to be tried again.

    `operation`: the kind of action, as metrics count retries (insert, connect, command,
    query; "other" when the caller names none). `what`: the action as users read it, e.g.
    "insert into events". `attempt`: how many tries failed so far in this episode.
    """

    operation: str
    what: str
    attempt: int
    error_class: str
    error: str

    @property
    def text(self) -> str:
        """The status line users see while the action is retried."""
        return f"{self.what}: retrying after transient error: {self.error}"

    def __str__(self) -> str:
        return self.text


# Called with each retry's status, then with None once the action succeeded after retries.
OnRetry = Callable[[RetryStatus | None], None]


@dataclass(frozen=True)
class RetryPolicy:
    initial_s: float = 0.5
    max_s: float = 10.0
    give_up_after_s: float = 600.0
    log_episodes: bool = True  # False where the caller reports the outcome itself

    def run(
        self,
        action: Callable[[], T],
        what: str,
        on_wait: OnRetry | None = None,
        stop: StopCheck | None = None,
        operation: str = "other",
    ) -> T:
        """Run `action`, retrying SinkTransientError until it succeeds or time runs out.

        `what` names the action in messages, `operation` its kind (RetryStatus). A set `stop`
        event ends the back-off at once with RetryInterrupted, so a Ctrl-C or SIGTERM is not
        held up by a server that does not answer.
        """
        delay = self.initial_s
        started = time.monotonic()
        attempt = 0
        while True:
            try:
                result = action()
            except SinkTransientError as exc:
                attempt += 1
                waited = time.monotonic() - started
                if waited + delay > self.give_up_after_s:
                    raise SinkTransientError(
                        f"{what}: still failing after {attempt} attempts over {waited:.0f}s: {exc}"
                    ) from exc
                if attempt == 1 and self.log_episodes:
                    log.warning("%s failed (%s); retrying with backoff", what, exc)
                if on_wait:
                    on_wait(RetryStatus(operation, what, attempt, type(exc).__name__, str(exc)))
                if stop is not None and (stop.is_set() or stop.wait(delay)):
                    raise RetryInterrupted(f"{what}: stopped while retrying: {exc}") from exc
                if stop is None:
                    time.sleep(delay)
                delay = min(delay * 2, self.max_s)
                continue
            if attempt and self.log_episodes:
                log.warning("%s recovered after %d retries", what, attempt)
            if attempt and on_wait:
                on_wait(None)
            return result
