"""The pipeline document: models, loading, validation and GlassFlow import.

Names are loaded on first use: executors import `streamsift.config.types` for the field
types alone, and should not pay for pydantic, YAML and SQL parsing they never use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

_WHERE = {
    "format_duration": "durations",
    "parse_duration": "durations",
    "ConfigError": "errors",
    "load_pipeline": "loader",
    "parse_pipeline": "loader",
    "read_document": "loader",
    "ClickHouseConnection": "models",
    "ClickHouseSink": "models",
    "ColumnMapping": "models",
    "Dedup": "models",
    "KafkaSecurity": "models",
    "KafkaSource": "models",
    "Pipeline": "models",
    "Schema": "models",
    "SchemaField": "models",
    "CHType": "types",
    "FieldType": "types",
    "parse_clickhouse_type": "types",
}

__all__ = [
    "CHType",
    "ClickHouseConnection",
    "ClickHouseSink",
    "ColumnMapping",
    "ConfigError",
    "Dedup",
    "FieldType",
    "KafkaSecurity",
    "KafkaSource",
    "Pipeline",
    "Schema",
    "SchemaField",
    "format_duration",
    "load_pipeline",
    "parse_clickhouse_type",
    "parse_duration",
    "parse_pipeline",
    "read_document",
]


def __getattr__(name: str) -> Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


if TYPE_CHECKING:
    from streamsift.config.durations import format_duration, parse_duration
    from streamsift.config.errors import ConfigError
    from streamsift.config.loader import load_pipeline, parse_pipeline, read_document
    from streamsift.config.models import (
        ClickHouseConnection,
        ClickHouseSink,
        ColumnMapping,
        Dedup,
        KafkaSecurity,
        KafkaSource,
        Pipeline,
        Schema,
        SchemaField,
    )
    from streamsift.config.types import CHType, FieldType, parse_clickhouse_type
