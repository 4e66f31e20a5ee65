"""Sink errors, split the way retries need them: transient (retry) vs permanent (don't)."""

from __future__ import annotations

from streamsift.errors import PermanentError, StreamsiftError, TransientError


class SinkError(StreamsiftError):
    """Base of all sink errors."""


class SinkConfigError(SinkError, PermanentError):
    """The target cannot be used as it stands (missing table, unsafe settings...): fix the
    table or the pipeline's sink settings, then run again."""


class SinkTransientError(SinkError, TransientError):
    """Worth retrying: network trouble, overload, too many parts."""


class SinkPermanentError(SinkError, PermanentError):
    """Retrying will not help: the data or the statement is wrong. `code` is ClickHouse's."""

    def __init__(self, message: str, code: int | None = None, hint: str | None = None) -> None:
        super().__init__(message, hint)
        self.code = code


class DlqMissing(SinkConfigError):
    """The pipeline's DLQ table does not exist (yet)."""


class RetryInterrupted(SinkTransientError):
    """A stop was requested while an action was being retried: it was given up, unfinished."""
