"""Telling a failed query's error apart across the Spark boundary: our errors by their class
name in the py4j text (kind kept), a process that died (transient), the unknown (retried a
few times), and a stop that interrupted a batch."""

from __future__ import annotations

import pytest

from streamsift.config.errors import RegistryError
from streamsift.engine.errors import PipelineFailed, QueryCrashed, UnexplainedFailure
from streamsift.engine.query_failures import explain_failure, was_interrupted
from streamsift.errors import ErrorKind
from streamsift.sinks.errors import SinkConfigError, SinkPermanentError, SinkTransientError
from streamsift.sources.errors import SourceError, SourceUnavailable

# The shape Spark gives a Python error raised in an executor's task, trimmed.
EXECUTOR_TEXT = """
An exception was thrown from the Python worker. Please see the stack trace below.
Traceback (most recent call last):
  File "/x/streamsift/sources/kafka_range.py", line 200, in read_range
    raise {name}(
streamsift.sources.errors.{name}: {message}

\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(...)
\tat org.apache.spark.sql.execution.python.PythonArrowOutput$$anon$1.read(...)
"""


@pytest.mark.parametrize(
    ("cls", "kind"),
    [
        (SourceUnavailable, ErrorKind.TRANSIENT),
        (SourceError, ErrorKind.PERMANENT),
        (SinkTransientError, ErrorKind.TRANSIENT),
        (SinkPermanentError, ErrorKind.PERMANENT),
        (SinkConfigError, ErrorKind.PERMANENT),
        (RegistryError, ErrorKind.CONFIGURATION),
        (PipelineFailed, ErrorKind.PERMANENT),
    ],
)
def test_our_errors_come_back_as_their_class_with_their_kind(cls, kind) -> None:
    message = "Kafka at 127.0.0.1:9 did not answer: no data from t/0 for 121s"
    error = explain_failure(EXECUTOR_TEXT.format(name=cls.__name__, message=message))
    assert type(error) is cls
    assert error.kind is kind
    assert error.message == message  # one line, not the trace


def test_the_innermost_of_our_errors_is_the_cause() -> None:
    text = "PipelineFailed: the batch failed\nCaused by: ...\n" + EXECUTOR_TEXT.format(
        name="SourceUnavailable", message="broker gone"
    )
    error = explain_failure(text)
    assert isinstance(error, SourceUnavailable) and error.message == "broker gone"


@pytest.mark.parametrize(
    "words",
    [
        "org.apache.spark.SparkException: Python worker exited unexpectedly (crashed)",
        "Job aborted due to stage failure: ExecutorLostFailure (executor driver exited)",
        "py4j.protocol.Py4JNetworkError: Answer from Java side is empty",
    ],
)
def test_a_process_that_died_is_transient(words: str) -> None:
    error = explain_failure(f"\n{words}\n\tat org.apache.spark.scheduler...")
    assert isinstance(error, QueryCrashed) and error.kind is ErrorKind.TRANSIENT
    assert words in error.message
    assert "Traceback" not in error.message and "\tat " not in error.message


def test_an_unknown_error_is_unexplained_with_its_first_line() -> None:
    error = explain_failure("\n\njava.lang.IllegalStateException: odd state\n\tat x.y(Z.java:1)")
    assert isinstance(error, UnexplainedFailure) and error.kind is ErrorKind.TRANSIENT
    assert error.message == "java.lang.IllegalStateException: odd state"
    assert error.hint is not None and "--verbose" in error.hint


def test_a_stop_that_interrupted_a_batch_is_told_apart() -> None:
    assert was_interrupted("... RetryInterrupted: micro-batch 3 given up uncommitted")
    assert was_interrupted("Job 12 cancelled because SparkContext was shut down")
    assert not was_interrupted(None)
    assert not was_interrupted("SinkTransientError: ClickHouse did not answer")


def test_a_reused_python_worker_that_died_is_transient() -> None:
    error = explain_failure(
        "An error occurred while calling o151.load.\n: java.io.IOException: Stream closed"
    )
    assert isinstance(error, QueryCrashed)
