"""The suite's shared fixtures, a pytest plugin (registered in tests/conftest.py): one bundled
Kafka broker, one embedded ClickHouse directory and one SparkSession per test session (chdb
allows one data directory per process; Spark one session); a ClickHouse server per module
(`clickhouse`); the schema registry; names, pipelines and producing for one test."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from streamsift.config import parse_pipeline
from streamsift.config.models import Pipeline
from streamsift.embedded.broker import Broker
from streamsift.embedded.clickhouse_server import spawn_server
from support.pipeline_docs import event_doc


@pytest.fixture(scope="session")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Broker]:
    b = Broker(log_path=tmp_path_factory.mktemp("broker") / "tansu.log")
    with b:
        yield b


@pytest.fixture(scope="session")
def chdb_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("chdb") / "clickhouse"


@pytest.fixture
def unique_name(request: pytest.FixtureRequest) -> str:
    """A name for this test's topic and table, unique within the session."""
    digest = hashlib.sha1(request.node.nodeid.encode()).hexdigest()[:8]
    name = re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:48]
    return f"t_{name}_{digest}"


@pytest.fixture
def event_pipeline(
    broker: Broker, chdb_path: Path, tmp_path: Path, unique_name: str
) -> Callable[..., Pipeline]:
    """Build a dedup pipeline for the generator's events (`support.pipeline_docs.event_doc`); keyword
    overrides replace top-level sections of the doc."""

    def build(
        window: str | None = "1h", max_rows_per_batch: int | None = None, **overrides: Any
    ) -> Pipeline:
        doc = event_doc(
            bootstrap_servers=broker.bootstrap_servers,
            topic=unique_name,
            clickhouse={"path": str(chdb_path)},
            checkpoint_dir=tmp_path / "checkpoint",
            window=window,
            sink={"order_by": ["event_id"]},
            runtime={"max_rows_per_batch": max_rows_per_batch},
        )
        doc.update(overrides)  # whole top-level sections
        return parse_pipeline(doc)

    return build


@pytest.fixture
def produce_messages(broker: Broker) -> Callable[..., list[tuple[int, int]]]:
    """Produce (key, value) messages in order; return each one's (partition, offset)."""
    from confluent_kafka import Producer

    def produce(topic: str, messages: list[tuple[bytes | None, bytes | None]]) -> list:
        where: dict[int, tuple[int, int]] = {}
        producer = Producer(
            {
                "bootstrap.servers": broker.bootstrap_servers,
                "linger.ms": 5,
                "enable.idempotence": True,
            }
        )
        for i, (key, value) in enumerate(messages):

            def delivered(err: Any, msg: Any, i: int = i) -> None:
                assert err is None, err
                where[i] = (msg.partition(), msg.offset())

            producer.produce(topic, key=key, value=value, on_delivery=delivered)
            producer.poll(0)
        assert producer.flush(60) == 0
        return [where[i] for i in range(len(messages))]

    return produce


@pytest.fixture(scope="module")
def clickhouse(tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A ClickHouse server for one module (the chdb-backed HTTP endpoint in a process of its
    own) on a loopback port: the pipelines write into it and the tests read it. Its port."""
    proc, port = spawn_server(tmp_path_factory.mktemp("clickhouse") / "clickhouse")
    yield port
    proc.terminate()
    proc.wait(30)


@pytest.fixture(scope="session")
def schema_registry() -> Iterator[Any]:
    """A Confluent-compatible schema registry (support.schema_registry) on a loopback port; its
    `url`, and its `state` (schemas, subjects, the requests it answered)."""
    from support.schema_registry import RegistryState, build_registry_app
    from support.servers import ServerThread

    state = RegistryState()
    with ServerThread(build_registry_app(state)) as server:
        server.state = state  # type: ignore[attr-defined]
        yield server
