"""Partition ends probed in the background, so a micro-batch's planning need not wait.

Finding the true end of the partitions (reading to end-of-partition, since a broker's high
watermark may lie) costs a fetch round; done at the start of every micro-batch it added to
every batch's duration. The watcher probes on its own thread and consumer while the query
keeps asking, and answers with its latest probe. A planner gets nothing (and probes itself)
when the latest answer is older than `MAX_AGE_S` or the last probe failed, so errors surface
where they did before.

It probes about once per ask, timed to finish just before the next ask is due (the query asks
at a steady pace: once per micro-batch). Probing back to back instead, 10-20 fetches a second
per partition, loaded the bundled broker, whose cost per fetch grows with the partition's
length, until a 10-minute soak stalled (docs/benchmarks.md, round five).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from confluent_kafka import KafkaException

from streamsift.sources.errors import SourceError, SourceUnavailable

PAUSE_S = 0.05  # the shortest pause between two probes
MAX_PAUSE_S = 0.75  # the longest, so that an answer is never older than MAX_AGE_S for long
LEAD_S = 0.05  # a probe is timed to end this long before the next ask is due
MAX_AGE_S = 1.0  # an answer older than this is not used
WAKE_CHECK_S = 0.5  # how often an idle wait looks whether it was asked to end early
IDLE_S = 10.0  # stop probing when nobody asked for this long (e.g. a stopping query)
log = logging.getLogger("streamsift.kafka")


def pause_before_next_probe(
    now: float, asked_at: float, ask_interval: float | None, probe_seconds: float
) -> float:
    """How long to wait so that the next probe ends `LEAD_S` before the next ask that it can
    still serve is due (asks come every `ask_interval` from `asked_at`); back to back
    (`PAUSE_S`) until the pace of asks is known."""
    if ask_interval is None:
        return PAUSE_S
    interval = max(ask_interval, PAUSE_S)
    due = asked_at + interval
    while due - probe_seconds - LEAD_S < now:  # that ask is served (or missed): the next one
        due += interval
    return min(max(due - probe_seconds - LEAD_S - now, PAUSE_S), MAX_PAUSE_S)


class EndWatcher:
    """Runs `probe` (the ends of every partition, as sorted offsets) at the pace of the asks."""

    def __init__(self, probe: Callable[[], dict[str, int]], close: Callable[[], None]) -> None:
        self._probe = probe
        self._close = close
        self._latest: tuple[float, dict[str, int]] | None = None
        self._asked_at = time.monotonic()
        self._ask_interval: float | None = None  # smoothed time between two asks
        self._asks = 0
        self._done = threading.Event()
        self._news = threading.Condition()  # notified with each answer
        self._thread = threading.Thread(target=self._loop, name="kafka-end-watch", daemon=True)
        self._thread.start()

    def ends(self) -> dict[str, int] | None:
        """The latest probed ends, if fresh; None: probe now yourself."""
        now = time.monotonic()
        self._note_ask(now)
        latest = self._latest
        if latest is None or now - latest[0] > MAX_AGE_S:
            return None
        return dict(latest[1])

    def wait_beyond(
        self, start: dict[str, int], seconds: float, woken: Callable[[], bool]
    ) -> dict[str, int] | None:
        """For a query with nothing new to read: wait up to `seconds` for an answer with an end
        beyond `start`, and return it; None when the time is up, `woken()` says to end early,
        or a probe failed (the planner then plans with what it has, or probes itself).

        An idle query's trigger then comes every `seconds` instead of every trigger interval
        (each trigger costs the JVM and this process a round of calls), while new data still
        ends the wait as soon as a probe sees it."""
        deadline = time.monotonic() + seconds
        with self._news:
            while True:
                latest = self._latest
                if latest is None:
                    return None
                if beyond(latest[1], start):
                    return dict(latest[1])
                left = deadline - time.monotonic()
                if left <= 0 or self._done.is_set() or woken():
                    return None
                self._news.wait(min(left, WAKE_CHECK_S))

    def stop(self) -> None:
        self._done.set()
        self._thread.join(35)

    def _note_ask(self, now: float) -> None:
        gap = now - self._asked_at
        self._asks += 1
        if self._asks >= 2:  # the first gap runs from the watcher's start, not from an ask
            gap = min(gap, MAX_AGE_S)
            smoothed = self._ask_interval
            self._ask_interval = gap if smoothed is None else 0.7 * smoothed + 0.3 * gap
        self._asked_at = now

    def _publish(self, answer: tuple[float, dict[str, int]] | None) -> None:
        with self._news:
            self._latest = answer
            self._news.notify_all()

    def _loop(self) -> None:
        try:
            while not self._done.is_set():
                if time.monotonic() - self._asked_at > IDLE_S:
                    self._done.wait(PAUSE_S)
                    continue
                began = time.monotonic()
                try:
                    self._publish((began, self._probe()))
                except (KafkaException, SourceUnavailable, SourceError) as exc:
                    self._publish(None)
                    log.debug("background end probe failed (%s); planners probe themselves", exc)
                    self._done.wait(1.0)
                now = time.monotonic()
                pause = pause_before_next_probe(
                    now, self._asked_at, self._ask_interval, now - began
                )
                self._done.wait(pause)
        finally:
            self._close()


def beyond(ends: dict[str, int], start: dict[str, int]) -> bool:
    """Does any partition's end lie beyond where the next micro-batch starts?"""
    return any(int(end) > int(start.get(key, 0)) for key, end in ends.items())
