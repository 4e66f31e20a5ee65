"""Shared fixtures: one bundled Kafka broker, one embedded ClickHouse and one SparkSession
per test session (chdb allows one data directory per process; Spark one session)."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from streamsift.config import parse_pipeline
from streamsift.config.models import Pipeline
from streamsift.testing.broker import Broker


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
    name = re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:60]
    return f"t_{name}"


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


@pytest.fixture
def event_pipeline(
    broker: Broker, chdb_path: Path, tmp_path: Path, unique_name: str
) -> Callable[..., Pipeline]:
    """Build a dedup pipeline for the generator's events; keyword overrides go into the doc."""

    def build(
        window: str | None = "1h", max_rows_per_batch: int | None = None, **overrides: Any
    ) -> Pipeline:
        doc: dict[str, Any] = {
            "name": unique_name.replace("_", "-")[:90],
            "source": {
                "bootstrap_servers": broker.bootstrap_servers,
                "topic": unique_name,
                "schema": {"fields": EVENT_FIELDS, "event_time": "created_at"},
            },
            "sink": {
                "clickhouse": {"path": str(chdb_path)},
                "table": unique_name,
                "create_table": True,
                "order_by": ["event_id"],
                "mapping": EVENT_MAPPING,
            },
            "runtime": {
                "checkpoint_dir": str(tmp_path / "checkpoint"),
                "max_rows_per_batch": max_rows_per_batch,
            },
        }
        if window:
            doc["dedup"] = {"key": "event_id", "time_window": window}
        for key, value in overrides.items():
            doc[key] = value
        return parse_pipeline(doc)

    return build
