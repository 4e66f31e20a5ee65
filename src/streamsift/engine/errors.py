"""The engine's errors: running a pipeline, and its dead letters (listing, replaying)."""

from __future__ import annotations

from streamsift.errors import ConfigurationError, PermanentError, TransientError


class PipelineFailed(PermanentError):
    """The streaming query stopped with an error; `hint` says what to do about it."""


class QueryCrashed(TransientError):
    """A process the query ran in died (a Python worker, an executor, the JVM's bridge):
    nothing was committed past the checkpoint, so the query is started again from it."""


class UnexplainedFailure(TransientError):
    """The query failed with an error streamsift does not know the kind of: retried a few
    times (`runtime.retry.unexplained_attempts`), then the pipeline fails with it."""


class DlqNotFound(PermanentError):
    """The DLQ table does not exist yet: the pipeline has not run, or dlq.table is wrong."""


class EmbeddedClickHouseBusy(TransientError):
    """Another process holds the embedded ClickHouse directory open."""


class ReplayConflict(PipelineFailed):
    """An interrupted replay ran with another schema or mapping than the pipeline's now."""


class ReplayUnsupported(ConfigurationError):
    """The pipeline does something replay cannot redo without Spark (joins, expressions)."""
