"""Retries reported as typed records: made where the retry happens, read where it is shown."""

from __future__ import annotations

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.runner import PipelineRunner, _during
from streamsift.sinks.errors import SinkTransientError
from streamsift.sinks.retry import RetryPolicy, RetryStatus
from support.pipeline_docs import fields, mapping, pipeline_doc


def test_each_failed_try_is_reported_with_its_operation_and_count():
    statuses: list[RetryStatus | None] = []
    attempts = iter([SinkTransientError("refused"), SinkTransientError("reset"), None])

    def flaky() -> str:
        error = next(attempts)
        if error:
            raise error
        return "ok"

    policy = RetryPolicy(initial_s=0.001, max_s=0.001, log_episodes=False)
    assert policy.run(flaky, "insert into t", statuses.append, operation="insert") == "ok"
    assert [(s.operation, s.attempt, s.error) for s in statuses[:2]] == [
        ("insert", 1, "refused"),
        ("insert", 2, "reset"),
    ]
    assert statuses[2] is None
    assert str(statuses[1]) == "insert into t: retrying after transient error: reset"


@pytest.fixture
def runner(tmp_path):
    doc = pipeline_doc(
        fields=fields(("id", "string")),
        mapping=mapping(("id", "id", "String")),
        clickhouse={"host": "127.0.0.1"},
    )
    return PipelineRunner(parse_pipeline(doc), base_dir=tmp_path, master="local[1]")


def test_the_runner_counts_a_retry_by_its_operation_and_shows_its_text(runner):
    status = RetryStatus("connect", "connecting to h:1", 1, "SinkTransientError", "refused")
    runner._sink_status(status)
    assert runner.stats.retries == {"connect": 1}
    assert runner.stats.status == "connecting to h:1: retrying after transient error: refused"
    assert _during(runner._retrying) == ", while connecting to h:1"
    runner._sink_status(None)  # recovered
    assert runner.stats.status is None and _during(runner._retrying) == ""
    assert runner.stats.retries == {"connect": 1}
