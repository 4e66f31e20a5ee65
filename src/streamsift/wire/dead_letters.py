"""The DLQ routes' bodies: pages of dead letters, stats, consume, purge and replay.

Dead letters carry their key and payload as text when they are UTF-8, else base64 in
`key_base64` / `payload_base64` (as `streamsift dlq show --json` prints them). The API builds
them from the engine's objects (engine/dead_letters.py) with `DeadLetterModel.of` and
`DlqStats.of`, which read them by attribute (the protocols below), so this package does not
import the engine.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import Protocol

from pydantic import Field

from streamsift.wire.base import Answer, Request


class LetterLike(Protocol):
    """What `DeadLetterModel.of` reads of a dead letter (the DLQ store's DeadLetter)."""

    @property
    def topic(self) -> str: ...

    @property
    def partition(self) -> int: ...

    @property
    def offset(self) -> int: ...

    @property
    def kafka_timestamp_ms(self) -> int | None: ...

    @property
    def failed_at_ms(self) -> int: ...

    @property
    def stage(self) -> str: ...

    @property
    def error_class(self) -> str: ...

    @property
    def error(self) -> str: ...

    @property
    def attempts(self) -> int: ...

    @property
    def key(self) -> bytes | None: ...

    @property
    def payload(self) -> bytes | None: ...

    @property
    def origin(self) -> str: ...

    @property
    def origin_error_class(self) -> str: ...

    @property
    def origin_error(self) -> str: ...


class TotalsLike(Protocol):
    """What `DlqStats.of` reads of the totals (engine's DlqTotals)."""

    @property
    def pending(self) -> int: ...

    @property
    def consumed(self) -> int: ...

    @property
    def replayed(self) -> int: ...

    @property
    def replaying(self) -> int: ...

    @property
    def total(self) -> int: ...


class FirstFailure(Answer):
    stage: str
    error_class: str
    error: str


class DeadLetterModel(Answer):
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
    def of(cls, letter: LetterLike) -> DeadLetterModel:
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


class DeadLetterPage(Answer):
    """A page of the pending dead letters, in (topic, partition, offset) order."""

    pending: int = Field(description="pending dead letters in all")
    offset: int
    limit: int
    messages: list[DeadLetterModel]


class ConsumedLetters(Answer):
    """Dead letters handed over and marked consumed: they are not listed as pending again."""

    consumed: int
    messages: list[DeadLetterModel]


class DlqClassCount(Answer):
    stage: str
    error_class: str
    pending: int
    consumed: int
    replayed: int
    replaying: int


class DlqStats(Answer):
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
        cls, pipeline: str, table: str, counts: Sequence[object], totals: TotalsLike | None
    ) -> DlqStats:
        """`counts`: objects with DlqClassCount's fields (the DLQ store's ClassCount)."""
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


class PurgeResult(Answer):
    purged: int = Field(description="dead letters deleted, pending and handled")


class ReplayRequest(Request):
    limit: int | None = Field(default=None, ge=1, description="replay at most this many")
    dry_run: bool = Field(default=False, description="count what would happen; write nothing")


class ReplayFailureCount(Answer):
    stage: str
    error_class: str
    count: int


class ReplayResult(Answer):
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


def _at(ms: int | None) -> datetime | None:
    return None if ms is None else datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
