"""Telling how a streaming query failed: which error, of which kind, in one readable line.

Our errors raised inside a micro-batch (on the driver or an executor) reach the driver as text
inside a py4j error: the class is gone, only `...ClassName: message` survives in the text.
`explain_failure` turns that text back into the error it was, so its kind (transient or
permanent, `streamsift.errors`) crosses the Spark boundary and the worker knows whether to
retry. A process that died under the query (a Python worker, an executor) is transient: the
checkpoint holds, and the query starts again from it. Anything else is an
`UnexplainedFailure`: transient, but retried only a few times.
"""

from __future__ import annotations

from typing import Any

from streamsift.config.errors import RegistryError
from streamsift.engine.errors import PipelineFailed, QueryCrashed, UnexplainedFailure
from streamsift.errors import StreamsiftError
from streamsift.sinks.errors import (
    DlqMissing,
    RetryInterrupted,
    SinkConfigError,
    SinkPermanentError,
    SinkTransientError,
)
from streamsift.sources.errors import RegistryUnavailable, SourceError, SourceUnavailable

# Our errors that reach the driver as text inside a py4j error, from a batch or an executor.
# Subclasses before their bases: the text names the class that was raised.
_ERRORS_RAISED_IN_BATCHES: tuple[type[StreamsiftError], ...] = (
    SourceUnavailable,
    SourceError,
    RegistryUnavailable,
    RegistryError,
    DlqMissing,
    RetryInterrupted,
    SinkConfigError,
    SinkTransientError,
    SinkPermanentError,
    QueryCrashed,
    PipelineFailed,
)

# Words of Spark and py4j that say a process under the query died, not that the data or the
# configuration is wrong.
_PROCESS_DIED = (
    "Python worker exited unexpectedly",
    "Python worker failed to connect back",
    "ExecutorLostFailure",
    "Py4JNetworkError",
    "Answer from Java side is empty",
    "Connection reset by peer",
    "BrokenPipeError",
    "Broken pipe",
    "Stream closed",  # java.io.IOException: a Python worker Spark reused after it died
    "EOFError",
)
SPARK_LOG_HINT = "run with --verbose for Spark's full log"


def _text(error: Any) -> str:
    return str(getattr(error, "desc", None) or error)


def was_interrupted(error: Any) -> bool:
    """Did the query fail because a stop interrupted its sink's retries or its jobs?"""
    if error is None:
        return False
    text = _text(error)
    return "RetryInterrupted" in text or "cancelled" in text.lower()


def explain_failure(error: Any) -> StreamsiftError:
    """The error a failed streaming query stopped with, as the class it was raised as (one
    readable line, not a JVM trace), so that its kind says whether to retry."""
    text = _text(error)
    found: tuple[int, type[StreamsiftError]] | None = None
    for cls in _ERRORS_RAISED_IN_BATCHES:
        idx = text.rfind(f"{cls.__name__}: ")
        if idx >= 0 and (found is None or idx > found[0]):
            found = (idx, cls)  # the innermost (last) of ours in the text is the cause
    if found is not None:
        idx, cls = found
        message = text[idx + len(cls.__name__) + 2 :].splitlines()[0]
        return cls(message)
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), text)[:500]
    for words in _PROCESS_DIED:
        if words in text:
            return QueryCrashed(
                f"a process of the query died ({words}): {first}",
                "the query starts again from its checkpoint; nothing is lost or doubled",
            )
    return UnexplainedFailure(first, SPARK_LOG_HINT)
