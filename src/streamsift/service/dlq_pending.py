"""The dead letters still pending in each pipeline's DLQ table, for its status.

"DLQ pending" is the table's count (dead letters neither consumed nor replayed, whichever run
wrote them), not a run's. Counting it asks ClickHouse, which a status must never wait for (a
stalled ClickHouse would stall every status answer), so counts are refreshed in the
background and a status shows the latest with its time. It changes only when a run writes
dead letters or someone consumes, purges or replays them: a count is taken again when the
run's count of written dead letters moved, after a DLQ request (`stale`), and otherwise every
MAX_AGE_S (someone may work on the table directly); never more often than every REFRESH_S.
With many idle pipelines on one embedded ClickHouse, counting each every REFRESH_S was a
tenth of their idle CPU.
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
MAX_AGE_S = 300.0
log = logging.getLogger("streamsift.service")


class PendingCounts:
    """`count(pipeline_id)` asks the table; `get` answers from what was last counted."""

    def __init__(self, count: Callable[[str], int]) -> None:
        self._count = count
        self._known: dict[str, tuple[int, datetime, float]] = {}
        self._busy: set[str] = set()
        self._stale: set[str] = set()  # worked on since the last count
        self._written: dict[str, int | None] = {}  # the run's written count at the last count
        self._lock = threading.Lock()

    def get(
        self, pipeline_id: str, refresh: bool = True, written: int | None = None
    ) -> tuple[int | None, datetime | None]:
        """The last count and when it was taken (None, None before the first); starts a
        refresh in the background when it is due (see the module docstring) and `refresh`
        allows (the service refreshes only while the pipeline's run is alive: counting a
        stopped one's embedded ClickHouse would start its endpoint). `written`: the run's
        dead letters written so far, if known."""
        with self._lock:
            known = self._known.get(pipeline_id)
            if refresh and pipeline_id not in self._busy and self._due(pipeline_id, written):
                self._busy.add(pipeline_id)
                threading.Thread(
                    target=self._refresh,
                    args=(pipeline_id, written),
                    name="dlq-pending",
                    daemon=True,
                ).start()
        return (None, None) if known is None else (known[0], known[1])

    def _due(self, pipeline_id: str, written: int | None) -> bool:
        known = self._known.get(pipeline_id)
        if known is None:
            return True
        age = time.monotonic() - known[2]
        moved = written is None or written != self._written.get(pipeline_id)
        return age > REFRESH_S and (moved or pipeline_id in self._stale or age > MAX_AGE_S)

    def stale(self, pipeline_id: str) -> None:
        """Count again at the next chance (its dead letters were worked on)."""
        with self._lock:
            self._stale.add(pipeline_id)

    def forget(self, pipeline_id: str) -> None:
        with self._lock:
            self._known.pop(pipeline_id, None)
            self._written.pop(pipeline_id, None)
            self._stale.discard(pipeline_id)

    def _refresh(self, pipeline_id: str, written: int | None) -> None:
        with self._lock:
            self._stale.discard(pipeline_id)
        try:
            count = self._count(pipeline_id)
        except DlqNotFound:
            count = 0  # no dead letter written yet
        except (StreamsiftError, OSError) as exc:
            log.debug("pipeline %s: DLQ pending not counted: %s", pipeline_id, exc)
            with self._lock:
                self._stale.add(pipeline_id)  # try again at the next chance
            return
        finally:
            with self._lock:
                self._busy.discard(pipeline_id)
        with self._lock:
            self._known[pipeline_id] = (count, datetime.now(timezone.utc), time.monotonic())
            self._written[pipeline_id] = written
