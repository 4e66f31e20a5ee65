"""Starting a dead worker's pipeline again (service/relaunch.py): after the back-off, counted
against the retry limit, and not at all once the episode is over."""

from __future__ import annotations

import threading
from datetime import timedelta

from streamsift.config.runtime_limits import Retry
from streamsift.service.relaunch import Relaunches

FAST = Retry(first_backoff=timedelta(milliseconds=50), max_backoff=timedelta(milliseconds=200))


def test_a_relaunch_comes_after_the_backoff_and_counts_toward_the_limit() -> None:
    launched = threading.Event()
    relaunches = Relaunches(lambda _pid: launched.set())
    assert relaunches.schedule("p", FAST.model_copy(update={"max_attempts": 2}), None) == (
        1,
        timedelta(milliseconds=50),
    )
    assert launched.wait(5)
    assert relaunches.schedule("p", FAST.model_copy(update={"max_attempts": 2}), None) == (
        2,
        timedelta(milliseconds=100),
    )
    assert relaunches.since("p") is not None
    # the third in a row is over the pipeline's limit: the caller fails the pipeline
    assert relaunches.schedule("p", FAST.model_copy(update={"max_attempts": 2}), None) is None
    assert relaunches.total("p") == 2
    relaunches.close()


def test_the_servers_limit_applies_when_the_pipeline_sets_none() -> None:
    relaunches = Relaunches(lambda _pid: None)
    assert relaunches.schedule("p", FAST, server_limit=1) is not None
    assert relaunches.schedule("p", FAST, server_limit=1) is None
    relaunches.close()


def test_a_pipeline_running_again_starts_a_new_episode_and_cancels_a_pending_relaunch() -> None:
    calls: list[str] = []
    relaunches = Relaunches(calls.append)
    slow = Retry(first_backoff=timedelta(seconds=30))
    relaunches.schedule("p", slow, None)
    relaunches.settled("p")  # stopped (or running again) before the relaunch was due
    assert relaunches.since("p") is None
    assert relaunches.schedule("p", slow, None) == (1, timedelta(seconds=30))  # attempt 1 again
    relaunches.close()  # the server closes: nothing is launched after it
    assert calls == []
