"""The helper routes' bodies: connection probes, sampling, schema inference, expressions and
document validation.

Requests reuse the pipeline document's models where they describe the same thing
(`KafkaSecurity`, `ClickHouseConnection`, `SchemaField`, `FieldType`), so a connection the
UI tested is written into a document unchanged. Requests refuse unknown fields; answers
ignore them (wire/base.py).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field, field_validator, model_validator

from streamsift.config.models import (
    ClickHouseConnection,
    KafkaSecurity,
    SchemaField,
    check_topic_name,
)
from streamsift.config.sink import check_table_name
from streamsift.config.source import check_bootstrap_servers
from streamsift.config.types import FieldType, parse_field_type
from streamsift.wire.base import Answer, Request

MAX_SAMPLES = 100


Servers = Annotated[str, BeforeValidator(check_bootstrap_servers)]


# ---------------------------------------------------------------------------- Kafka


class KafkaConnection(Request):
    bootstrap_servers: Servers
    security: KafkaSecurity = KafkaSecurity()


class TopicModel(Answer):
    name: str
    partitions: int


class KafkaTestResult(Answer):
    ok: bool = True
    brokers: list[str]
    topics: list[TopicModel]


class SampleRequest(KafkaConnection):
    topic: str
    count: int = Field(default=10, ge=1, le=MAX_SAMPLES)

    @field_validator("topic")
    @classmethod
    def _topic(cls, v: str) -> str:
        return check_topic_name(v)


class SampleMessageModel(Answer):
    partition: int
    offset: int
    timestamp: str | None
    key: str | None
    value: Any = Field(description="the message decoded as JSON; null when it is not JSON")
    raw: str | None = Field(description="the text of a message that is not JSON")
    error: str | None = Field(description="why the message could not be decoded")


class SampleResult(Answer):
    topic: str
    messages: list[SampleMessageModel]


# ---------------------------------------------------------------------------- schema inference


class InferRequest(Request):
    """Infer from `samples` (JSON values) given here, or from messages read from `topic`."""

    samples: list[Any] | None = Field(default=None, max_length=10_000)
    bootstrap_servers: Servers | None = None
    security: KafkaSecurity = KafkaSecurity()
    topic: str | None = None
    count: int = Field(default=MAX_SAMPLES, ge=1, le=MAX_SAMPLES)

    @model_validator(mode="after")
    def _one_source(self) -> InferRequest:
        if (self.samples is None) == (self.topic is None):
            raise ValueError("give either samples or a topic (with bootstrap_servers)")
        if self.topic is not None:
            check_topic_name(self.topic)
            if self.bootstrap_servers is None:
                raise ValueError("bootstrap_servers: required with topic")
        return self


class InferredFieldModel(Answer):
    name: str
    type: FieldType
    nullable: bool
    examples: list[Any]


class EventTimeCandidateModel(Answer):
    name: str
    kind: str
    note: str


class InferResult(Answer):
    fields: list[InferredFieldModel]
    event_time_candidates: list[EventTimeCandidateModel]
    dedup_key_candidates: list[str]
    samples: int
    skipped: int
    schema_: dict[str, Any] = Field(
        alias="schema",
        serialization_alias="schema",
        description="a `schema` block for a pipeline document, ready to edit",
    )


# ---------------------------------------------------------------------------- ClickHouse


class ClickHouseTestResult(Answer):
    ok: bool = True
    version: str
    database: str
    tables: list[str]


class ClickHouseColumnsRequest(ClickHouseConnection):
    """A connection (as in `sink.clickhouse`) and the table whose columns to list."""

    table: str = Field(min_length=1)

    @field_validator("table")
    @classmethod
    def _table(cls, v: str) -> str:
        return check_table_name(v)

    def connection(self) -> ClickHouseConnection:
        return ClickHouseConnection.model_validate(
            {k: getattr(self, k) for k in ClickHouseConnection.model_fields}
        )


class ColumnModel(Answer):
    name: str
    type: str


# ---------------------------------------------------------------------------- expressions


class ExpressionRequest(Request):
    """A filter (no `type`) or a computed field of `type`, over `fields`."""

    expression: str
    fields: list[SchemaField] = Field(default_factory=list)
    type: Annotated[FieldType, BeforeValidator(parse_field_type)] | None = Field(
        default=None, description="the computed field's type; leave out for a filter"
    )

    def scope(self) -> dict[str, FieldType]:
        return {f.name: f.type for f in self.fields}


class EvaluateRequest(ExpressionRequest):
    event: dict[str, Any] = Field(description="a sample event (a JSON object)")


class ExpressionCheckResult(Answer):
    ok: bool = True
    kind: str = Field(description="the kind of value the expression gives")
    fields: list[str] = Field(description="the fields it reads")


class ExpressionValueResult(Answer):
    value: Any
    kind: str
    passes: bool | None = Field(
        description="for a filter: whether the event is kept (null when the filter gives null)"
    )
    note: str | None = None


# ---------------------------------------------------------------------------- documents


class ValidateResult(Answer):
    ok: bool = True
    name: str
    summary: str = Field(description="the line `streamsift validate` prints after 'ok: <name>: '")
