"""What Spark's `transformWithState` hands a processor besides its rows, for unit tests of
the join processors: the batch's watermark, and the expiry time of a timer that fired."""

from __future__ import annotations


class Clock:
    """Spark's TimerValues: the micro-batch's watermark."""

    def __init__(self, watermark_ms: int) -> None:
        self.watermark_ms = watermark_ms

    def getCurrentWatermarkInMs(self) -> int:  # noqa: N802 (Spark's API)
        return self.watermark_ms


class Expired:
    """Spark's ExpiredTimerInfo: the time the timer was set for."""

    def __init__(self, ms: int) -> None:
        self.ms = ms

    def getExpiryTimeInMs(self) -> int:  # noqa: N802
        return self.ms
