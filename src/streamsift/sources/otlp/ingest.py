"""What the OTLP receiver does with one export request, whatever its transport:

    route (pipeline-id header) -> token -> size -> decode -> backpressure -> produce to the
    pipeline's topic -> wait until Kafka has every record (acks=all, idempotent) -> ack

A request is acknowledged only once all its records are durable in the pipeline's topic, so
an acknowledged record is never lost: the pipeline reads the topic with its checkpoint, and
exactly-once and the DLQ hold from there. When the pipeline lags more than `max_lag`
records, or the producer's queue is full, the request is refused as busy (HTTP 429, gRPC
RESOURCE_EXHAUSTED) before anything is produced; OTel exporters retry those.
"""

from __future__ import annotations

import hmac
import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition

from streamsift.config.otlp import OtlpSignal
from streamsift.errors import ConfigurationError, TransientError
from streamsift.sources.otlp.decode import Record, parse_json, parse_protobuf, records

PIPELINE_HEADERS = ("x-glassflow-pipeline-id", "x-streamsift-pipeline-id")
DELIVERY_TIMEOUT_S = 30.0
LAG_CACHE_S = 0.5


class Rejected(Exception):
    """A request refused; `status` is the HTTP status (transports map it to gRPC codes)."""

    status = 400


class Unauthorized(Rejected, ConfigurationError):
    status = 401


class UnknownPipeline(Rejected, ConfigurationError):
    status = 404


class TooLarge(Rejected, ConfigurationError):
    status = 413


class Busy(Rejected, TransientError):
    """The pipeline or Kafka cannot keep up: retry later (nothing of the request was kept)."""

    status = 429


class NotDurable(Rejected, TransientError):
    """Kafka did not confirm every record; the exporter retries (records it did confirm may
    then arrive twice: at-least-once at the edge, as OTLP itself is)."""

    status = 503


class DurableProducer:
    """A Kafka producer with acks=all and idempotence whose `send` returns only once Kafka
    has confirmed every message, or raises."""

    def __init__(self, bootstrap_servers: str, props: dict[str, str], max_queued: int) -> None:
        self.max_queued = max_queued
        self._producer = Producer(
            {
                **props,
                "bootstrap.servers": bootstrap_servers,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 5,
                # librdkafka's own queue is larger than ours: `send` refuses first, before
                # producing anything, so a refused request left nothing behind.
                "queue.buffering.max.messages": max(2 * max_queued, 1000),
                "message.timeout.ms": int(DELIVERY_TIMEOUT_S * 1000),
            }
        )
        self._ends: dict[tuple[str, int], int] = {}
        self._stop = threading.Event()
        self._poller = threading.Thread(target=self._poll, name="otlp-producer", daemon=True)
        self._poller.start()

    def _poll(self) -> None:
        while not self._stop.is_set():
            self._producer.poll(0.05)

    def send(self, topic: str, messages: Sequence[tuple[bytes | None, bytes]]) -> None:
        if not messages:
            return
        if len(self._producer) + len(messages) > self.max_queued:
            raise Busy(f"the producer holds {len(self._producer):,} records not yet in Kafka")
        done = threading.Event()
        pending = [len(messages)]
        errors: list[str] = []
        lock = threading.Lock()

        def delivered(err: KafkaError | None, msg: Any) -> None:
            with lock:
                if err is not None:
                    errors.append(err.str())
                else:
                    where = (msg.topic(), msg.partition())
                    self._ends[where] = max(self._ends.get(where, 0), msg.offset() + 1)
                pending[0] -= 1
                if pending[0] == 0:
                    done.set()

        for i, (key, value) in enumerate(messages):
            try:
                self._producer.produce(topic, value=value, key=key, on_delivery=delivered)
            except BufferError:
                with lock:  # the rest will never be reported
                    pending[0] -= len(messages) - i
                    errors.append("the producer queue is full")
                    if pending[0] == 0:
                        done.set()
                break
            except KafkaException as exc:
                with lock:
                    pending[0] -= len(messages) - i
                    errors.append(str(exc))
                    if pending[0] == 0:
                        done.set()
                break
        if not done.wait(DELIVERY_TIMEOUT_S + 5):
            raise NotDurable(f"Kafka did not confirm the records within {DELIVERY_TIMEOUT_S:.0f} s")
        if errors:
            raise NotDurable(f"Kafka refused {len(errors)} record(s): {errors[0]}")

    def ends(self, topic: str) -> dict[int, int]:
        """Per partition of `topic`: the offset after the last record confirmed to us."""
        return {p: end for (t, p), end in list(self._ends.items()) if t == topic}

    def close(self) -> None:
        self._producer.flush(DELIVERY_TIMEOUT_S)
        self._stop.set()
        self._poller.join(5)
        if len(self._producer) == 0:  # (close would wait for what a dead broker never takes)
            self._producer.close()  # else librdkafka keeps reconnecting until collected


class LagProbe:
    """Records in a topic the pipeline has not yet committed (cached briefly).

    The end of each partition is the larger of the broker's high watermark and the last
    offset this receiver's producer saw confirmed (tansu's watermark under-reports);
    `committed` gives the pipeline's next offset per partition from its checkpoint (Spark's
    commit log: the source of truth, where consumer-group commits are best effort)."""

    def __init__(
        self,
        bootstrap_servers: str,
        props: dict[str, str],
        topic: str,
        producer: DurableProducer,
        committed: Callable[[], dict[int, int]],
    ) -> None:
        self.topic = topic
        self.producer = producer
        self.committed = committed
        self._consumer = Consumer(
            {
                **props,
                "bootstrap.servers": bootstrap_servers,
                "group.id": f"streamsift-otlp-probe-{topic}",
                "enable.auto.commit": False,
            }
        )
        self._lock = threading.Lock()
        self._at = 0.0
        self._lag = 0

    def lag(self) -> int:
        with self._lock:
            if time.monotonic() - self._at > LAG_CACHE_S:
                self._lag = self._measure()
                self._at = time.monotonic()
            return self._lag

    def _measure(self) -> int:
        meta = self._consumer.list_topics(self.topic, timeout=5)
        info = meta.topics.get(self.topic)
        if info is None or info.error is not None:
            return 0  # not created yet: nothing waits
        ends = self.producer.ends(self.topic)
        done = self.committed()
        total = 0
        for p in info.partitions:
            _low, high = self._consumer.get_watermark_offsets(
                TopicPartition(self.topic, p), timeout=5
            )
            total += max(0, max(high, ends.get(p, 0)) - done.get(p, 0))
        return total

    def close(self) -> None:
        self._consumer.close()


@dataclass
class Route:
    """Where one pipeline's OTLP records go, and when to push back."""

    pipeline_id: str
    signal: OtlpSignal
    topic: str
    producer: DurableProducer
    max_request_bytes: int
    max_lag: int | None = None
    lag: Callable[[], int] | None = None
    token: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def message_key(signal: OtlpSignal, record: Record) -> bytes | None:
    """The same record sent twice (an exporter's retry) lands in the same partition, where
    dedup sees both: spans by trace id, logs by trace id or time, metrics by name."""
    if signal is OtlpSignal.METRICS:
        key = record.get("metric_name")
    else:
        key = record.get("trace_id") or record.get("timestamp")
    return key.encode() if key else None


class Ingest:
    """The routes of the running pipelines and the handling of one request."""

    def __init__(self, token: str | None = None) -> None:
        self.token = token
        self._routes: dict[str, Route] = {}
        self._lock = threading.Lock()

    def add(self, route: Route) -> None:
        with self._lock:
            self._routes[route.pipeline_id] = route

    def remove(self, pipeline_id: str) -> Route | None:
        with self._lock:
            return self._routes.pop(pipeline_id, None)

    def routes(self) -> list[Route]:
        with self._lock:
            return list(self._routes.values())

    def route(self, headers: dict[str, str], signal: OtlpSignal) -> Route:
        """The route a request names (a header, case-insensitive); with no header, the only
        route of that signal when there is exactly one (a `streamsift run` receiver)."""
        wanted = next((headers[h] for h in PIPELINE_HEADERS if headers.get(h)), None)
        with self._lock:
            if wanted is None:
                of_signal = [r for r in self._routes.values() if r.signal is signal]
                if len(of_signal) == 1:
                    return of_signal[0]
                raise UnknownPipeline(
                    f"name the pipeline in the {PIPELINE_HEADERS[0]} header "
                    f"(or {PIPELINE_HEADERS[1]})"
                )
            route = self._routes.get(wanted.strip())
        if route is None:
            raise UnknownPipeline(
                f"no running OTLP pipeline {wanted.strip()[:100]!r} receives here"
            )
        if route.signal is not signal:
            raise UnknownPipeline(
                f"pipeline {route.pipeline_id!r} receives {route.signal.value}, not "
                f"{signal.value}: send to /v1/{route.signal.short}"
            )
        return route

    def check_token(self, route: Route, authorization: str | None) -> None:
        expected = route.token or self.token
        if not expected:
            return
        scheme, _, given = (authorization or "").strip().partition(" ")
        if scheme.lower() != "bearer" or not hmac.compare_digest(
            given.strip().encode(), expected.encode()
        ):
            raise Unauthorized("a valid 'Authorization: Bearer TOKEN' header is required")

    def export(
        self,
        signal: OtlpSignal,
        headers: dict[str, str],
        body: bytes,
        json_body: bool = False,
    ) -> int:
        """Handle one export request; returns the number of records made durable."""
        headers = {k.lower(): v for k, v in headers.items()}
        route = self.route(headers, signal)
        self.check_token(route, headers.get("authorization"))
        if len(body) > route.max_request_bytes:
            raise TooLarge(
                f"the request has {len(body):,} bytes, more than the "
                f"{route.max_request_bytes:,} allowed"
            )
        request = parse_json(signal, body) if json_body else parse_protobuf(signal, body)
        flat = records(signal, request)
        if not flat:
            return 0
        if route.max_lag is not None and route.lag is not None:
            lag = route.lag()
            if lag > route.max_lag:
                raise Busy(
                    f"pipeline {route.pipeline_id!r} is {lag:,} records behind "
                    f"(max_lag {route.max_lag:,})"
                )
        messages = [
            (message_key(signal, r), json.dumps(r, separators=(",", ":")).encode()) for r in flat
        ]
        route.producer.send(route.topic, messages)
        return len(flat)
