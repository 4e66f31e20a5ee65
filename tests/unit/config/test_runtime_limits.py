"""`runtime.retry` and `runtime.stop_timeout`: defaults, the back-off, and refusals that name
the field."""

from __future__ import annotations

from datetime import timedelta

import pytest

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.runtime_limits import Retry
from support.pipeline_docs import fields, mapping, pipeline_doc


def _doc(**runtime) -> dict:
    return pipeline_doc(
        topic="t",
        fields=fields(("id", "string")),
        mapping=mapping(("id", "id", "String")),
        runtime=runtime,
    )


def test_the_defaults_keep_retrying_with_a_capped_backoff() -> None:
    runtime = parse_pipeline(_doc()).runtime
    assert runtime.retry.max_attempts is None  # the server decides; by default: no limit
    assert runtime.stop_timeout == timedelta(seconds=30)
    waits = [runtime.retry.backoff(n).total_seconds() for n in range(1, 10)]
    assert waits == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    assert Retry().backoff(10_000) == timedelta(seconds=60)  # no overflow on long episodes


def test_retry_and_stop_timeout_are_read_from_the_document() -> None:
    runtime = parse_pipeline(
        _doc(
            retry={"max_attempts": 5, "first_backoff": "500ms", "max_backoff": "5s"},
            stop_timeout="10s",
        )
    ).runtime
    assert runtime.retry.max_attempts == 5
    assert [runtime.retry.backoff(n).total_seconds() for n in (1, 2, 4, 5)] == [0.5, 1, 4, 5]
    assert runtime.stop_timeout == timedelta(seconds=10)


@pytest.mark.parametrize(
    ("retry", "words"),
    [
        ({"max_attempts": -1}, "runtime.retry.max_attempts"),
        ({"first_backoff": "0s"}, "first_backoff"),
        ({"first_backoff": "10s", "max_backoff": "1s"}, "max_backoff"),
        ({"tries": 3}, "runtime.retry.tries"),
    ],
)
def test_bad_retry_settings_name_the_field(retry: dict, words: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(_doc(retry=retry))
    assert words in str(caught.value)


def test_read_timeout_is_a_source_setting() -> None:
    doc = _doc()
    assert parse_pipeline(doc).primary_source.read_timeout == timedelta(minutes=2)
    doc["source"]["read_timeout"] = "5m"
    assert parse_pipeline(doc).primary_source.read_timeout == timedelta(minutes=5)
