"""A load generator: realistic JSON events at a controlled rate, with ground truth.

Builds on `testing.generator` (same event core: id, type, nested user, tags, amount, attempt,
created_at) and adds what load tests need:

- richer events (session and device objects, page, country) padded to `payload_bytes`;
- a token-bucket rate limit, with the achieved rate measured from delivery reports;
- a `produced_at_ms` field stamped when each message is handed to the producer, so a sink
  can measure end-to-end latency (it is the last field, so stamping is a byte splice);
- duplicates that re-send one of the last `keys` originals (retries come soon after the
  original, as in real streams), and late events (fresh ids whose event time is `late_by`
  behind the stream);
- ground truth that fits in a small JSON file however many events are sent: counts and a
  checksum of the ids a correct dedup pipeline must hold.

The event sequence is a pure function of the seed; only `produced_at_ms` depends on time.
Messages are keyed by `event_id`, so all versions of an id share a partition.
"""

from __future__ import annotations

import json
import random
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from streamsift.testing.generator import BASE_TIME, EventSpec, make_event

# The load generator's events as a pipeline schema and ClickHouse mapping.
LOAD_FIELDS = [
    {"name": "event_id", "type": "string"},
    {"name": "type", "type": "string"},
    {"name": "user.id", "type": "string"},
    {"name": "user.country", "type": "string"},
    {"name": "session.id", "type": "string"},
    {"name": "session.device.os", "type": "string"},
    {"name": "tags", "type": "array"},
    {"name": "amount", "type": "float"},
    {"name": "attempt", "type": "int"},
    {"name": "created_at", "type": "timestamp"},
    {"name": "produced_at_ms", "type": "int"},
]
LOAD_MAPPING = [
    {"field": "event_id", "column": "event_id", "type": "String"},
    {"field": "type", "column": "type", "type": "LowCardinality(String)"},
    {"field": "user.id", "column": "user_id", "type": "String"},
    {"field": "user.country", "column": "country", "type": "LowCardinality(String)"},
    {"field": "session.id", "column": "session_id", "type": "String"},
    {"field": "session.device.os", "column": "os", "type": "LowCardinality(String)"},
    {"field": "tags", "column": "tags", "type": "Array(String)"},
    {"field": "amount", "column": "amount", "type": "Float64"},
    {"field": "attempt", "column": "attempt", "type": "UInt32"},
    {"field": "created_at", "column": "created_at", "type": "DateTime64(3, 'UTC')"},
    {"field": "produced_at_ms", "column": "produced_at_ms", "type": "Int64"},
]
# ClickHouse SQL giving the same number as `LoadTruth.id_checksum` over a table's ids.
ID_CHECKSUM_SQL = "sum(reinterpretAsUInt32(reverse(unhex(substring(event_id, 1, 8)))))"

_COUNTRIES = ["DE", "US", "FR", "IN", "BR", "JP", "GB", "NL", "PL", "ES"]
_OS = ["android", "ios", "windows", "macos", "linux"]
_BROWSERS = ["chrome", "safari", "firefox", "edge"]
_REFERRERS = ["", "https://search.example/", "https://news.example/", "https://mail.example/"]
_STAMP_KEY = b',"produced_at_ms":'


def id_checksum_part(event_id: str) -> int:
    """The id's contribution to the truth checksum: its first 8 hex digits as a number."""
    return int(event_id[:8], 16)


@dataclass(frozen=True)
class LoadSpec:
    """What to generate. `keys` bounds how far back a duplicate may reach (in originals)."""

    duplicates: float = 0.2
    keys: int = 10_000
    late: float = 0.0
    late_by: timedelta = timedelta(hours=2)
    payload_bytes: int = 1024
    seed: int = 7
    step_ms: int = 10  # event time advances this much per original event

    def __post_init__(self) -> None:
        if not 0 <= self.duplicates < 1:
            raise ValueError("duplicates must be a share in [0, 1)")
        if not 0 <= self.late < 1 or self.duplicates + self.late >= 1:
            raise ValueError("late must be a share in [0, 1), and duplicates + late < 1")
        if self.keys < 1:
            raise ValueError("keys must be at least 1")


@dataclass
class LoadTruth:
    """What a correct dedup pipeline must hold after consuming everything that was sent."""

    produced: int = 0
    duplicates: int = 0
    late: int = 0
    expected_unique: int = 0
    id_checksum: int = 0  # sum of id_checksum_part over the expected ids

    def as_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass
class SendReport:
    """One `send` call: how many messages, how fast they went out, how fast Kafka acked."""

    target_rps: float | None
    sent: int
    acked: int
    seconds: float
    started_at: float  # wall clock (time.time()) when the first message was handed over
    ended_at: float
    samples: list[tuple[float, int, int]] = field(default_factory=list)  # (time, sent, acked)

    @property
    def achieved_rps(self) -> float:
        return self.acked / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "target_rps": self.target_rps,
            "sent": self.sent,
            "acked": self.acked,
            "seconds": round(self.seconds, 3),
            "achieved_rps": round(self.achieved_rps, 1),
            "started_at": self.started_at,
            "ended_at": self.ended_at,
        }


class TokenBucket:
    """Hands out up to `rate` tokens a second, with bursts of at most `burst` tokens."""

    def __init__(self, rate: float, burst: float | None = None) -> None:
        if rate <= 0:
            raise ValueError("rate must be positive")
        self.rate = float(rate)
        self.capacity = max(1.0, burst if burst is not None else rate / 50)  # 20 ms of tokens
        self.tokens = 0.0
        self.last = time.monotonic()

    def take(self, wanted: int) -> int:
        """Wait until at least one token is there; take up to `wanted` of them."""
        while True:
            now = time.monotonic()
            self.tokens = min(self.capacity, self.tokens + (now - self.last) * self.rate)
            self.last = now
            if self.tokens >= 1:
                granted = min(wanted, int(self.tokens))
                self.tokens -= granted
                return granted
            time.sleep(min(0.005, (1 - self.tokens) / self.rate))


Prepared = list[tuple[bytes, bytes]]  # (key, value head): value = head + ms digits + b"}"


class LoadGenerator:
    """Produces a reproducible event stream into one topic, in steps of any size and rate."""

    def __init__(
        self,
        spec: LoadSpec,
        bootstrap_servers: str,
        topic: str,
        producer_config: dict[str, Any] | None = None,
    ) -> None:
        self.spec = spec
        self.topic = topic
        self.truth = LoadTruth()
        self._rng = random.Random(spec.seed)
        self._event_spec = EventSpec(step_ms=spec.step_ms, seed=spec.seed)
        self._recent: deque[dict] = deque(maxlen=spec.keys)
        self._originals = 0
        self._sessions: dict[int, int] = {}
        self._acked = 0
        self._failed: list[str] = []
        self._producer_config = {
            "bootstrap.servers": bootstrap_servers,
            "linger.ms": 5,
            "enable.idempotence": True,
            "compression.type": "lz4",
            "batch.num.messages": 10_000,
            "queue.buffering.max.messages": 500_000,
            **(producer_config or {}),
        }
        self._producer_instance: Producer | None = None

    @property
    def _producer(self) -> Producer:
        """Created on first send: generating and preparing events needs no broker."""
        if self._producer_instance is None:
            self._producer_instance = Producer(self._producer_config)
        return self._producer_instance

    # ------------------------------------------------------------------ events

    def _new_event(self, late: bool) -> dict:
        rng = self._rng
        index = self._originals
        self._originals += 1
        event = make_event(rng, index, self._event_spec)
        user = int(event["user"]["id"][1:])
        if rng.random() < 0.05:  # a user starts a new session now and then
            self._sessions[user] = self._sessions.get(user, 0) + 1
        event["user"]["country"] = _COUNTRIES[user % len(_COUNTRIES)]
        event["session"] = {
            "id": f"s{user}-{self._sessions.get(user, 0)}",
            "device": {"os": _OS[user % len(_OS)], "browser": rng.choice(_BROWSERS)},
        }
        event["page"] = {"url": f"/p/{rng.randrange(10_000)}", "referrer": rng.choice(_REFERRERS)}
        if late:
            when = BASE_TIME + timedelta(milliseconds=index * self.spec.step_ms) - self.spec.late_by
            event["created_at"] = when.isoformat()
        return event

    def events(self, n: int) -> Iterator[dict]:
        """The next `n` events of the stream (updates the truth as it goes)."""
        rng = self._rng
        spec = self.spec
        truth = self.truth
        for _ in range(n):
            roll = rng.random()
            if roll < spec.duplicates and self._recent:
                original = rng.choice(self._recent)
                original["attempt"] += 1
                event = dict(original)
                truth.duplicates += 1
            else:
                late = roll >= 1 - spec.late
                event = self._new_event(late)
                truth.expected_unique += 1
                truth.id_checksum += id_checksum_part(event["event_id"])
                if late:
                    truth.late += 1  # late events are never re-sent: their fate is their own
                else:
                    self._recent.append(event)
                    event = dict(event)
            truth.produced += 1
            yield event

    def _encode(self, event: dict) -> tuple[bytes, bytes]:
        body = json.dumps(event, separators=(",", ":")).encode()
        # final size: body - "}" + ',"note":"' + pad + '"' + stamp key + 13 digits + "}"
        pad = self.spec.payload_bytes - len(body) - len(b',"note":""') - len(_STAMP_KEY) - 13
        if pad > 0:
            body = body[:-1] + b',"note":"' + b"x" * pad + b'"}'
        return event["event_id"].encode(), body[:-1] + _STAMP_KEY

    def prepare(self, n: int) -> Prepared:
        """Serialise the next `n` events ahead of a timed step (stamping happens on send)."""
        return [self._encode(e) for e in self.events(n)]

    # ------------------------------------------------------------------ sending

    def _on_delivery(self, err: Any, _msg: Any) -> None:
        if err is None:
            self._acked += 1
        else:
            self._failed.append(str(err))

    def send(
        self,
        messages: Prepared | int,
        rps: float | None,
        on_sample: Callable[[float, int, int], None] | None = None,
        sample_every_s: float = 0.25,
    ) -> SendReport:
        """Send prepared messages (or the next N events) at `rps` (None: as fast as possible).

        Returns once every message is acknowledged; the achieved rate counts acknowledged
        messages over the time from the first hand-over to the last acknowledgement.
        """
        if isinstance(messages, int):
            todo: Iterator[tuple[bytes, bytes]] = (self._encode(e) for e in self.events(messages))
            total = messages
        else:
            todo = iter(messages)
            total = len(messages)
        bucket = TokenBucket(rps) if rps else None
        producer = self._producer
        topic = self.topic
        acked_before = self._acked
        samples: list[tuple[float, int, int]] = []
        sent = 0
        started = time.time()
        t0 = time.monotonic()
        next_sample = t0
        while sent < total:
            grant = bucket.take(min(1000, total - sent)) if bucket else min(1000, total - sent)
            stamp = b"%d}" % int(time.time() * 1000)
            for _ in range(grant):
                key, head = next(todo)
                while True:
                    try:
                        producer.produce(
                            topic, value=head + stamp, key=key, on_delivery=self._on_delivery
                        )
                        break
                    except BufferError:
                        producer.poll(0.05)
            sent += grant
            producer.poll(0)
            now = time.monotonic()
            if now >= next_sample:
                sample = (time.time(), sent, self._acked - acked_before)
                samples.append(sample)
                if on_sample:
                    on_sample(*sample)
                next_sample = now + sample_every_s
        while producer.flush(0.1) > 0:
            if time.monotonic() >= next_sample:
                samples.append((time.time(), sent, self._acked - acked_before))
                next_sample = time.monotonic() + sample_every_s
        ended = time.time()
        seconds = time.monotonic() - t0
        samples.append((ended, sent, self._acked - acked_before))
        if self._failed:
            raise RuntimeError(
                f"{len(self._failed)} messages were not delivered: {self._failed[0]}"
            )
        return SendReport(rps, sent, self._acked - acked_before, seconds, started, ended, samples)

    def close(self) -> None:
        if self._producer_instance is not None:
            self._producer_instance.flush(30)

    def write_truth(self, path: Path, extra: dict[str, Any] | None = None) -> None:
        doc = {
            "topic": self.topic,
            "spec": {**asdict(self.spec), "late_by_s": self.spec.late_by.total_seconds()},
            **self.truth.as_dict(),
            **(extra or {}),
        }
        doc["spec"].pop("late_by")
        Path(path).write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
