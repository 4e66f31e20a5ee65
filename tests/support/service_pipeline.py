"""What the service and API pipeline tests share: the small dedup pipeline they run, its
events, a started service, and how long a pipeline's start may take (a Spark start-up)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from confluent_kafka import Producer

from streamsift.embedded.broker import Broker
from streamsift.service.core import PipelineService
from streamsift.service.lifecycle import State
from support.clickhouse import rows

START_TIMEOUT_S = 240  # for a pipeline to run, or its first rows: a Spark driver starts first


def pipeline_doc(
    name: str, broker: Broker, clickhouse: dict[str, Any], **sink: Any
) -> dict[str, Any]:
    """A dedup pipeline (key event_id, 1h) from topic `name` into table `name` (`-` -> `_`)."""
    return {
        "name": name,
        "source": {
            "bootstrap_servers": broker.bootstrap_servers,
            "topic": name,
            "schema": {
                "fields": [
                    {"name": "event_id", "type": "string"},
                    {"name": "n", "type": "int"},
                    {"name": "created_at", "type": "timestamp"},
                ],
                "event_time": "created_at",
            },
        },
        "dedup": {"key": "event_id", "time_window": "1h"},
        "sink": {
            "clickhouse": clickhouse,
            "table": name.replace("-", "_"),
            "create_table": True,
            "order_by": ["event_id"],
            "mapping": [
                {"field": "event_id", "column": "event_id", "type": "String"},
                {"field": "n", "column": "n", "type": "Int64"},
                {"field": "created_at", "column": "created_at", "type": "DateTime64(3, 'UTC')"},
            ],
            **sink,
        },
    }


def produce(
    broker: Broker, topic: str, ids: range, repeats: int = 2, extra: tuple[bytes, ...] = ()
) -> None:
    """Each event id `repeats` times (dedup keeps one, keyed by it), then the `extra` raw
    messages (keyed `bad`)."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for _ in range(repeats):
        for i in ids:
            value = {"event_id": f"e{i}", "n": i, "created_at": "2026-01-01T00:00:00Z"}
            producer.produce(topic, key=f"e{i}".encode(), value=json.dumps(value).encode())
    for raw in extra:
        producer.produce(topic, key=b"bad", value=raw)
    assert producer.flush(30) == 0


@contextlib.contextmanager
def running_service(data_dir: Path, **options: Any) -> Iterator[PipelineService]:
    """A started `PipelineService` on `data_dir` (`options`: the service's, e.g.
    warm_host); at the end its pipelines are stopped."""
    service = PipelineService(data_dir, **options)
    service.start()
    try:
        yield service
    finally:
        service.close(stop_all=True)


def tables(
    service: PipelineService, chdb: Path, names: Iterable[str]
) -> dict[str, tuple[int, int]]:
    """(rows, distinct event ids) of each pipeline's table in the embedded ClickHouse `chdb`,
    read through the service's endpoint."""
    host, port = service.endpoints.address(chdb)
    return {name: rows(port, name.replace("-", "_"), host=host) for name in names}


def all_exact(service: PipelineService, chdb: Path, names: Iterable[str], events: int) -> bool:
    """Every pipeline of `names` Running, its table holding `events` rows, each event once."""
    names = list(names)
    running = all(service.get(name).state is State.RUNNING for name in names)
    return running and all(v == (events, events) for v in tables(service, chdb, names).values())
