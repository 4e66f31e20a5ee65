"""Reading given messages back from Kafka by their position (topic, partition, offset).

Rows travel through Spark with their position only, not their raw message (that would move
every payload through the JVM). When the sink learns, at insert time, that ClickHouse refuses
some rows, their dead letters still need the original messages: they are read back here. They
belong to the micro-batch being written, so Kafka still has them.

The wanted offsets are sorted and grouped per partition into stretches; each stretch is read
from its first to its last offset (offsets in between are read through, cheaper than a seek
when the gap is small), so a partition usually costs one assign.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterable
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition

from streamsift.sources.errors import SourceUnavailable
from streamsift.sources.kafka_range import FETCH_CHUNK, FETCH_DEFAULTS
from streamsift.sources.kafka_spec import KafkaReadSpec

# Offsets further apart than this are two stretches (a new assign) rather than read through.
MAX_GAP = 10_000

Position = tuple[str, int, int]  # topic, partition, offset


@dataclass(frozen=True)
class Message:
    """One message as Kafka holds it."""

    key: bytes | None
    value: bytes | None
    timestamp_ms: int


@dataclass(frozen=True)
class Stretch:
    """Offsets `first..last` (inclusive) of one partition, read in one go for `wanted`."""

    topic: str
    partition: int
    first: int
    last: int
    wanted: frozenset[int]


def read_plan(positions: Iterable[Position], max_gap: int = MAX_GAP) -> list[Stretch]:
    """The stretches that cover `positions`: per partition in offset order, a new stretch
    wherever the next wanted offset lies more than `max_gap` past the previous one."""
    by_partition: dict[tuple[str, int], set[int]] = {}
    for topic, partition, offset in positions:
        by_partition.setdefault((topic, partition), set()).add(offset)
    plan: list[Stretch] = []
    for (topic, partition), offsets in sorted(by_partition.items()):
        run: list[int] = []
        for offset in sorted(offsets):
            if run and offset - run[-1] > max_gap:
                plan.append(Stretch(topic, partition, run[0], run[-1], frozenset(run)))
                run = []
            run.append(offset)
        plan.append(Stretch(topic, partition, run[0], run[-1], frozenset(run)))
    return plan


def fetch_messages(
    spec: KafkaReadSpec, positions: Iterable[Position]
) -> dict[Position, Message | None]:
    """The messages at `positions`; None for one Kafka no longer holds (compacted or past
    retention). Raises SourceUnavailable when Kafka does not answer within the source's
    connect timeout: the caller fails the batch rather than write a dead letter without its
    message, and the re-run batch reads them again."""
    plan = read_plan(positions)
    found: dict[Position, Message | None] = {}
    if not plan:
        return found
    consumer = Consumer({**FETCH_DEFAULTS, **spec.consumer_config()})
    try:
        for stretch in plan:
            got = _read_stretch(consumer, spec, stretch)
            for offset in stretch.wanted:
                found[(stretch.topic, stretch.partition, offset)] = got.get(offset)
    finally:
        with contextlib.suppress(KafkaException, RuntimeError):
            consumer.close()
    return found


def _read_stretch(consumer: Consumer, spec: KafkaReadSpec, stretch: Stretch) -> dict[int, Message]:
    """Consume `stretch.first..stretch.last` of one partition, keeping the wanted offsets."""
    where = f"{stretch.topic}/{stretch.partition}"
    consumer.assign([TopicPartition(stretch.topic, stretch.partition, stretch.first)])
    got: dict[int, Message] = {}
    at = stretch.first  # the next offset not seen yet
    patience = max(spec.metadata_timeout_s, 1.0)
    deadline = time.monotonic() + patience
    try:
        while at <= stretch.last:
            msgs = consumer.consume(min(stretch.last - at + 1, FETCH_CHUNK), 0.5)
            for msg in msgs:
                err = msg.error()
                if err is None:
                    offset = msg.offset()
                    if offset >= at:  # offsets past a gap (compaction) are simply not there
                        if offset in stretch.wanted:
                            key, value = msg.key(), msg.value()
                            got[offset] = Message(key, value, msg.timestamp()[1])
                        at = offset + 1
                elif err.code() == KafkaError.OFFSET_OUT_OF_RANGE:
                    return got  # deleted (retention): the rest of the stretch is gone
                elif err.code() == KafkaError._PARTITION_EOF:
                    # the end is past the stretch: what was not seen is not there. (A broker
                    # may report an end short of the truth: below the stretch, keep reading.)
                    if msg.offset() > stretch.last:
                        return got
                elif not err.retriable():
                    raise SourceUnavailable(f"reading back {where}: {err.str()}")
            if msgs:
                deadline = time.monotonic() + patience
            elif time.monotonic() > deadline:
                raise SourceUnavailable(
                    f"Kafka at {spec.bootstrap_servers} did not answer within {patience:.0f}s "
                    f"while reading back refused rows' messages from {where} "
                    f"(offsets {stretch.first}..{stretch.last}); the batch will be re-run"
                )
    finally:
        consumer.unassign()
    return got
