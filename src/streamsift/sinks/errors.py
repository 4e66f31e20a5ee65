"""Sink errors, split the way retries need them: transient (retry) vs permanent (don't)."""

from __future__ import annotations


class SinkError(RuntimeError):
    """Base of all sink errors."""


class SinkConfigError(SinkError):
    """The target cannot be used as configured (missing table, unsafe settings...)."""


class SinkTransientError(SinkError):
    """Worth retrying: network trouble, overload, too many parts."""


class SinkPermanentError(SinkError):
    """Retrying will not help: the data or the statement is wrong. `code` is ClickHouse's."""

    def __init__(self, message: str, code: int | None = None) -> None:
        super().__init__(message)
        self.code = code
