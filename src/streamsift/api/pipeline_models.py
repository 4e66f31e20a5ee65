"""Response bodies of the pipeline and DLQ routes, built from what the service core returns.

Records, statuses and history entries mirror service/core.py's dataclasses field by field
(read with `from_attributes`). Dead letters carry their key and payload as text when they are
UTF-8, else base64 in `key_base64` / `payload_base64` (as `streamsift dlq show --json` prints
them). Nothing here holds a secret: documents go out masked by the service (`***`).
"""

from __future__ import annotations

import base64
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field

from streamsift.service.lifecycle import DesiredState, State

if TYPE_CHECKING:
    from streamsift.engine.dead_letters import ClassCount, DeadLetter, DlqTotals


class _Answer(BaseModel):
    model_config = ConfigDict(frozen=True, from_attributes=True)


class PipelineModel(_Answer):
    """A pipeline as the service keeps it: its state and the state its user asked for."""

    id: str
    name: str
    state: State
    desired_state: DesiredState = Field(
        description="what was asked last: a restarted server brings `running` ones back"
    )
    version: int = Field(description="the document's version: 1 at create, +1 per edit")
    created_at: datetime
    updated_at: datetime
    error: str | None = Field(description="why it failed, when it is Failed")
    error_at: datetime | None


class PipelineStatusModel(_Answer):
    """The record's state and what the pipeline's worker last reported about this run."""

    id: str
    state: State
    desired_state: DesiredState
    version: int
    error: str | None
    error_at: datetime | None
    hint: str | None = Field(description="what to do about the error")
    worker_state: str | None = Field(description="starting, running, stopping, stopped, failed")
    pid: int | None
    read: int = Field(description="records read from Kafka in this run")
    written: int = Field(description="rows written to ClickHouse")
    duplicates: int = Field(description="records dropped as duplicates")
    dlq: int = Field(description="records written to the DLQ")
    late: int
    late_dropped: int
    batches: int
    rows_per_second: float | None = Field(
        description="throughput: messages read per second of micro-batch time, this run"
    )
    lag: int | None = Field(description="messages behind the end of the topics, all partitions")
    lag_by_partition: dict[str, int] = Field(description="lag by 'topic/partition'")
    last_batch_at: str | None
    last_batch_duration_ms: int | None
    reported_at: str | None = Field(description="when the worker last reported")


class StatusChangeModel(_Answer):
    """One change of state, with its time, the error that caused it and a note."""

    at: datetime
    from_state: State | None
    to_state: State
    error: str | None
    note: str | None


class TableRowsModel(_Answer):
    """The pipeline's ClickHouse table: its row count and newest rows."""

    table: str
    exists: bool = Field(description="false until the pipeline has created its table")
    count: int = Field(description="rows in the table")
    columns: list[str] = Field(description="the mapped columns, in mapping order")
    order: str | None = Field(description="the event-time column rows are newest-first by")
    rows: list[list[Any]] = Field(description="the newest rows, one value per column")


# ---------------------------------------------------------------------------- dead letters


class FirstFailure(_Answer):
    stage: str
    error_class: str
    error: str


class DeadLetterModel(_Answer):
    """One pending dead letter: where it came from and its latest failure."""

    topic: str
    partition: int
    offset: int
    kafka_timestamp: datetime | None
    failed_at: datetime
    stage: str = Field(description="parse, transform, filter or sink")
    error_class: str
    error: str
    replay_attempts: int
    key: str | None = Field(description="the key as text (null when none, or not UTF-8)")
    key_base64: str | None = None
    payload: str | None = Field(description="the payload as text (null when not UTF-8)")
    payload_base64: str | None = None
    first_failure: FirstFailure | None = Field(
        default=None, description="the original failure, when a replay failed again"
    )

    @classmethod
    def of(cls, letter: DeadLetter) -> DeadLetterModel:
        key, key_b64 = _text_or_base64(letter.key)
        payload, payload_b64 = _text_or_base64(letter.payload)
        first = None
        if letter.attempts:
            first = FirstFailure(
                stage=letter.origin,
                error_class=letter.origin_error_class,
                error=letter.origin_error,
            )
        return cls(
            topic=letter.topic,
            partition=letter.partition,
            offset=letter.offset,
            kafka_timestamp=_at(letter.kafka_timestamp_ms),
            failed_at=_at(letter.failed_at_ms),
            stage=letter.stage,
            error_class=letter.error_class,
            error=letter.error,
            replay_attempts=letter.attempts,
            key=key,
            key_base64=key_b64,
            payload=payload,
            payload_base64=payload_b64,
            first_failure=first,
        )


class DeadLetterPage(_Answer):
    """A page of the pending dead letters, in (topic, partition, offset) order."""

    pending: int = Field(description="pending dead letters in all")
    offset: int
    limit: int
    messages: list[DeadLetterModel]


class ConsumedLetters(_Answer):
    """Dead letters handed over and marked consumed: they are not listed as pending again."""

    consumed: int
    messages: list[DeadLetterModel]


class DlqClassCount(_Answer):
    stage: str
    error_class: str
    pending: int
    consumed: int
    replayed: int
    replaying: int


class DlqStats(_Answer):
    """Dead letters by what happened to them, in all and by (stage, error class)."""

    pipeline: str
    table: str
    exists: bool = Field(description="false until the pipeline has created its DLQ table")
    total: int
    pending: int
    consumed: int
    replayed: int
    replaying: int = Field(description="claimed by a replay that did not finish")
    by_class: list[DlqClassCount]

    @classmethod
    def of(
        cls, pipeline: str, table: str, counts: list[ClassCount], totals: DlqTotals | None
    ) -> DlqStats:
        return cls(
            pipeline=pipeline,
            table=table,
            exists=totals is not None,
            total=totals.total if totals else 0,
            pending=totals.pending if totals else 0,
            consumed=totals.consumed if totals else 0,
            replayed=totals.replayed if totals else 0,
            replaying=totals.replaying if totals else 0,
            by_class=[DlqClassCount.model_validate(c) for c in counts],
        )


class PurgeResult(_Answer):
    purged: int = Field(description="dead letters deleted, pending and handled")


class ReplayRequest(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    limit: int | None = Field(default=None, ge=1, description="replay at most this many")
    dry_run: bool = Field(default=False, description="count what would happen; write nothing")


class ReplayFailureCount(_Answer):
    stage: str
    error_class: str
    count: int


class ReplayResult(_Answer):
    """What a replay did (or, with dry_run, would do)."""

    replayed: int
    still_failing: int
    chunks: int
    resumed_chunks: int = Field(description="chunks of an interrupted replay finished first")
    dry_run: bool
    still_failing_by_class: list[ReplayFailureCount]


def _text_or_base64(value: bytes | None) -> tuple[str | None, str | None]:
    if value is None:
        return None, None
    try:
        return value.decode("utf-8"), None
    except UnicodeDecodeError:
        return None, base64.b64encode(value).decode()


def _at(ms: int | None) -> Any:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
