"""Reproducible event streams with known duplicates, and the truth to check results against.

Events look like a typical product stream: an id (the dedup key), a nested user, tags, an
amount and an event time. A duplicate is a re-send of an earlier event with the same id and
event time but a higher `attempt`, so a test can tell which version was kept. Messages are
keyed by the event id: all versions of an id land in one partition, in produce order.
Their pipeline schema and ClickHouse mapping are `sample_data.schema.EVENT_FIELDS` and
`EVENT_MAPPING`.
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


# ---------------------------------------------------------------------------- two related streams

# Orders (the left side of a join) and user profile events (the right side), for join demos
# and tests (schemas: sample_data.schema.ORDER_FIELDS, USER_FIELDS). The dedup key of each is
# its Kafka message key.


@dataclass(frozen=True)
class JoinSpec:
    """Orders and user profile events over `span` of event time.

    Every user re-publishes its profile once per `profile_every` of event time (at its own
    phase), from `profile_every` before the first order to `profile_every` after the last.
    A share of orders (`orphans`) names a user that never publishes anything. On each side a
    share of the produced messages (`duplicates`) are re-sends: exact copies of an event sent a
    few messages earlier. With `tail`, each stream ends with one extra event this far after
    every other event (a `tail-order` of user `tail-user`, and that user's profile event at
    the same time), so a pipeline's event-time watermark can pass every other event.
    """

    orders: int = 10_000  # order messages produced, re-sends included
    users: int = 1_000
    duplicates: float = 0.2
    orphans: float = 0.1
    span: timedelta = timedelta(hours=2)
    profile_every: timedelta = timedelta(hours=1)
    tail: timedelta | None = timedelta(days=1)
    seed: int = 7


@dataclass
class JoinStreams:
    """Both streams in produce order, plus what the generator put in them."""

    orders: list[dict] = field(default_factory=list)
    users: list[dict] = field(default_factory=list)
    order_resends: int = 0
    user_resends: int = 0
    orphan_orders: int = 0
    tail_events: int = 0


def _with_resends(rng: random.Random, events: list[dict], n: int) -> tuple[list[dict], int]:
    """`events` with `n` re-sends mixed in: each an exact copy of an event, sent at most five
    new events after it."""
    if not events or n <= 0:
        return list(events), 0
    after: dict[int, list[dict]] = {}
    for _ in range(n):
        original = rng.randrange(len(events))
        slot = min(original + rng.randrange(6), len(events) - 1)
        after.setdefault(slot, []).append(dict(events[original]))
    out: list[dict] = []
    for i, event in enumerate(events):
        out.append(event)
        out.extend(after.get(i, []))
    return out, n


def generate_join_streams(spec: JoinSpec) -> JoinStreams:
    """Orders (keyed by `order_id`) and user profile events (keyed by `event_id`), in time order
    apart from the re-sends. Deterministic for a given spec."""
    if not 0 <= spec.duplicates < 1:
        raise ValueError("duplicates must be a share in [0, 1)")
    rng = random.Random(spec.seed)
    streams = JoinStreams()
    new_orders = spec.orders - round(spec.orders * spec.duplicates)
    step = timedelta(milliseconds=int(spec.span.total_seconds() * 1000) // max(new_orders, 1))
    orders = []
    for i in range(new_orders):
        if rng.random() < spec.orphans:
            user = f"ghost{rng.randrange(max(spec.users, 1))}"
            streams.orphan_orders += 1
        else:
            user = f"u{rng.randrange(spec.users)}"
        orders.append(
            {
                "order_id": f"o{i:07d}",
                "user_id": user,
                "amount": round(rng.random() * 200, 2),
                "created_at": (BASE_TIME + step * i).isoformat(),
            }
        )
    last_order = BASE_TIME + step * max(new_orders - 1, 0)
    profiles = []
    every_ms = int(spec.profile_every.total_seconds() * 1000)
    for u in range(spec.users):
        at = BASE_TIME - spec.profile_every + timedelta(milliseconds=rng.randrange(every_ms))
        version = 0
        while at <= last_order + spec.profile_every:
            profiles.append(
                (
                    at,
                    {
                        "event_id": f"u{u}-v{version}",
                        "user": {
                            "id": f"u{u}",
                            "name": f"user {u}",
                            "plan": rng.choice(["free", "pro", "team"]),
                        },
                        "updated_at": at.isoformat(),
                    },
                )
            )
            at += spec.profile_every
            version += 1
    profiles.sort(key=lambda p: (p[0], p[1]["event_id"]))
    users = [p for _, p in profiles]
    user_resends = round(len(users) * spec.duplicates / (1 - spec.duplicates))
    streams.orders, streams.order_resends = _with_resends(rng, orders, spec.orders - new_orders)
    streams.users, streams.user_resends = _with_resends(rng, users, user_resends)
    if spec.tail is not None:
        newest = max([last_order] + [at for at, _ in profiles[-1:]])
        at = (newest + spec.tail).isoformat()
        streams.orders.append(
            {"order_id": "tail-order", "user_id": "tail-user", "amount": 0.0, "created_at": at}
        )
        streams.users.append(
            {
                "event_id": "tail-user-v0",
                "user": {"id": "tail-user", "name": "tail", "plan": "free"},
                "updated_at": at,
            }
        )
        streams.tail_events = 2
    return streams
