"""Request and response bodies of the native API's helper routes (and the error body).

Requests reuse the pipeline document's models where they describe the same thing
(`KafkaSecurity`, `ClickHouseConnection`, `SchemaField`, `FieldType`), so a connection the
UI tested is written into a document unchanged. Models are frozen; unknown fields are refused.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, field_validator, model_validator

from streamsift.config.models import (
    ClickHouseConnection,
    KafkaSecurity,
    SchemaField,
    check_topic_name,
)
from streamsift.config.sink import check_table_name
from streamsift.config.source import check_bootstrap_servers
from streamsift.config.types import FieldType, parse_field_type

MAX_SAMPLES = 100


class _Body(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ErrorBody(BaseModel):
    """Every error answer of the API (the shape GlassFlow's API uses too)."""

    status: int
    code: str
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


Servers = Annotated[str, BeforeValidator(check_bootstrap_servers)]


# ---------------------------------------------------------------------------- Kafka


class KafkaConnection(_Body):
    bootstrap_servers: Servers
    security: KafkaSecurity = KafkaSecurity()


class TopicModel(_Body):
    name: str
    partitions: int


class KafkaTestResult(_Body):
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


class SampleMessageModel(_Body):
    partition: int
    offset: int
    timestamp: str | None
    key: str | None
    value: Any = Field(description="the message decoded as JSON; null when it is not JSON")
    raw: str | None = Field(description="the text of a message that is not JSON")
    error: str | None = Field(description="why the message could not be decoded")


class SampleResult(_Body):
    topic: str
    messages: list[SampleMessageModel]


# ---------------------------------------------------------------------------- schema inference


class InferRequest(_Body):
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


class InferredFieldModel(_Body):
    name: str
    type: FieldType
    nullable: bool
    examples: list[Any]


class EventTimeCandidateModel(_Body):
    name: str
    kind: str
    note: str


class InferResult(_Body):
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


class ClickHouseTestResult(_Body):
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


class ColumnModel(_Body):
    name: str
    type: str


# ---------------------------------------------------------------------------- expressions


class ExpressionRequest(_Body):
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


class ExpressionCheckResult(_Body):
    ok: bool = True
    kind: str = Field(description="the kind of value the expression gives")
    fields: list[str] = Field(description="the fields it reads")


class ExpressionValueResult(_Body):
    value: Any
    kind: str
    passes: bool | None = Field(
        description="for a filter: whether the event is kept (null when the filter gives null)"
    )
    note: str | None = None


# ---------------------------------------------------------------------------- documents


class ValidateResult(_Body):
    ok: bool = True
    name: str
    summary: str = Field(description="the line `streamsift validate` prints after 'ok: <name>: '")
