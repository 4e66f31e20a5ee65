"""Errors raised while reading from a source."""

from __future__ import annotations

from streamsift.errors import PermanentError, TransientError


class SourceError(PermanentError):
    """A source failed permanently (e.g. the topic does not exist)."""


class SourceUnavailable(SourceError, TransientError):
    """A source could not be reached; retrying later may help."""


class RegistryUnavailable(TransientError):
    """The registry did not answer (or answered 5xx) after retries."""
