"""Partition ends probed in the background, so a micro-batch's planning need not wait.

Finding the true end of the partitions (reading to end-of-partition, since a broker's high
watermark may lie) costs a fetch round; done at the start of every micro-batch it added to
every batch's duration. The watcher probes back to back on its own thread and consumer
while the query keeps asking, and answers with its latest probe: a true end when it was
probed, a moment ago. A planner gets nothing (and probes itself) when the latest answer is
older than `MAX_AGE_S` or the last probe failed, so errors surface where they did before.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from confluent_kafka import KafkaException

from streamsift.sources.errors import SourceError, SourceUnavailable

PAUSE_S = 0.05  # between two probes
MAX_AGE_S = 1.0  # an answer older than this is not used
IDLE_S = 10.0  # stop probing when nobody asked for this long (e.g. a stopping query)
log = logging.getLogger("streamsift.kafka")


class EndWatcher:
    """Runs `probe` (the ends of every partition, as sorted offsets) again and again."""

    def __init__(self, probe: Callable[[], dict[str, int]], close: Callable[[], None]) -> None:
        self._probe = probe
        self._close = close
        self._latest: tuple[float, dict[str, int]] | None = None
        self._asked_at = time.monotonic()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="kafka-end-watch", daemon=True)
        self._thread.start()

    def ends(self) -> dict[str, int] | None:
        """The latest probed ends, if fresh; None: probe now yourself."""
        self._asked_at = time.monotonic()
        latest = self._latest
        if latest is None or time.monotonic() - latest[0] > MAX_AGE_S:
            return None
        return dict(latest[1])

    def stop(self) -> None:
        self._done.set()
        self._thread.join(35)

    def _loop(self) -> None:
        try:
            while not self._done.is_set():
                if time.monotonic() - self._asked_at > IDLE_S:
                    self._done.wait(PAUSE_S)
                    continue
                began = time.monotonic()
                try:
                    self._latest = (began, self._probe())
                except (KafkaException, SourceUnavailable, SourceError) as exc:
                    self._latest = None
                    log.debug("background end probe failed (%s); planners probe themselves", exc)
                    self._done.wait(1.0)
                self._done.wait(PAUSE_S)
        finally:
            self._close()
