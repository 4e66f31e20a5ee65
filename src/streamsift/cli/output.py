"""Terminal output: logging setup, the live status line, and one-line errors."""

from __future__ import annotations

import logging
import sys
import time
from typing import TextIO

from streamsift.engine.progress import RunStats


def setup_logging(verbose: bool) -> None:
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        datefmt="%H:%M:%S",
        stream=sys.stderr,
    )
    quiet = logging.INFO if verbose else logging.WARNING
    for name in ("py4j", "py4j.clientserver", "py4j.java_gateway"):
        logging.getLogger(name).setLevel(quiet)
    # py4j logs a traceback for every exception a foreachBatch call raises, including the
    # interruption when a stop gives up a batch whose sink is retrying; the run reports
    # failures itself in one line (--verbose shows the tracebacks)
    if not verbose:
        logging.getLogger("py4j.clientserver").setLevel(logging.CRITICAL)
    # librdkafka repeats a connection failure every few milliseconds and clickhouse_connect
    # warns on every retried attempt; streamsift reports both once, in its own words.
    logging.getLogger("streamsift.kafka.librdkafka").setLevel(
        logging.WARNING if verbose else logging.CRITICAL
    )
    logging.getLogger("clickhouse_connect").setLevel(logging.WARNING if verbose else logging.ERROR)
    # urllib3 (under clickhouse_connect) warns on each connection it retries
    logging.getLogger("urllib3").setLevel(logging.WARNING if verbose else logging.ERROR)


class StatusLine:
    """One status line a second on a terminal; a plain log line every few seconds otherwise."""

    def __init__(self, stream: TextIO = sys.stderr, every_s: float = 10.0) -> None:
        self.stream = stream
        self.tty = stream.isatty()
        self.every_s = 1.0 if self.tty else every_s
        self._last = 0.0
        self._last_text = ""

    def __call__(self, stats: RunStats) -> None:
        now = time.monotonic()
        if now - self._last < self.every_s:
            return
        self._last = now
        text = stats.line()
        if self.tty:
            self.stream.write("\r\x1b[2K" + text)
        elif text != self._last_text:
            self.stream.write(time.strftime("%H:%M:%S ") + text + "\n")
        self._last_text = text
        self.stream.flush()

    def close(self) -> None:
        if self.tty and self._last_text:
            self.stream.write("\n")
            self.stream.flush()


def fail(message: str, hint: str | None = None, code: int = 1) -> int:
    print(f"error: {message}", file=sys.stderr)
    if hint:
        print(f"hint: {hint}", file=sys.stderr)
    return code
