"""The background partition-end probe (sources/end_watch.py): about one probe per ask, each
timed to end just before the next ask is due, instead of probing back to back."""

from __future__ import annotations

import threading
import time

import pytest

from streamsift.sources.end_watch import (
    LEAD_S,
    MAX_PAUSE_S,
    PAUSE_S,
    EndWatcher,
    pause_before_next_probe,
)


def test_back_to_back_until_the_pace_of_asks_is_known():
    assert pause_before_next_probe(now=3.0, asked_at=2.9, ask_interval=None, probe_seconds=0.1) == (
        PAUSE_S
    )


def test_the_next_probe_ends_just_before_the_next_ask():
    pause = pause_before_next_probe(now=0.1, asked_at=0.0, ask_interval=0.5, probe_seconds=0.05)
    assert pause == pytest.approx(0.5 - 0.05 - LEAD_S - 0.1)


def test_a_probe_that_ended_just_before_an_ask_waits_for_the_one_after():
    """It already serves the ask due at 0.5: the next probe is for the ask due at 1.0."""
    pause = pause_before_next_probe(now=0.45, asked_at=0.0, ask_interval=0.5, probe_seconds=0.05)
    assert pause == pytest.approx(1.0 - 0.05 - LEAD_S - 0.45)


def test_slow_asks_still_get_an_answer_probed_within_the_longest_pause():
    pause = pause_before_next_probe(now=0.0, asked_at=0.0, ask_interval=5.0, probe_seconds=0.05)
    assert pause == MAX_PAUSE_S


def test_the_watcher_probes_about_once_per_ask_and_answers_fresh():
    probes = []
    closed = threading.Event()

    def probe() -> dict[str, int]:
        probes.append(time.monotonic())
        return {"t/0": len(probes)}

    watcher = EndWatcher(probe, closed.set)
    answers = []
    try:
        for _ in range(12):  # a query asking every 0.2 s, as a 200 ms trigger would
            answers.append(watcher.ends())
            time.sleep(0.2)
    finally:
        watcher.stop()
    assert closed.is_set()
    # back to back, it probed ~45 times in these 2.4 s
    assert len(probes) <= 2 * len(answers) + 4, f"{len(probes)} probes for {len(answers)} asks"
    assert sum(a is not None for a in answers[2:]) >= len(answers[2:]) // 2
