"""The dead letters still pending in each pipeline's DLQ table, for its status.

"DLQ pending" is the table's count (dead letters neither consumed nor replayed, whichever run
wrote them), not a run's. Counting it asks ClickHouse, which a status must never wait for (a
stalled ClickHouse would stall every status answer), so counts are refreshed in the
background, at most every REFRESH_S per pipeline, and a status shows the latest with its time.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone

from streamsift.engine.errors import DlqNotFound
from streamsift.errors import StreamsiftError

REFRESH_S = 10.0
log = logging.getLogger("streamsift.service")


class PendingCounts:
    """`count(pipeline_id)` asks the table; `get` answers from what was last counted."""

    def __init__(self, count: Callable[[str], int]) -> None:
        self._count = count
        self._known: dict[str, tuple[int, datetime, float]] = {}
        self._busy: set[str] = set()
        self._lock = threading.Lock()

    def get(self, pipeline_id: str, refresh: bool = True) -> tuple[int | None, datetime | None]:
        """The last count and when it was taken (None, None before the first); starts a
        refresh in the background when it is older than REFRESH_S and `refresh` allows (the
        service refreshes only while the pipeline's worker runs: counting a stopped one's
        embedded ClickHouse would start its endpoint)."""
        with self._lock:
            known = self._known.get(pipeline_id)
            stale = refresh and (known is None or time.monotonic() - known[2] > REFRESH_S)
            if stale and pipeline_id not in self._busy:
                self._busy.add(pipeline_id)
                threading.Thread(
                    target=self._refresh, args=(pipeline_id,), name="dlq-pending", daemon=True
                ).start()
        return (None, None) if known is None else (known[0], known[1])

    def forget(self, pipeline_id: str) -> None:
        with self._lock:
            self._known.pop(pipeline_id, None)

    def _refresh(self, pipeline_id: str) -> None:
        try:
            count = self._count(pipeline_id)
        except DlqNotFound:
            count = 0  # no dead letter written yet
        except (StreamsiftError, OSError) as exc:
            log.debug("pipeline %s: DLQ pending not counted: %s", pipeline_id, exc)
            return
        finally:
            with self._lock:
                self._busy.discard(pipeline_id)
        with self._lock:
            self._known[pipeline_id] = (count, datetime.now(timezone.utc), time.monotonic())
