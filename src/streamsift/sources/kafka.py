"""Kafka as a PySpark streaming data source, built on confluent-kafka.

Offsets live in Spark's checkpoint as `{"topic/partition": next_offset}`; committing them to
the consumer group is only for lag monitoring. Each Kafka partition is one Spark input
partition, so records of a partition are processed in offset order by one task.

The driver side lives here: the topic's partitions and their ends, the micro-batch's ranges.
What to read and how to connect (the read spec) is kafka_spec.py; reading a range on an
executor is kafka_range.py. The source fetches raw messages; turning them into rows is the
job of a `RecordProcessor` handed in by the engine, which keeps sources free of parsing and
dedup logic.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from typing import Any, Protocol

import pyarrow as pa
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition
from pyspark import cloudpickle
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxRows,
    SupportsTriggerAvailableNow,
)

from streamsift.sources.end_watch import EndWatcher, beyond
from streamsift.sources.errors import SourceError, SourceUnavailable
from streamsift.sources.kafka_auth import AuthRefusals, describe_security
from streamsift.sources.kafka_range import KafkaPartitionRange, KafkaRecords, fetch_range
from streamsift.sources.kafka_spec import KafkaReadSpec, make_consumer
from streamsift.spark_host.python_heap import freeze_heap

END_PROBE_BUDGET_S = 0.2
EARLIEST, LATEST = -2, -1  # ListOffsets' timestamps for a partition's first and next offset
PARTITIONS_REFRESH_S = 10.0  # how often the background end probe re-lists the partitions
# While no watermark moves, the background probe reads to end-of-partition this often only
# (a broker whose watermark lags the data shows the data this late at most)
QUIET_REREAD_S = 2.0
# Metadata answers about a topic that no retry will change.
TOPIC_REFUSED = frozenset(
    {
        KafkaError.UNKNOWN_TOPIC_OR_PART,
        KafkaError.TOPIC_EXCEPTION,
        KafkaError.TOPIC_AUTHORIZATION_FAILED,
    }
)
log = logging.getLogger("streamsift.kafka")


class RecordProcessor(Protocol):
    """Turns raw messages into rows matching `schema`; picklable, runs on executors."""

    schema: pa.Schema

    def spark_schema(self) -> str: ...

    def process(self, records: KafkaRecords) -> Iterator[pa.RecordBatch]: ...


def offset_key(topic: str, partition: int) -> str:
    return f"{topic}/{partition}"


def parse_offset_key(key: str) -> tuple[str, int]:
    topic, _, partition = key.rpartition("/")
    return topic, int(partition)


def sorted_offsets(offsets: dict[str, int]) -> dict[str, int]:
    """Spark compares offsets as JSON text: keep the key order canonical."""
    return {k: int(offsets[k]) for k in sorted(offsets, key=lambda k: parse_offset_key(k))}


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans micro-batches on the driver and reads partition ranges on executors.

    The driver-side instance lives for the whole query: it keeps one consumer for finding the
    end of each partition and the availableNow target, shared with the background end probe
    (a consumer costs threads, buffers and idle wake-ups; a pipeline host runs one source
    runner per pipeline). `read()` runs on a fresh copy on an executor, so nothing here
    connects in the constructor.
    """

    def __init__(self, spec: KafkaReadSpec, processor: RecordProcessor | PackedProcessor) -> None:
        self.spec = spec
        self.processor = processor
        self._probe: Consumer | None = None
        self._refusals = AuthRefusals()
        self._target: dict[str, int] | None = None
        self._known_ends: dict[str, int] = {}
        self._latest: dict[str, int] | None = None
        self._watcher: EndWatcher | None = None
        self._probing = threading.Lock()  # one read to end-of-partition at a time

    # ------------------------------------------------------------------ driver side

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_probe"] = None
        state["_watcher"] = None
        state["_probing"] = None
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._probing = threading.Lock()

    def _consumer(self) -> Consumer:
        if self._probe is None:
            self._refusals = AuthRefusals()
            self._probe = make_consumer(self.spec, error_cb=self._refusals)
        return self._probe

    def _check_refused(self) -> None:
        """A broker that refuses our authentication or TLS will not change its mind: say so
        now, naming the security setting, instead of waiting out the connect timeout."""
        if self._probe is None:
            return
        with self._probing:  # a poll during the background probe's read could take its events
            self._probe.poll(0)  # serves the error callback
        reason = self._refusals.reason
        if reason is not None:
            raise SourceError(
                f"Kafka at {self.spec.bootstrap_servers} refused the connection (reading topic "
                f"'{self.spec.topic}') with {describe_security(self.spec.properties)}: {reason}; "
                "check source.security against the broker's listener"
            )

    def _patience(self, running: bool) -> tuple[float, str]:
        """How long to wait for the broker, and the setting that says so: the connect timeout
        at start-up, the read timeout once the query runs (a slow broker is waited for)."""
        if running:
            return self.spec.read_timeout_s, "source.read_timeout"
        return self.spec.metadata_timeout_s, "source.connect_timeout"

    def _partitions(self, running: bool = False) -> list[int]:
        """The topic's partitions, waiting up to the connect (or, running, the read) timeout
        for the broker to answer.

        A broker that answers that the topic is unknown or invalid is believed at once: waiting
        would not change its answer (streamsift does not create topics).
        """
        patience, setting = self._patience(running)
        started = time.monotonic()
        deadline = started + patience
        last_error: Exception | None = None
        while time.monotonic() < deadline:
            try:
                md = self._consumer().list_topics(self.spec.topic, timeout=5)
            except KafkaException as exc:
                self._check_refused()
                last_error = exc
                time.sleep(0.5)
                continue
            topic = md.topics.get(self.spec.topic)
            if topic is not None and topic.error is None and topic.partitions:
                return sorted(topic.partitions)
            if topic is not None and topic.error is not None:
                if topic.error.code() in TOPIC_REFUSED:
                    raise self._refused(topic.error)
                last_error = KafkaException(topic.error)
            time.sleep(0.5)
        raise SourceUnavailable(
            f"Kafka at {self.spec.bootstrap_servers} did not answer for topic "
            f"'{self.spec.topic}' within {time.monotonic() - started:.0f}s ({setting} "
            f"{patience:.0f}s; {describe_security(self.spec.properties)}): "
            f"{last_error or 'no metadata for the topic'}"
        )

    def _refused(self, error: KafkaError) -> SourceError:
        """The broker's answer about a topic it will not serve, in its words."""
        what = (
            "does not exist"
            if error.code() == KafkaError.UNKNOWN_TOPIC_OR_PART
            else "is not a valid topic name"
            if error.code() == KafkaError.TOPIC_EXCEPTION
            else "is refused"
        )
        return SourceError(
            f"topic '{self.spec.topic}' {what} on {self.spec.bootstrap_servers} (the broker "
            f"answered {error.name()}: {error.str().removeprefix('Broker: ')}); check "
            "source.topic, or create the topic"
        )

    def _watermarks(self, consumer: Consumer, partitions: list[int]) -> dict[int, tuple[int, int]]:
        """Each partition's (low, high) watermark, as the broker reports it: two requests for
        all partitions (a watermark request per partition cost an idle pipeline's probe one
        round trip per partition, twice a second)."""
        lows = self._offsets_at(consumer, partitions, EARLIEST)
        highs = self._offsets_at(consumer, partitions, LATEST)
        return {p: (lows[p], highs[p]) for p in partitions}

    def _offsets_at(self, consumer: Consumer, partitions: list[int], at: int) -> dict[int, int]:
        """Each partition's earliest or latest offset, in one ListOffsets request."""
        asked = [TopicPartition(self.spec.topic, p, at) for p in partitions]
        answer = consumer.offsets_for_times(asked, timeout=10)
        for tp in answer:
            if tp.error is not None:
                raise KafkaException(tp.error)
        return {tp.partition: tp.offset for tp in answer}

    def _probe_ends(
        self,
        consumer: Consumer,
        partitions: list[int],
        watermarks: dict[int, tuple[int, int]] | None = None,
    ) -> dict[str, int]:
        """The offset after the last message of each partition, found by reading to
        end-of-partition (all partitions at once, so one fetch round answers for all).

        Brokers may under-report the high watermark (the bundled test broker does), so the
        watermark is only a hint where to start looking. `watermarks`: as just asked.
        """
        with self._probing:  # the planner and the background probe share the consumer
            return self._read_to_ends(consumer, partitions, watermarks)

    def _read_to_ends(
        self,
        consumer: Consumer,
        partitions: list[int],
        watermarks: dict[int, tuple[int, int]] | None,
    ) -> dict[str, int]:
        topic = self.spec.topic
        starts: dict[int, int] = {}
        if watermarks is None:
            watermarks = self._watermarks(consumer, partitions)
        for p in partitions:
            low, high = watermarks[p]
            starts[p] = max(high - 1, self._known_ends.get(offset_key(topic, p), 0), low, 0)
        consumer.assign([TopicPartition(topic, p, starts[p]) for p in partitions])
        ends = dict(starts)
        pending = set(partitions)
        started = time.monotonic()
        limit = self.spec.read_timeout_s
        try:
            while pending and time.monotonic() - started < limit:
                for msg in consumer.consume(10_000, 0.05):
                    p, err = msg.partition(), msg.error()
                    if p not in ends:  # a client-level error
                        if err is not None and not err.retriable():
                            raise SourceUnavailable(f"reading {topic}: {err.str()}")
                    elif err is None:
                        ends[p] = max(ends[p], msg.offset() + 1)
                    elif err.code() == KafkaError._PARTITION_EOF:
                        ends[p] = max(ends[p], msg.offset())
                        pending.discard(p)
                    elif err.code() == KafkaError.OFFSET_OUT_OF_RANGE:
                        ends[p] = max(watermarks[p])
                        pending.discard(p)
                    elif not err.retriable():
                        raise SourceUnavailable(f"reading {topic}/{p}: {err.str()}")
                # While producers keep writing, the end keeps moving: any offset seen is a
                # valid end, so stop after a short budget instead of chasing it.
                if time.monotonic() - started > END_PROBE_BUDGET_S:
                    pending = {p for p in pending if ends[p] <= starts[p]}
        finally:
            consumer.unassign()
        if pending:
            waited = time.monotonic() - started
            raise SourceUnavailable(
                f"Kafka at {self.spec.bootstrap_servers} did not answer: no end-of-partition"
                f" signal from {offset_key(topic, min(pending))} ({len(pending)} of "
                f"{len(partitions)} partitions pending) after waiting {waited:.0f}s "
                f"(source.read_timeout {limit:.0f}s; is the broker up?)"
            )
        found = {offset_key(topic, p): end for p, end in ends.items()}
        for key, end in found.items():  # a slower concurrent probe must not move it back
            self._known_ends[key] = max(end, self._known_ends.get(key, 0))
        return sorted_offsets(found)

    def _current_ends(self, running: bool = False) -> dict[str, int]:
        """End offsets of every partition, waiting up to the connect (or, running, the read)
        timeout for the broker."""
        patience, setting = self._patience(running)
        started = time.monotonic()
        deadline = started + patience
        delay = 0.5
        while True:
            try:
                return self._probe_ends(self._consumer(), self._partitions(running))
            except (KafkaException, SourceUnavailable) as exc:
                if time.monotonic() + delay > deadline:
                    if isinstance(exc, SourceUnavailable):
                        raise
                    raise SourceUnavailable(
                        f"Kafka at {self.spec.bootstrap_servers} did not answer for topic "
                        f"'{self.spec.topic}' within {time.monotonic() - started:.0f}s "
                        f"({setting} {patience:.0f}s): {exc}"
                    ) from None
                log.warning("Kafka unavailable (%s); retrying", exc)
                time.sleep(delay)
                delay = min(delay * 2, 5.0)

    def _live_ends(self) -> dict[str, int]:
        """The ends for a live micro-batch: the background probe's latest answer when it is
        fresh, else probed now (and the background probe started)."""
        watched = self._watcher.ends() if self._watcher is not None else None
        if watched is not None:
            return watched
        ends = self._current_ends(running=True)
        if self._watcher is None:
            self._watcher = self._watch_ends(self._partitions(running=True))
        return ends

    def _watch_ends(self, partitions: list[int]) -> EndWatcher:
        """Probe the ends in the background (on the planner's consumer)."""
        consumer = self._consumer()
        listed = [time.monotonic(), partitions]
        last: dict[str, Any] = {"highs": None, "ends": None, "read_at": 0.0}

        def probe() -> dict[str, int]:
            """The ends; while no high watermark moves, the last ones read to end-of-partition,
            read again only every QUIET_REREAD_S (an idle pipeline's probe then costs one
            ListOffsets request, not a fetch round)."""
            if time.monotonic() - listed[0] > PARTITIONS_REFRESH_S:
                topic = consumer.list_topics(self.spec.topic, timeout=5).topics.get(self.spec.topic)
                if topic is not None and topic.error is None and topic.partitions:
                    listed[:] = [time.monotonic(), sorted(topic.partitions)]
            highs = self._offsets_at(consumer, listed[1], LATEST)
            now = time.monotonic()
            if highs == last["highs"] and now - last["read_at"] < QUIET_REREAD_S:
                return dict(last["ends"])
            lows = self._offsets_at(consumer, listed[1], EARLIEST)  # the highs are just asked
            marks = {p: (lows[p], highs[p]) for p in listed[1]}
            ends = self._probe_ends(consumer, listed[1], marks)
            last.update(highs=highs, ends=ends, read_at=now)
            return ends

        return EndWatcher(probe, lambda: None)  # the consumer is closed by stop()

    def initialOffset(self) -> dict[str, int]:
        if self.spec.start_from == "latest":
            return self._current_ends()
        lows = self._offsets_at(self._consumer(), self._partitions(), EARLIEST)
        return sorted_offsets({offset_key(self.spec.topic, p): max(o, 0) for p, o in lows.items()})

    def prepareForTriggerAvailableNow(self) -> None:
        self._target = self._current_ends()

    def getDefaultReadLimit(self) -> ReadLimit:
        if self.spec.max_rows_per_batch:
            return ReadMaxRows(self.spec.max_rows_per_batch)
        return ReadAllAvailable()

    def latestOffset(self, start: dict, limit: ReadLimit) -> dict[str, int]:
        ends = dict(self._target) if self._target is not None else self._live_ends()
        watcher = self._watcher if self._target is None else None
        if watcher is not None and self.spec.idle_wait_s > 0 and not beyond(ends, start):
            ends = watcher.wait_beyond(start, self.spec.idle_wait_s, self._woken) or ends
        for key, value in start.items():  # never move backwards, e.g. after a topic was re-created
            ends[key] = max(ends.get(key, value), int(value))
        self._latest = sorted_offsets(ends)
        if isinstance(limit, ReadMaxRows):
            ends = _cap(start, ends, limit.max_rows)
        return sorted_offsets(ends)

    def _woken(self) -> bool:
        """Was the run asked to stop (its idle wait then ends at once)?"""
        return self.spec.wake_file is not None and os.path.exists(self.spec.wake_file)

    def reportLatestOffset(self) -> dict[str, int] | None:
        return self._latest

    def partitions(self, start: dict, end: dict) -> Sequence[InputPartition]:
        ranges = []
        for key, stop in end.items():
            topic, partition = parse_offset_key(key)
            begin = int(start.get(key, 0))
            if int(stop) > begin:
                ranges.append(KafkaPartitionRange(topic, partition, begin, int(stop)))
        return ranges

    def commit(self, end: dict) -> None:
        """Record progress in the consumer group so lag tools see it (not used for recovery)."""
        # Best effort: the checkpoint, not the group, is the source of truth.
        with contextlib.suppress(KafkaException):
            self._consumer().commit(
                offsets=[TopicPartition(*parse_offset_key(k), int(v)) for k, v in end.items()],
                asynchronous=True,
            )

    def stop(self) -> None:
        if self._watcher is not None:
            self._watcher.stop()
            self._watcher = None
        if self._probe is not None:
            self._probe.close()
            self._probe = None

    # ------------------------------------------------------------------ executor side

    def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
        assert isinstance(partition, KafkaPartitionRange)
        freeze_heap()
        records = fetch_range(self.spec, partition)
        processor = self.processor
        if isinstance(processor, PackedProcessor):
            processor = processor.unpack()
        yield from processor.process(records)


def _cap(start: dict, ends: dict[str, int], max_rows: int) -> dict[str, int]:
    """Admit at most `max_rows` messages, shared fairly across partitions."""
    backlog = {k: max(0, ends[k] - int(start.get(k, ends[k]))) for k in ends}
    total = sum(backlog.values())
    if total <= max_rows:
        return ends
    capped = {}
    remaining = max_rows
    keys = sorted(backlog, key=lambda k: backlog[k])
    for i, k in enumerate(keys):
        share = min(backlog[k], remaining // (len(keys) - i))
        capped[k] = int(start.get(k, ends[k])) + share
        remaining -= share
    return capped


class PackedProcessor:
    """A RecordProcessor carried as its pickle, unpickled where records are processed.

    Spark plans a Python source's micro-batches in a process of its own (one per query), which
    never processes a record: unpickling the processor there imported parsing and dedup state
    (tens of MB per process; a pipeline host keeps one per pipeline)."""

    def __init__(self, processor: RecordProcessor) -> None:
        self._pickle = cloudpickle.dumps(processor)
        self._processor: RecordProcessor | None = None

    def unpack(self) -> RecordProcessor:
        if self._processor is None:
            self._processor = cloudpickle.loads(self._pickle)
        return self._processor

    def __getstate__(self) -> dict[str, Any]:
        return {"_pickle": self._pickle, "_processor": None}


def make_data_source(
    name: str, spec: KafkaReadSpec, processor: RecordProcessor
) -> type[DataSource]:
    """A DataSource class bound to one pipeline's source; register it with `spark.dataSource`.

    The class is built at run time so that Spark pickles the spec and the processor with it,
    instead of passing them (and any secret) as string options that show up in query plans.
    """

    packed = PackedProcessor(processor)

    class BoundKafkaSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return name

        def schema(self) -> str:
            return packed.unpack().spark_schema()

        def streamReader(self, schema: Any) -> DataSourceStreamReader:
            return KafkaStreamReader(spec, packed)

    BoundKafkaSource.__name__ = BoundKafkaSource.__qualname__ = f"KafkaSource_{name}"
    return BoundKafkaSource
