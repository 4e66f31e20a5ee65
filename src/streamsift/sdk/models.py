"""What the API answers, as typed SDK objects (frozen; fields the server adds later are kept).

The pipeline routes' records and statuses mirror the service's; the helper routes' results
mirror api/models.py. Unknown fields are allowed so an older SDK reads a newer server.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="allow", populate_by_name=True)


class PipelineRecord(_Answer):
    id: str
    name: str | None = None
    state: str | None = None
    desired_state: str | None = None
    version: int | None = None
    created_at: str | None = None
    updated_at: str | None = None
    error: str | None = None
    error_at: str | None = None


class PipelineStatus(_Answer):
    id: str | None = None
    state: str | None = None
    read: int | None = None
    written: int | None = None
    duplicates: int | None = None
    dlq: int | None = None
    late: int | None = None
    lag: dict[str, Any] | None = None
    last_batch_at: str | None = None
    last_batch_duration_s: float | None = None
    batches: int | None = None
    error: str | None = None


class StatusChange(_Answer):
    state: str | None = None
    at: str | None = None
    error: str | None = None


class ValidateResult(_Answer):
    ok: bool
    name: str
    summary: str


class Topic(_Answer):
    name: str
    partitions: int


class KafkaTestResult(_Answer):
    ok: bool
    brokers: list[str]
    topics: list[Topic]


class SampleMessage(_Answer):
    partition: int
    offset: int
    timestamp: str | None = None
    key: str | None = None
    value: Any = None
    raw: str | None = None
    error: str | None = None


class SampleResult(_Answer):
    topic: str
    messages: list[SampleMessage]


class InferredField(_Answer):
    name: str
    type: str
    nullable: bool
    examples: list[Any] = Field(default_factory=list)


class EventTimeCandidate(_Answer):
    name: str
    kind: str
    note: str = ""


class InferResult(_Answer):
    fields: list[InferredField]
    event_time_candidates: list[EventTimeCandidate]
    dedup_key_candidates: list[str]
    samples: int
    skipped: int
    schema_: dict[str, Any] = Field(alias="schema")


class ClickHouseTestResult(_Answer):
    ok: bool
    version: str
    database: str
    tables: list[str]


class Column(_Answer):
    name: str
    type: str


class ExpressionCheck(_Answer):
    ok: bool
    kind: str
    fields: list[str]


class ExpressionValue(_Answer):
    value: Any = None
    kind: str
    passes: bool | None = None
    note: str | None = None
