"""The consume/insert loop every hand-written drain shares (raw_naive, raw_join, raw_vec,
nospark): poll, hand each poll's messages to the run, insert once enough rows wait, and keep
the times the rates are computed from (`Drained`).

What differs between the runs is what they do per poll and per insert, passed in as a
`Batching`: `take` (per poll: parse, dedup, join, or just gather), `pending` (rows waiting),
`cut` (the batch to insert, None when there is none) and `write` (insert it, return the rows
written). With `overlap`, `write` runs on a thread of its own, one insert in flight, while the
next polls are fetched (raw_vec); otherwise on the loop's thread, with an offset commit after
each insert when `commit` is set (the naive consumers: at-least-once).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, TopicPartition

from streamsift_bench.common import ProgressLog

INSERT_ROWS = 50_000  # rows gathered before an insert
CONSUME_MESSAGES = 10_000  # messages asked of one consume() call


@dataclass
class Drained:
    """What one pass of a consume loop did, and when."""

    consumed: int = 0
    inserted: int = 0
    inserts: int = 0
    first_at: float | None = None  # wall time of the first poll that returned messages
    done_at: float = 0.0
    # when the first insert finished, and the messages read by then: the end of the "first
    # batch", so a baseline's steady rate leaves out what streamsift's leaves out
    first_insert: tuple[float, int] | None = None

    def wrote(self, rows: int) -> None:
        """One insert of `rows` rows finished."""
        self.inserted += rows
        self.inserts += 1
        if self.first_insert is None:
            self.first_insert = (time.time(), self.consumed)

    def steady_rate(self) -> float | None:
        """Messages read after the first insert finished, over the time after it."""
        if self.first_insert is None:
            return None
        at, read = self.first_insert
        if self.done_at <= at or self.consumed <= read:
            return None
        return round((self.consumed - read) / (self.done_at - at), 1)

    def timings(self, started_wall: float) -> dict[str, Any]:
        """The result's time fields: processing (first message to last insert), wall and
        start-up time from the worker process's start, and the steady rate."""
        first = self.first_at or self.done_at
        return {
            "processing_seconds": round(self.done_at - first, 3),
            "wall_seconds": round(self.done_at - started_wall, 3),
            "startup_seconds": round(first - started_wall, 3),
            "processing_started_at": self.first_at,
            "done_at": self.done_at,
            "after_first_batch_rate": self.steady_rate(),
        }

    def result(self, started_wall: float) -> dict[str, Any]:
        """The counts and times every drain's result starts with."""
        counts = {"read": self.consumed, "written": self.inserted, "inserts": self.inserts}
        return {**counts, **self.timings(started_wall)}


@dataclass(frozen=True)
class Batching:
    """What a run does with each poll's messages and with each batch it inserts."""

    take: Callable[[list[Any]], None]
    pending: Callable[[], int]
    cut: Callable[[], Any]
    write: Callable[[Any], int]


class Inserter:
    """Writes on a thread of its own, one insert in flight: the next fetch overlaps it."""

    def __init__(self, write: Callable[[Any], int], done: Drained) -> None:
        self._write = write
        self._done = done
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-insert")
        self._inflight: Future[None] | None = None

    def submit(self, batch: Any) -> None:
        self.wait()
        self._inflight = self._pool.submit(self._run, batch)

    def _run(self, batch: Any) -> None:
        self._done.wrote(self._write(batch))  # the first one ends the "first batch"

    def wait(self) -> None:
        if self._inflight is not None:
            self._inflight.result()  # an insert's failure ends the run
            self._inflight = None

    def close(self) -> None:
        """Wait for the last insert (its failure raised), then end the thread."""
        try:
            self.wait()
        finally:
            self._pool.shutdown()

    def abandon(self) -> None:
        """End the thread after its insert, leaving that insert's outcome unread (the loop
        already failed)."""
        self._pool.shutdown()


def consumer_from_start(
    spec: dict[str, Any], topics: list[str], settings: dict[str, Any] | None = None
) -> tuple[Consumer, list[tuple[str, int]]]:
    """A consumer assigned every partition of `topics` from offset 0 (with `settings` on top
    of librdkafka's defaults), and the (topic, partition) pairs assigned."""
    consumer = Consumer(
        {
            "fetch.wait.max.ms": 10,
            **(settings or {}),
            "bootstrap.servers": spec["bootstrap_servers"],
            "group.id": f"bench-{spec['name']}",
            "enable.auto.commit": False,
            "enable.partition.eof": False,
            "auto.offset.reset": "earliest",
        }
    )
    assigned = [
        (topic, p)
        for topic in topics
        for p in sorted(consumer.list_topics(topic, timeout=10).topics[topic].partitions)
    ]
    consumer.assign([TopicPartition(t, p, 0) for t, p in assigned])
    return consumer, assigned


def cut_list(pending: list[Any]) -> list[Any] | None:
    """A list-gathering run's `cut`: what waits (then forgotten), None when nothing does."""
    if not pending:
        return None
    batch = list(pending)
    pending.clear()
    return batch


def poll(consumer: Consumer, want: int) -> list[Any]:
    """Up to `want` messages (fewer at the end), errors other than end-of-partition raised."""
    msgs = consumer.consume(num_messages=max(1, min(want, CONSUME_MESSAGES)), timeout=1.0)
    out = []
    for msg in msgs:
        err = msg.error()
        if err is None:
            out.append(msg)
        elif err.code() != KafkaError._PARTITION_EOF:
            raise RuntimeError(f"consume failed: {err.str()}")
    return out


def drain(
    consumer: Consumer,
    total: int,
    progress: ProgressLog,
    batching: Batching,
    *,
    overlap: bool = False,
    commit: bool = False,
    after_poll: Callable[[], None] | None = None,
) -> Drained:
    """Consume until `total` messages were read; closes the consumer.

    After each poll: `take` its messages, `after_poll`, then, once `pending()` rows reach
    INSERT_ROWS or everything was read, `write(cut())` (on the insert thread with `overlap`;
    with `commit`, an offset commit after it). Progress is written after every poll.
    """
    if overlap and commit:
        raise ValueError("an offset commit must wait for its insert: no commit with overlap")
    done = Drained()
    inserter = Inserter(batching.write, done) if overlap else None

    def flush() -> None:
        batch = batching.cut()
        if batch is None:
            return
        if inserter is not None:
            inserter.submit(batch)
            return
        done.wrote(batching.write(batch))
        if commit:
            consumer.commit(asynchronous=True)  # after the insert: at-least-once

    try:
        while done.consumed < total:
            msgs = poll(consumer, total - done.consumed)
            if msgs:
                done.first_at = done.first_at or time.time()
                done.consumed += len(msgs)
                batching.take(msgs)
            if after_poll is not None:
                after_poll()
            if batching.pending() >= INSERT_ROWS or done.consumed >= total:
                flush()
            progress.write(read=done.consumed, written=done.inserted)
        flush()
        if inserter is not None:
            inserter.close()
            inserter = None
        done.done_at = time.time()
    finally:
        if inserter is not None:
            inserter.abandon()
        consumer.close()
    progress.write(read=done.consumed, written=done.inserted)
    return done
