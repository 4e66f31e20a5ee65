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
    desired_state: str | None = None
    version: int | None = None
    error: str | None = None
    error_at: str | None = None
    hint: str | None = None
    worker_state: str | None = None
    read: int | None = None
    written: int | None = None
    duplicates: int | None = None
    dlq: int | None = None
    late: int | None = None
    late_dropped: int | None = None
    batches: int | None = None
    rows_per_second: float | None = None
    lag: int | None = None
    lag_by_partition: dict[str, int] = Field(default_factory=dict)
    last_batch_at: str | None = None
    last_batch_duration_ms: int | None = None
    reported_at: str | None = None


class StatusChange(_Answer):
    at: str | None = None
    from_state: str | None = None
    to_state: str | None = None
    error: str | None = None
    note: str | None = None


# ---------------------------------------------------------------------------- dead letters


class DeadLetter(_Answer):
    """A dead letter; key and payload as text, or in `*_base64` when not UTF-8."""

    topic: str
    partition: int
    offset: int
    kafka_timestamp: str | None = None
    failed_at: str | None = None
    stage: str
    error_class: str
    error: str
    replay_attempts: int = 0
    key: str | None = None
    key_base64: str | None = None
    payload: str | None = None
    payload_base64: str | None = None
    first_failure: dict[str, Any] | None = None


class DeadLetterPage(_Answer):
    pending: int
    offset: int
    limit: int
    messages: list[DeadLetter]


class ConsumedLetters(_Answer):
    consumed: int
    messages: list[DeadLetter]


class DlqClassCount(_Answer):
    stage: str
    error_class: str
    pending: int
    consumed: int
    replayed: int
    replaying: int = 0


class DlqStats(_Answer):
    pipeline: str
    table: str
    exists: bool = True
    total: int
    pending: int
    consumed: int
    replayed: int
    replaying: int = 0
    by_class: list[DlqClassCount] = Field(default_factory=list)


class PurgeResult(_Answer):
    purged: int


class ReplayResult(_Answer):
    replayed: int
    still_failing: int
    chunks: int = 0
    resumed_chunks: int = 0
    dry_run: bool = False
    still_failing_by_class: list[dict[str, Any]] = Field(default_factory=list)


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
