"""The pure parts of stopping: the stop flag, retries that honour it, the sink's timeout."""

from __future__ import annotations

import os
import signal
import threading

import pytest
import yaml

from streamsift.config import ConfigError, parse_pipeline
from streamsift.engine.signals import StopFlag, StopRequested
from streamsift.sinks.clickhouse.client import short_reason
from streamsift.sinks.errors import SinkTransientError
from streamsift.sinks.retry import RetryInterrupted, RetryPolicy, RetryStatus
from support.paths import EXAMPLES


def test_a_set_flag_ends_the_retry_back_off():
    flag = StopFlag()
    calls = []

    def failing() -> None:
        calls.append(1)
        flag.set()  # e.g. a SIGTERM from another thread while the first attempt runs
        raise SinkTransientError("connection refused")

    with pytest.raises(RetryInterrupted, match="stopped while retrying: connection refused"):
        RetryPolicy(initial_s=60, give_up_after_s=600).run(failing, "insert", stop=flag)
    assert calls == [1]


def test_a_signal_inside_an_interruptible_section_raises_there():
    flag = StopFlag()
    previous = signal.signal(signal.SIGUSR1, lambda *_: flag.set())
    try:
        with pytest.raises(StopRequested), flag.interruptible():
            os.kill(os.getpid(), signal.SIGUSR1)
            flag.wait(30)  # the handler interrupts this wait
        assert flag.is_set()
    finally:
        signal.signal(signal.SIGUSR1, previous)


def test_a_set_from_another_thread_only_sets_the_flag():
    flag = StopFlag()
    with flag.interruptible():
        other = threading.Thread(target=flag.set)
        other.start()
        other.join()
        assert flag.wait(1)
    with pytest.raises(StopRequested), flag.interruptible():
        pass  # a stop already requested ends the next start-up step at once


def test_short_reason_keeps_the_gist_of_a_connection_error():
    text = (
        "Error HTTPConnectionPool(host='127.0.0.1', port=1): Max retries exceeded with url: / "
        "(Caused by NewConnectionError(\"HTTPConnection(host='127.0.0.1', port=1): Failed to "
        'establish a new connection: [Errno 111] Connection refused"))'
    )
    assert short_reason(Exception(text)) == "Connection refused"


def test_sink_connect_timeout_defaults_to_30s_and_names_its_field():
    doc = yaml.safe_load((EXAMPLES / "users-dedup.yaml").read_text())
    assert parse_pipeline(doc).sink.connect_timeout.total_seconds() == 30
    doc["sink"]["connect_timeout"] = "5s"
    assert parse_pipeline(doc).sink.connect_timeout.total_seconds() == 5
    doc["sink"]["connect_timeout"] = "soon"
    with pytest.raises(ConfigError, match="sink.connect_timeout"):
        parse_pipeline(doc)


def test_the_retry_status_is_cleared_when_the_action_recovers():
    statuses: list[RetryStatus | None] = []
    attempts = iter([SinkTransientError("refused"), None])

    def flaky() -> str:
        error = next(attempts)
        if error:
            raise error
        return "ok"

    policy = RetryPolicy(initial_s=0.01, log_episodes=False)
    assert policy.run(flaky, "connecting", on_wait=statuses.append, operation="connect") == "ok"
    assert statuses[-1] is None
    assert statuses[0] == RetryStatus("connect", "connecting", 1, "SinkTransientError", "refused")
    assert statuses[0].text == "connecting: retrying after transient error: refused"
