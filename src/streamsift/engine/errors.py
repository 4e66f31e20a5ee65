"""Errors raised while running a pipeline."""

from __future__ import annotations

from streamsift.errors import PermanentError


class PipelineFailed(PermanentError):
    """The streaming query stopped with an error; `hint` says what to do about it."""
