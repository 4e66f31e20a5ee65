"""One partition's offset range [start, end), read on an executor.

Spark's task for an input partition reads exactly the range's messages. Python workers are
reused between tasks, so each keeps its consumers (unassigned) for the next range of the same
partition instead of connecting and fetching metadata again; a consumer that stops receiving
in the middle of a range is replaced once.
"""

from __future__ import annotations

import atexit
import contextlib
import logging
import time
from dataclasses import dataclass
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from pyspark.sql.datasource import InputPartition

from streamsift.sources.errors import SourceUnavailable
from streamsift.sources.kafka_spec import KafkaReadSpec

FETCH_CHUNK = 50_000
# A consumer that gets nothing for this long while the range's messages exist is replaced by
# a fresh one once, before the range fails after `source.read_timeout` without data.
STALL_REFRESH_S = 5.0
log = logging.getLogger("streamsift.kafka")


@dataclass(frozen=True)
class KafkaRecords:
    """The raw messages of one partition's offset range [start, end), in offset order."""

    topic: str
    partition: int
    start: int
    end: int
    offsets: list[int]
    timestamps_ms: list[int]
    keys: list[bytes | None]
    values: list[bytes | None]


@dataclass(frozen=True)
class KafkaPartitionRange(InputPartition):
    topic: str
    partition: int
    start: int
    end: int


# Fetch settings for reading ranges: large fetches (a 1 KB event is ~1,000 per default 1 MB
# fetch), and a bounded queue per partition. A pipeline's `properties` override them.
FETCH_DEFAULTS: dict[str, Any] = {
    "fetch.wait.max.ms": 100,
    "max.partition.fetch.bytes": 8 << 20,
    "queued.max.messages.kbytes": 8 << 10,
    # librdkafka postpones the next fetch by this much whenever its queue is over the limit
    # above, which one fetch response can fill: 1 s by default, a second of nothing in the
    # middle of a range. A range's reader empties the queue as it goes, so look again soon.
    "fetch.queue.backoff.ms": 10,
}


class _KeptConsumers:
    """One consumer per (source, partition) kept in a Python worker between tasks.

    Spark reuses its Python workers, so a kept consumer saves connecting and fetching
    metadata for each micro-batch. Between tasks it is unassigned: a consumer left assigned
    keeps polling the end of its partition, and on the bundled broker, whose cost per fetch
    grows with the partition's length, those polls from every worker stalled 10-minute
    soaks (docs/benchmarks.md). Consumers idle for `IDLE_S` or beyond the `MAX_KEPT` most
    recent are closed.
    """

    IDLE_S = 60.0
    MAX_KEPT = 32

    def __init__(self) -> None:
        self._kept: dict[tuple[str, str, int], tuple[Consumer, float]] = {}

    def take(self, spec: KafkaReadSpec, part: KafkaPartitionRange) -> Consumer:
        self._expire()
        kept = self._kept.pop((spec.identity(), part.topic, part.partition), None)
        if kept is not None:
            consumer = kept[0]
            consumer.assign([TopicPartition(part.topic, part.partition, part.start)])
            return consumer
        return new_fetch_consumer(spec, part.topic, part.partition, part.start)

    def give_back(self, spec: KafkaReadSpec, part: KafkaPartitionRange, consumer: Consumer) -> None:
        consumer.unassign()
        self._kept[(spec.identity(), part.topic, part.partition)] = (consumer, time.monotonic())

    def _expire(self) -> None:
        now = time.monotonic()
        by_age = sorted(self._kept.items(), key=lambda kv: kv[1][1], reverse=True)
        for i, (key, (consumer, used_at)) in enumerate(by_age):
            if i >= self.MAX_KEPT or now - used_at > self.IDLE_S:
                del self._kept[key]
                _close(consumer)

    def close_all(self) -> None:
        for consumer, _ in self._kept.values():
            _close(consumer)
        self._kept.clear()


def new_fetch_consumer(spec: KafkaReadSpec, topic: str, partition: int, offset: int) -> Consumer:
    consumer = Consumer({**FETCH_DEFAULTS, **spec.consumer_config()})
    consumer.assign([TopicPartition(topic, partition, offset)])
    return consumer


def _close(consumer: Consumer) -> None:
    with contextlib.suppress(KafkaException, RuntimeError):
        consumer.close()


_kept_consumers = _KeptConsumers()
atexit.register(_kept_consumers.close_all)


def close_kept_consumers() -> None:
    """Close the consumers this process keeps between tasks (tests, shutdown)."""
    _kept_consumers.close_all()


def fetch_range(spec: KafkaReadSpec, part: KafkaPartitionRange) -> KafkaRecords:
    """Read exactly the messages of [start, end) of one partition."""
    offsets: list[int] = []
    stamps: list[int] = []
    keys: list[bytes | None] = []
    values: list[bytes | None] = []
    consumer = _kept_consumers.take(spec, part)
    eof_at: int | None = None  # where the broker last said the partition ends
    refreshed = False
    try:
        stalled_since: float | None = None
        while True:
            remaining = part.end - part.start - len(offsets)
            if remaining <= 0:
                break
            msgs = consumer.consume(min(remaining, FETCH_CHUNK), 1.0)
            done = False
            for msg in msgs:
                err = msg.error()
                if err is not None:
                    if err.code() == KafkaError._PARTITION_EOF:
                        eof_at = msg.offset()
                        # compacted or transactional topics leave offset gaps
                        done = (
                            msg.offset() >= part.end
                            or bool(offsets)
                            and offsets[-1] >= part.end - 1
                        )
                        continue
                    if err.retriable():
                        continue
                    raise SourceUnavailable(f"reading {part.topic}/{part.partition}: {err.str()}")
                off = msg.offset()
                if off >= part.end:
                    done = True
                    break
                if off < part.start or (offsets and off <= offsets[-1]):
                    continue
                offsets.append(off)
                stamps.append(msg.timestamp()[1])
                keys.append(msg.key())
                values.append(msg.value())
            if done or (offsets and offsets[-1] >= part.end - 1):
                break
            if msgs:
                stalled_since = None
            elif stalled_since is None:
                stalled_since = time.monotonic()
            elif not refreshed and time.monotonic() - stalled_since > STALL_REFRESH_S:
                # seen in 10-minute soaks on the bundled broker: a consumer stopped receiving
                # in the middle of a range; a fresh one got one of two such partitions going
                refreshed = True
                at = offsets[-1] + 1 if offsets else part.start
                log.warning(
                    "no data from %s/%s for %.0fs at offset %d (range %d..%d, broker end %s);"
                    " replacing the consumer",
                    part.topic,
                    part.partition,
                    STALL_REFRESH_S,
                    at,
                    part.start,
                    part.end,
                    eof_at,
                )
                _close(consumer)
                consumer = new_fetch_consumer(spec, part.topic, part.partition, at)
            elif time.monotonic() - stalled_since > max(spec.read_timeout_s, 10):
                got = f"received up to {offsets[-1]}" if offsets else "received none"
                ends = "" if eof_at is None else f", the broker says the partition ends at {eof_at}"
                raise SourceUnavailable(
                    f"Kafka at {spec.bootstrap_servers} did not answer: "
                    f"no data from {part.topic}/{part.partition} for "
                    f"{time.monotonic() - stalled_since:.0f}s (source.read_timeout "
                    f"{spec.read_timeout_s:.0f}s) while reading offsets {part.start}..{part.end} "
                    f"({got}{ends}; is the broker up?)"
                )
    except BaseException:
        _close(consumer)
        raise
    _kept_consumers.give_back(spec, part, consumer)
    return KafkaRecords(
        part.topic, part.partition, part.start, part.end, offsets, stamps, keys, values
    )
