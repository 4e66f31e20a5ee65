"""Errors raised while running a pipeline."""

from __future__ import annotations

from streamsift.errors import ConfigurationError, PermanentError


class RuntimeConfigError(ConfigurationError):
    """The machine is missing something the pipeline needs (Java, Python version...)."""


class PipelineFailed(PermanentError):
    """The streaming query stopped with an error; `hint` says what to do about it."""
