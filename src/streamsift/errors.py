"""The one error hierarchy of streamsift: every error it raises on purpose derives from here.

Three kinds, told apart by what the one who sees the error should do:

- `ConfigurationError`: the input is wrong (a pipeline document, a request, a command-line
  value, a machine without Java). Fix it and try again; retrying as is cannot help.
- `TransientError`: something outside did not answer or was busy (a broker, ClickHouse).
  The same call may succeed later; nothing was lost.
- `PermanentError`: the run cannot go on (a refused statement, a failed query). The
  checkpoint is intact, so after fixing the cause a new run resumes where this one stopped.

Each package derives its own errors from these (`config.errors`, `sources.errors`,
`sinks.errors`, `spark_host.errors`, `engine.errors`, `service.errors`). Faces map the kinds
once: the CLI to exit codes (`cli/exit_codes.py`), the API to HTTP statuses
(`api/error_responses.py`). This module imports nothing.
"""

from __future__ import annotations

from enum import Enum

RESUME_HINT = "the checkpoint is intact: fix the cause and run again to resume"


class ErrorKind(str, Enum):
    CONFIGURATION = "configuration"
    TRANSIENT = "transient"
    PERMANENT = "permanent"


class StreamsiftError(Exception):
    """A message for the user, and a hint on what to do about it (or None)."""

    default_hint: str | None = None

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint if hint is not None else self.default_hint

    @property
    def kind(self) -> ErrorKind:
        if isinstance(self, ConfigurationError):
            return ErrorKind.CONFIGURATION
        if isinstance(self, TransientError):
            return ErrorKind.TRANSIENT
        return ErrorKind.PERMANENT


class ConfigurationError(StreamsiftError):
    """The input is wrong: fix it and try again."""


class TransientError(StreamsiftError):
    """Something outside did not answer or was busy: the same call may succeed later."""

    default_hint = RESUME_HINT


class PermanentError(StreamsiftError):
    """The run cannot go on as it is; the checkpoint is intact."""

    default_hint = RESUME_HINT


class NotFoundError(ConfigurationError):
    """A request names something that does not exist (a pipeline, a topic, a table)."""


class ConflictError(ConfigurationError):
    """A request that does not fit the current state (e.g. an illegal lifecycle transition).

    `details` says what the state is and what would be allowed, for the caller to show.
    """

    def __init__(
        self, message: str, hint: str | None = None, details: dict[str, object] | None = None
    ) -> None:
        super().__init__(message, hint)
        self.details = dict(details or {})
