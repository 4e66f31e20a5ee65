"""Getting notices out without holding up the watch: a queue and a thread per channel.

`Delivery.submit` returns at once. Each channel's thread sends its notices in order (an
episode's resolution never overtakes its alert), trying a notice again after a back-off
that doubles (`RetryPolicy`) when the channel did not take it, up to `attempts` tries; a
refusal is not retried. Failures are logged by the channel's label, never its URL or
secrets. A full queue drops its oldest notice, saying so. `close` lets the queues drain
for a moment, then interrupts the back-offs.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from dataclasses import dataclass
from typing import Any

from streamsift.service.alerts.channels import Sender
from streamsift.service.alerts.notices import Notice
from streamsift.service.errors import AlertNotSent, AlertRefused

log = logging.getLogger("streamsift.service.alerts")
QUEUE_LIMIT = 1000


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    first_backoff_s: float = 1.0
    max_backoff_s: float = 30.0

    def backoff(self, attempt: int) -> float:
        """The wait after failed try `attempt` (1, 2, ...): doubling, capped."""
        return min(self.first_backoff_s * 2 ** (attempt - 1), self.max_backoff_s)


class Delivery:
    """Sends notices to channels, each channel on a thread of its own (see the module)."""

    def __init__(self, retry: RetryPolicy | None = None) -> None:
        self.retry = retry or RetryPolicy()
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._lanes: dict[Any, _Lane] = {}

    def submit(self, key: Any, sender: Sender, notice: Notice) -> None:
        """Queue `notice` for the channel `key` names (its settings: one lane per channel)."""
        if self._closing.is_set():
            return
        with self._lock:
            lane = self._lanes.get(key)
            if lane is None:
                lane = self._lanes[key] = _Lane(sender.label, self.retry, self._closing)
        lane.put(sender, notice)

    def idle(self) -> bool:
        """Whether every queue is empty and no notice is being sent."""
        with self._lock:
            return all(lane.idle() for lane in self._lanes.values())

    def close(self, drain_s: float = 5.0) -> None:
        deadline = time.monotonic() + drain_s
        while not self.idle() and time.monotonic() < deadline:
            time.sleep(0.05)
        self._closing.set()
        with self._lock:
            lanes = list(self._lanes.values())
        for lane in lanes:
            lane.stop()


class _Lane:
    """One channel's queue and thread."""

    def __init__(self, label: str, retry: RetryPolicy, closing: threading.Event) -> None:
        self.label = label
        self._retry = retry
        self._closing = closing
        self._queue: queue.Queue[tuple[Sender, Notice] | None] = queue.Queue()
        self._busy = False
        self._thread = threading.Thread(target=self._run, name=f"alerts {label}", daemon=True)
        self._thread.start()

    def put(self, sender: Sender, notice: Notice) -> None:
        if self._queue.qsize() >= QUEUE_LIMIT:
            try:
                _, dropped = self._queue.get_nowait() or (None, None)
                log.warning("%s: too many notices waiting; dropped %s", self.label, dropped)
            except queue.Empty:
                pass
        self._queue.put((sender, notice))

    def idle(self) -> bool:
        return self._queue.empty() and not self._busy

    def stop(self) -> None:
        self._queue.put(None)
        self._thread.join(5)

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            self._busy = True
            try:
                self._deliver(*item)
            except Exception:  # noqa: BLE001 - a bug in a sender must not end the lane
                log.exception("%s: sending failed unexpectedly", self.label)
            finally:
                self._busy = False

    def _deliver(self, sender: Sender, notice: Notice) -> None:
        what = f"{notice.event} {notice.episode.condition} of pipeline {notice.episode.pipeline_id}"
        for attempt in range(1, self._retry.attempts + 1):
            try:
                sender.send(notice)
            except AlertRefused as exc:
                log.warning("%s refused the %s: %s", self.label, what, exc.message)
                return
            except AlertNotSent as exc:
                if attempt == self._retry.attempts or self._closing.is_set():
                    log.warning(
                        "%s did not take the %s after %d tries: %s",
                        self.label,
                        what,
                        attempt,
                        exc.message,
                    )
                    return
                wait = self._retry.backoff(attempt)
                log.info("%s: %s; trying again in %.1fs", self.label, exc.message, wait)
                if self._closing.wait(wait):
                    log.warning("%s: the server stops; the %s was not sent", self.label, what)
                    return
            else:
                log.info("%s: sent the %s", self.label, what)
                return
