"""Errors raised while running a pipeline."""

from __future__ import annotations


class RuntimeConfigError(RuntimeError):
    """The machine is missing something the pipeline needs (Java, Python version...)."""


class PipelineFailed(RuntimeError):
    """The streaming query stopped with an error; `hint` says what to do about it."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.hint = hint
