"""The driver's watch on ClickHouse while the executors insert a micro-batch.

Executors retry their inserts out of the driver's sight (engine/write_strategies.py), so while
they insert, the driver pings ClickHouse itself and shows in the run's status when it does not
answer, clearing that once it answers again.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator

from streamsift.sinks.clickhouse import ClickHouseWriter

WATCH_EVERY_S = 2.0  # how often the driver pings ClickHouse while executors insert


@contextlib.contextmanager
def watching_clickhouse(
    writer: ClickHouseWriter,
    where: str,
    set_status: Callable[[str | None], None],
    every_s: float = WATCH_EVERY_S,
) -> Iterator[None]:
    """Ping ClickHouse (at `where`, as described to users) on a thread while the block runs;
    `set_status` gets the outage's text, then None when ClickHouse answers again or the
    block ends."""
    done = threading.Event()
    shown = threading.Event()

    def watch() -> None:
        while not done.wait(every_s):
            answers = writer.answers()
            if done.is_set():
                break
            if not answers:
                set_status(
                    f"ClickHouse at {where} does not answer; the executors are retrying "
                    "their inserts with back-off"
                )
                shown.set()
            elif shown.is_set():
                set_status(None)
                shown.clear()

    watcher = threading.Thread(target=watch, name="clickhouse-watch", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join(15)
        if shown.is_set():
            set_status(None)
