"""A short, bounded time series of each pipeline's figures, kept by the server.

`History` holds at most `capacity` points per pipeline (24 h at 10 s by default) in memory
and computes the rates between consecutive points, so the UI draws charts that do not start
empty on each visit and shows rates the server measured rather than differences of its own
polls. A count that goes down means a new run (counts are per run): no rate for that step.
`HistoryRecorder` samples a `PipelineService`'s status every `interval_s` on a thread.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol

log = logging.getLogger(__name__)

INTERVAL_S = 10.0
KEEP_S = 24 * 3600.0


@dataclass(frozen=True, slots=True)
class Point:
    """A pipeline's counts at `t` (seconds since the epoch) and the rates since the last."""

    t: float
    read: int
    written: int
    duplicates: int
    dlq: int
    filtered: int | None
    lag: int | None
    written_per_s: float | None
    read_per_s: float | None


def _rate(now: int, before: int, seconds: float) -> float | None:
    if seconds <= 0 or now < before:
        return None  # no time passed, or a new run started from 0
    return (now - before) / seconds


class History:
    """Points per pipeline, oldest first, at most `capacity` each (the oldest go first)."""

    def __init__(self, capacity: int = int(KEEP_S / INTERVAL_S)) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self.capacity = capacity
        self._points: dict[str, deque[Point]] = {}
        self._lock = threading.Lock()

    def record(self, pipeline_id: str, t: float, status: Any) -> Point:
        """Add `status`'s counts (read, written, duplicates, dlq, filtered, lag) at `t`."""
        counts = {k: int(getattr(status, k, 0) or 0) for k in ("read", "written", "duplicates")}
        filtered = getattr(status, "filtered", None)
        with self._lock:
            points = self._points.setdefault(pipeline_id, deque(maxlen=self.capacity))
            last = points[-1] if points else None
            seconds = t - last.t if last else 0.0
            point = Point(
                t=t,
                dlq=int(getattr(status, "dlq", 0) or 0),
                filtered=None if filtered is None else int(filtered),
                lag=getattr(status, "lag", None),
                written_per_s=_rate(counts["written"], last.written, seconds) if last else None,
                read_per_s=_rate(counts["read"], last.read, seconds) if last else None,
                **counts,
            )
            if last is not None and t <= last.t:
                return last  # a clock step back: keep the series ordered
            points.append(point)
            return point

    def points(self, pipeline_id: str, since: float | None = None, limit: int = 0) -> list[Point]:
        """The points after `since`, oldest first; with `limit`, at most that many, evenly
        thinned (the newest always kept)."""
        with self._lock:
            found = [p for p in self._points.get(pipeline_id, ()) if since is None or p.t > since]
        if limit > 0 and len(found) > limit:
            step = len(found) / limit
            picked = [found[int(i * step)] for i in range(limit - 1)]
            found = [*picked, found[-1]]
        return found

    def latest(self, pipeline_id: str) -> Point | None:
        with self._lock:
            points = self._points.get(pipeline_id)
            return points[-1] if points else None

    def retain(self, pipeline_ids: Iterable[str]) -> None:
        """Forget the pipelines not in `pipeline_ids` (deleted ones)."""
        keep = set(pipeline_ids)
        with self._lock:
            for gone in set(self._points) - keep:
                del self._points[gone]

    def pipelines(self) -> list[str]:
        with self._lock:
            return list(self._points)


class StatusSource(Protocol):
    """What the recorder reads: PipelineService's list and status."""

    def list(self) -> list[Any]: ...

    def status(self, pipeline_id: str) -> Any: ...


class HistoryRecorder:
    """Samples every pipeline's status into `history` every `interval_s`, on a thread."""

    def __init__(
        self,
        service: StatusSource,
        history: History,
        interval_s: float = INTERVAL_S,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.service, self.history, self.interval_s, self.clock = (
            service,
            history,
            interval_s,
            clock,
        )
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    def sample(self) -> None:
        """One round: a point for each pipeline; the deleted ones forgotten."""
        ids = [record.id for record in self.service.list()]
        now = self.clock()
        for pipeline_id in ids:
            try:
                self.history.record(pipeline_id, now, self.service.status(pipeline_id))
            except Exception as exc:  # noqa: BLE001 - deleted meanwhile, a report unreadable
                log.debug("history: no point for %s: %s", pipeline_id, exc)
        self.history.retain(ids)

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="pipeline-history", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._halt.set()
        if self._thread is not None:
            self._thread.join(5)

    def _run(self) -> None:
        while True:
            try:
                self.sample()
            except Exception as exc:  # noqa: BLE001 - the service closing: the next round
                log.debug("history: sampling failed: %s", exc)
            if self._halt.wait(self.interval_s):
                return
