"""Reproducible event streams with known duplicates, and the truth to check results against.

Events look like a typical product stream: an id (the dedup key), a nested user, tags, an
amount and an event time. A duplicate is a re-send of an earlier event with the same id and
event time but a higher `attempt`, so a test can tell which version was kept. Messages are
keyed by the event id: all versions of an id land in one partition, in produce order.
"""

from __future__ import annotations

import json
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone

from confluent_kafka import Producer

BASE_TIME = datetime(2026, 1, 1, tzinfo=timezone.utc)

# The generator's events as a pipeline schema and a ClickHouse mapping (for tests and tools).
EVENT_FIELDS = [
    {"name": "event_id", "type": "string"},
    {"name": "type", "type": "string"},
    {"name": "user.id", "type": "string"},
    {"name": "user.name", "type": "string"},
    {"name": "tags", "type": "array"},
    {"name": "amount", "type": "float"},
    {"name": "attempt", "type": "int"},
    {"name": "created_at", "type": "timestamp"},
]
EVENT_MAPPING = [
    {"field": "event_id", "column": "event_id", "type": "String"},
    {"field": "type", "column": "type", "type": "LowCardinality(String)"},
    {"field": "user.id", "column": "user_id", "type": "String"},
    {"field": "user.name", "column": "user_name", "type": "String"},
    {"field": "tags", "column": "tags", "type": "Array(String)"},
    {"field": "amount", "column": "amount", "type": "Float64"},
    {"field": "attempt", "column": "attempt", "type": "UInt32"},
    {"field": "created_at", "column": "created_at", "type": "DateTime64(3, 'UTC')"},
]


@dataclass
class Truth:
    """What a correct pipeline must produce from the generated stream."""

    produced: int = 0
    duplicates: int = 0
    malformed: int = 0
    first_versions: dict[str, dict] = field(default_factory=dict)

    @property
    def expected_unique(self) -> int:
        return len(self.first_versions)

    def as_dict(self) -> dict[str, int]:
        return {
            "produced": self.produced,
            "expected_unique": self.expected_unique,
            "duplicates": self.duplicates,
            "malformed": self.malformed,
        }


@dataclass(frozen=True)
class EventSpec:
    events: int = 10_000
    duplicates: float = 0.2
    keys: int | None = None  # how many distinct ids receive the duplicates (None: any)
    seed: int = 7
    step_ms: int = 10  # event time advances this much per new event
    payload_bytes: int = 0  # pad events to about this size


def make_event(rng: random.Random, index: int, spec: EventSpec) -> dict:
    user = rng.randrange(1000)
    event = {
        "event_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "type": rng.choice(["view", "click", "purchase", "signup"]),
        "user": {"id": f"u{user}", "name": f"user {user}", "email": f"user{user}@example.com"},
        "tags": rng.sample(["a", "b", "c", "d", "e"], k=rng.randrange(3)),
        "amount": round(rng.random() * 100, 2),
        "created_at": (BASE_TIME + timedelta(milliseconds=index * spec.step_ms)).isoformat(),
        "attempt": 0,
    }
    if spec.payload_bytes:
        pad = spec.payload_bytes - len(json.dumps(event)) - 12
        if pad > 0:
            event["note"] = "x" * pad
    return event


def generate(spec: EventSpec, truth: Truth) -> Iterator[dict]:
    """Yield events in produce order; fills `truth` as it goes."""
    rng = random.Random(spec.seed)
    n_dupes = round(spec.events * spec.duplicates)
    n_new = spec.events - n_dupes
    hot: list[dict] = []
    # Spread duplicates over the stream, never before their original.
    dup_slots = set(rng.sample(range(1, spec.events), n_dupes)) if n_dupes else set()
    new_index = 0
    for position in range(spec.events):
        if position in dup_slots and hot:
            original = rng.choice(hot)
            original["attempt"] += 1
            event = dict(original)
            truth.duplicates += 1
        else:
            if new_index >= n_new:  # the rare case where slots outran originals
                original = rng.choice(hot)
                original["attempt"] += 1
                event = dict(original)
                truth.duplicates += 1
            else:
                event = make_event(rng, new_index, spec)
                new_index += 1
                truth.first_versions[event["event_id"]] = dict(event)
                if spec.keys is None or len(hot) < spec.keys:
                    hot.append(dict(event))
        truth.produced += 1
        yield event


def produce(
    bootstrap_servers: str,
    topic: str,
    events: Iterator[dict] | list[dict],
    key_field: str = "event_id",
) -> int:
    """Produce JSON events keyed by `key_field`; returns how many were acknowledged."""
    producer = Producer(
        {
            "bootstrap.servers": bootstrap_servers,
            "linger.ms": 20,
            "enable.idempotence": True,
            "compression.type": "lz4",
            "batch.num.messages": 10_000,
        }
    )
    sent = 0
    failed: list[str] = []

    def on_delivery(err: object, _msg: object) -> None:
        nonlocal sent
        if err is None:
            sent += 1
        else:
            failed.append(str(err))

    for event in events:
        value = event if isinstance(event, bytes) else json.dumps(event).encode()
        key = None if isinstance(event, bytes) else str(event.get(key_field, "")).encode()
        while True:
            try:
                producer.produce(topic, value=value, key=key, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.1)
        producer.poll(0)
    producer.flush(60)
    if failed:
        raise RuntimeError(f"{len(failed)} messages were not delivered: {failed[0]}")
    return sent


def produce_raw(
    bootstrap_servers: str, topic: str, messages: list[tuple[bytes | None, bytes | None]]
) -> int:
    """Produce (key, value) pairs as they are, e.g. malformed payloads."""
    producer = Producer({"bootstrap.servers": bootstrap_servers, "linger.ms": 20})
    for key, value in messages:
        producer.produce(topic, value=value, key=key)
        producer.poll(0)
    producer.flush(60)
    return len(messages)
