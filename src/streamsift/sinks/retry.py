"""Retry with exponential backoff for transient failures, logging once per episode."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from streamsift.sinks.errors import SinkTransientError

T = TypeVar("T")
log = logging.getLogger("streamsift.sink")


@dataclass(frozen=True)
class RetryPolicy:
    initial_s: float = 0.5
    max_s: float = 10.0
    give_up_after_s: float = 600.0

    def run(
        self,
        action: Callable[[], T],
        what: str,
        on_wait: Callable[[str | None], None] | None = None,
    ) -> T:
        """Run `action`, retrying SinkTransientError until it succeeds or time runs out."""
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
                if attempt == 1:
                    log.warning("%s failed (%s); retrying with backoff", what, exc)
                if on_wait:
                    on_wait(f"{what}: retrying after transient error: {exc}")
                time.sleep(delay)
                delay = min(delay * 2, self.max_s)
                continue
            if attempt:
                log.warning("%s recovered after %d retries", what, attempt)
                if on_wait:
                    on_wait(None)
            return result
