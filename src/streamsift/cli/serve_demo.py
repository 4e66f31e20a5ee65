"""`streamsift serve --demo`: the server with something to look at from the first minute.

Around the normal server it starts the bundled Kafka broker, a generator producing events at
a steady rate (one in four re-sends a recent event: a duplicate for dedup to drop) and the
pipeline `demo-dedup` from that topic into the embedded ClickHouse. A demo pipeline left by
an earlier run (its broker gone with that run) is replaced. When the server stops, the
pipelines stop with it (the broker goes away), then the generator and the broker.
"""

from __future__ import annotations

import contextlib
import json
import random
import threading
import time
import uuid
from collections import deque
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from streamsift.embedded.broker import Broker
from streamsift.errors import NotFoundError, StreamsiftError
from streamsift.service.core import PipelineService
from streamsift.service.document_policy import DocumentPolicy
from streamsift.service.lifecycle import State

DEMO_PIPELINE = "demo-dedup"
DEMO_TOPIC = "demo-events"
EVENTS_PER_S = 20.0
DUPLICATE_SHARE = 0.25
AT_REST = (State.STOPPED, State.FAILED)


class DemoEvents(threading.Thread):
    """Produces demo events at `rate` per second until stopped; a `duplicates` share of them
    re-sends one of the last 200 events unchanged."""

    def __init__(self, bootstrap_servers: str, rate: float = EVENTS_PER_S) -> None:
        super().__init__(name="demo-events", daemon=True)
        self.bootstrap_servers, self.rate = bootstrap_servers, rate
        self.sent = 0
        self._halt = threading.Event()

    def stop(self) -> None:
        self._halt.set()

    def run(self) -> None:
        rng = random.Random(7)
        recent: deque[dict[str, Any]] = deque(maxlen=200)
        producer = Producer({"bootstrap.servers": self.bootstrap_servers, "linger.ms": 20})
        due = time.monotonic()
        while not self._halt.wait(max(0.0, due - time.monotonic())):
            due += 1 / self.rate
            if recent and rng.random() < DUPLICATE_SHARE:
                event = rng.choice(recent)
            else:
                event = _new_event(rng)
                recent.append(event)
            producer.produce(
                DEMO_TOPIC, key=event["event_id"].encode(), value=json.dumps(event).encode()
            )
            producer.poll(0)
            self.sent += 1
        producer.flush(10)


def _new_event(rng: random.Random) -> dict[str, Any]:
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds")
    return {
        "event_id": str(uuid.UUID(int=rng.getrandbits(128), version=4)),
        "type": rng.choice(["view", "view", "view", "click", "purchase"]),
        "user": {"id": f"u{rng.randrange(100)}", "country": rng.choice(["DE", "US", "FR", "IN"])},
        "amount": round(rng.uniform(1, 200), 2),
        "created_at": now.replace("+00:00", "Z"),
    }


def demo_document(bootstrap_servers: str, data_dir: Path) -> dict[str, Any]:
    """The demo pipeline: dedup on event_id within an hour of created_at."""
    fields = [
        ("event_id", "string", "String"),
        ("type", "string", "LowCardinality(String)"),
        ("user.id", "string", "String"),
        ("user.country", "string", "LowCardinality(String)"),
        ("amount", "float", "Float64"),
        ("created_at", "timestamp", "DateTime64(3, 'UTC')"),
    ]
    return {
        "name": DEMO_PIPELINE,
        "source": {
            "bootstrap_servers": bootstrap_servers,
            "topic": DEMO_TOPIC,
            "schema": {
                "fields": [{"name": f, "type": t} for f, t, _ in fields],
                "event_time": "created_at",
            },
        },
        "dedup": {"key": "event_id", "time_window": "1h"},
        "sink": {
            "clickhouse": {"path": str((data_dir / "clickhouse").resolve())},
            "table": "demo_events",
            "create_table": True,
            "order_by": ["created_at", "event_id"],
            "mapping": [
                {"field": f, "column": f.replace(".", "_"), "type": c} for f, _, c in fields
            ],
        },
    }


def _replace_pipeline(service: PipelineService, doc: dict[str, Any]) -> None:
    """Create `doc`'s pipeline, after removing one of that name an earlier run left."""
    with contextlib.suppress(NotFoundError):
        if service.get(DEMO_PIPELINE).state not in AT_REST:
            service.terminate(DEMO_PIPELINE)
        deadline = time.monotonic() + 60
        while service.get(DEMO_PIPELINE).state not in AT_REST:
            if time.monotonic() > deadline:
                raise TimeoutError(f"the earlier {DEMO_PIPELINE} pipeline did not stop")
            time.sleep(0.2)
        service.delete(DEMO_PIPELINE)
    service.create(doc)


@contextlib.contextmanager
def demo_backdrop(
    data_dir: Path, policy: DocumentPolicy | None = None
) -> Iterator[tuple[PipelineService, str]]:
    """The broker, the generator and the running demo pipeline; the service (for the app,
    judging documents by the server's `policy`) and a line saying what runs."""
    data_dir.mkdir(parents=True, exist_ok=True)
    with Broker(log_path=data_dir / "demo-broker.log") as broker:
        broker.create_topic(DEMO_TOPIC, partitions=3)
        events = DemoEvents(broker.bootstrap_servers)
        events.start()
        service = PipelineService(data_dir, policy=policy)
        try:
            service.start()
            _replace_pipeline(service, demo_document(broker.bootstrap_servers, data_dir))
            yield (
                service,
                (
                    f"demo: broker at {broker.bootstrap_servers}, {EVENTS_PER_S:.0f} events/s into "
                    f"topic {DEMO_TOPIC} (1 in {round(1 / DUPLICATE_SHARE)} a duplicate), pipeline "
                    f"{DEMO_PIPELINE} into the embedded ClickHouse (table demo_events)"
                ),
            )
        finally:
            # The demo's pipeline at once (its checkpoint keeps it exact; nobody waits for
            # it), the others gracefully: all before the broker goes, which they read.
            with contextlib.suppress(StreamsiftError):
                service.terminate(DEMO_PIPELINE)
            service.close(stop_all=True)
            events.stop()
            events.join(15)
