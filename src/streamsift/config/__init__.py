"""The pipeline document: models, loading, validation and GlassFlow import."""

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
