"""Starting a pipeline's worker again after it died (kill -9, out of memory, a lost JVM).

A worker retries transient faults itself (engine/retrying.py); this is the level above: its
process ended without a stop or a permanent failure, while its user wants it running. The
service then starts a new worker after the pipeline's back-off (`runtime.retry`), counting
consecutive relaunches against its retry limit; a worker that reports running again ends
the episode.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timedelta, timezone

from streamsift.config.runtime_limits import Retry

log = logging.getLogger("streamsift.service")


class Relaunches:
    """The relaunches scheduled or made per pipeline; `launch(id)` runs on a timer thread."""

    def __init__(self, launch: Callable[[str], None]) -> None:
        self._launch = launch
        self._attempts: dict[str, int] = {}
        self._since: dict[str, datetime] = {}
        self._total: dict[str, int] = {}  # relaunches since this server started, per pipeline
        self._timers: dict[str, threading.Timer] = {}
        self._lock = threading.Lock()

    def schedule(
        self, pipeline_id: str, retry: Retry, server_limit: int | None
    ) -> tuple[int, timedelta] | None:
        """Schedule the next relaunch: (its attempt, the wait before it), or None when the
        retry limit is used up (the caller fails the pipeline)."""
        limit = retry.max_attempts if retry.max_attempts is not None else server_limit
        with self._lock:
            attempt = self._attempts.get(pipeline_id, 0) + 1
            if limit is not None and attempt > limit:
                return None
            self._attempts[pipeline_id] = attempt
            self._total[pipeline_id] = self._total.get(pipeline_id, 0) + 1
            self._since.setdefault(pipeline_id, datetime.now(timezone.utc))
            wait = retry.backoff(attempt)
            self._cancel(pipeline_id)
            timer = threading.Timer(wait.total_seconds(), self._fire, (pipeline_id,))
            timer.daemon = True
            timer.name = f"relaunch-{pipeline_id}"
            self._timers[pipeline_id] = timer
            timer.start()
        log.warning(
            "pipeline %s: its worker ended; starting a new one in %.0fs (attempt %d%s)",
            pipeline_id,
            wait.total_seconds(),
            attempt,
            "" if limit is None else f" of {limit}",
        )
        return attempt, wait

    def total(self, pipeline_id: str) -> int:
        """Relaunches of the pipeline since this server started."""
        with self._lock:
            return self._total.get(pipeline_id, 0)

    def since(self, pipeline_id: str) -> datetime | None:
        with self._lock:
            return self._since.get(pipeline_id)

    def settled(self, pipeline_id: str) -> None:
        """The pipeline runs again (or was stopped): its episode is over."""
        with self._lock:
            self._attempts.pop(pipeline_id, None)
            self._since.pop(pipeline_id, None)
            self._cancel(pipeline_id)

    def close(self) -> None:
        with self._lock:
            for pipeline_id in list(self._timers):
                self._cancel(pipeline_id)

    def _cancel(self, pipeline_id: str) -> None:
        timer = self._timers.pop(pipeline_id, None)
        if timer is not None:
            timer.cancel()

    def _fire(self, pipeline_id: str) -> None:
        with self._lock:
            self._timers.pop(pipeline_id, None)
        try:
            self._launch(pipeline_id)
        except Exception:  # a timer thread: say it, the pipeline's state tells the rest
            log.exception("pipeline %s: starting its worker again failed", pipeline_id)
