"""Errors raised while reading from a source."""

from __future__ import annotations


class SourceError(RuntimeError):
    """A source failed permanently (e.g. the topic does not exist)."""


class SourceUnavailable(SourceError):
    """A source could not be reached; retrying later may help."""
