"""A pipeline on the wire: its record, its status, its history and its table's rows.

Records, statuses and history entries mirror service/core.py's dataclasses field by field
(the API reads them with `from_attributes`). Nothing here holds a secret: documents go out
masked by the service (`***`).
"""

from __future__ import annotations

from datetime import datetime
from enum import Enum
from typing import Any

from pydantic import Field

from streamsift.wire.base import Answer


class _Word(str, Enum):
    """A state that prints as its word (`Running`), as it reads on the wire."""

    def __str__(self) -> str:
        return str(self.value)


# service/lifecycle.py has the transitions between these states.
class State(_Word):
    """A pipeline's state, in GlassFlow's vocabulary."""

    CREATED = "Created"
    RUNNING = "Running"
    STOPPING = "Stopping"
    STOPPED = "Stopped"
    TERMINATING = "Terminating"
    RESUMING = "Resuming"
    RETRYING = "Retrying"
    FAILED = "Failed"


class DesiredState(_Word):
    """What the user asked for last: the service brings a `running` pipeline back after a
    restart of the server."""

    RUNNING = "running"
    STOPPED = "stopped"


class PipelineModel(Answer):
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


class RetryModel(Answer):
    """A transient fault being retried: why, which attempt, and when the next try is."""

    reason: str = Field(description="the error being retried, in one line")
    kind: str = Field(description="the error's class, e.g. SourceUnavailable")
    attempt: int = Field(description="1 for the first retry of this episode")
    limit: int | None = Field(description="retries allowed before Failed (null: no limit)")
    since: datetime = Field(description="when this episode of failures began")
    next_try_at: datetime


class StateSizeModel(Answer):
    """How big a pipeline's state is: its dedup RocksDB on disk, Spark's state stores (a
    join's) in rows and memory."""

    dedup_disk_bytes: int | None = Field(
        default=None, description="bytes on disk of the dedup state (null: no local dedup)"
    )
    spark_state_rows: int = 0
    spark_state_memory_bytes: int = 0


class PipelineStatusModel(Answer):
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
    read: int = Field(
        description="records read from Kafka over the pipeline's life (all runs; reset_state "
        "starts afresh), as are the counts below"
    )
    written: int = Field(description="rows written to ClickHouse")
    duplicates: int = Field(description="records dropped as duplicates")
    dlq: int = Field(description="records written to the DLQ")
    late: int
    late_dropped: int
    filtered: int = Field(
        description="records the filter dropped (single-source pipelines; 0 in a join)"
    )
    batches: int
    rows_per_second: float | None = Field(
        description="throughput: messages read per second of micro-batch time, this run"
    )
    lag: int | None = Field(description="messages behind the end of the topics, all partitions")
    lag_by_partition: dict[str, int] = Field(description="lag by 'topic/partition'")
    last_batch_at: str | None
    last_batch_duration_ms: int | None
    reported_at: str | None = Field(description="when the worker last reported")
    retry: RetryModel | None = Field(description="the retry under way, when it is Retrying")
    dlq_pending: int | None = Field(
        description="dead letters pending in the DLQ table (whichever run wrote them), as last "
        "counted (every 10 s at most, while the pipeline runs); null until counted"
    )
    dlq_pending_at: datetime | None = Field(description="when dlq_pending was counted")
    isolation: str | None = Field(
        default=None,
        description="where this run runs: host (a query in the service's pipeline host) or "
        "process (a worker process of its own)",
    )
    state_size: StateSizeModel | None = Field(
        default=None, description="the size of the pipeline's state, as last reported"
    )


class StatusChangeModel(Answer):
    """One change of state, with its time, the error that caused it and a note."""

    at: datetime
    from_state: State | None
    to_state: State
    error: str | None
    note: str | None


class TableRowsModel(Answer):
    """The pipeline's ClickHouse table: its row count and newest rows."""

    table: str
    exists: bool = Field(description="false until the pipeline has created its table")
    count: int = Field(description="rows in the table")
    columns: list[str] = Field(description="the mapped columns, in mapping order")
    order: str | None = Field(description="the event-time column rows are newest-first by")
    rows: list[list[Any]] = Field(description="the newest rows, one value per column")
