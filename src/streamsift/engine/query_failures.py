"""Telling how a streaming query failed: one readable line, or a stop that interrupted it.

Our errors raised inside a micro-batch (on the driver or an executor) reach the driver as text
inside a py4j error; the line after the error's class name is what users need, not the trace.
"""

from __future__ import annotations

from typing import Any

from streamsift.engine.errors import PipelineFailed
from streamsift.sinks.errors import SinkConfigError, SinkPermanentError, SinkTransientError
from streamsift.sources.errors import SourceError, SourceUnavailable

# Our errors that reach the driver as text inside a py4j error, from a batch or an executor.
_ERRORS_RAISED_IN_BATCHES = (
    SourceUnavailable,
    SourceError,
    SinkConfigError,
    SinkTransientError,
    SinkPermanentError,
    PipelineFailed,
)


def _text(error: Any) -> str:
    return str(getattr(error, "desc", None) or error)


def was_interrupted(error: Any) -> bool:
    """Did the query fail because a stop interrupted its sink's retries or its jobs?"""
    if error is None:
        return False
    text = _text(error)
    return "RetryInterrupted" in text or "cancelled" in text.lower()


def explain_failure(error: Any) -> PipelineFailed:
    """One readable line (and a hint) for a failed streaming query, not a JVM trace."""
    text = _text(error)
    for cls in _ERRORS_RAISED_IN_BATCHES:
        marker = f"{cls.__name__}: "
        idx = text.rfind(marker)
        if idx >= 0:
            return PipelineFailed(text[idx + len(marker) :].splitlines()[0])
    first = next((ln for ln in text.splitlines() if ln.strip()), text)
    return PipelineFailed(first[:500], "run with --verbose for Spark's full log")
