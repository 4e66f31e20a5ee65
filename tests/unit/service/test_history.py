"""The server's time series of pipeline figures (service/history.py): bounded, ordered, rates
from consecutive points, a new run gives no rate, deleted pipelines forgotten."""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace

import pytest

from streamsift.service.history import History, HistoryRecorder


def status(written: int, read: int | None = None, **more: int) -> SimpleNamespace:
    return SimpleNamespace(
        read=written if read is None else read, written=written, duplicates=0, dlq=0, **more
    )


def test_size_stays_bounded_and_the_oldest_go_first() -> None:
    h = History(capacity=5)
    for i in range(12):
        h.record("p", 100.0 + 10 * i, status(i))
    points = h.points("p")
    assert len(points) == 5
    assert [p.written for p in points] == [7, 8, 9, 10, 11]


def test_rates_are_the_servers_between_consecutive_points() -> None:
    h = History()
    h.record("p", 0.0, status(0))
    h.record("p", 10.0, status(150, read=200))
    first, second = h.points("p")
    assert first.written_per_s is None  # nothing to compare with
    assert second.written_per_s == pytest.approx(15.0)
    assert second.read_per_s == pytest.approx(20.0)


def test_a_new_run_has_no_rate_and_a_clock_step_back_is_ignored() -> None:
    h = History()
    h.record("p", 0.0, status(500))
    h.record("p", 10.0, status(20))  # resumed: counts start again from 0
    assert h.latest("p").written_per_s is None
    h.record("p", 5.0, status(30))
    assert [p.t for p in h.points("p")] == [0.0, 10.0]


def test_filtered_and_lag_are_kept_when_reported() -> None:
    h = History()
    h.record("p", 0.0, status(3, filtered=2, lag=7))
    h.record("q", 0.0, status(3))
    assert (h.latest("p").filtered, h.latest("p").lag) == (2, 7)
    assert (h.latest("q").filtered, h.latest("q").lag) == (None, None)


def test_points_since_and_thinned_keep_the_newest() -> None:
    h = History()
    for i in range(100):
        h.record("p", float(i), status(i))
    assert [p.t for p in h.points("p", since=95.0)] == [96.0, 97.0, 98.0, 99.0]
    thinned = h.points("p", limit=10)
    assert len(thinned) == 10 and thinned[0].t == 0.0 and thinned[-1].t == 99.0
    assert [p.t for p in thinned] == sorted(p.t for p in thinned)


def test_capacity_must_be_positive() -> None:
    with pytest.raises(ValueError):
        History(capacity=0)


@dataclass
class Record:
    id: str


class FakeService:
    def __init__(self) -> None:
        self.ids = ["a", "b"]
        self.written = 0

    def list(self) -> list[Record]:
        return [Record(i) for i in self.ids]

    def status(self, pipeline_id: str) -> SimpleNamespace:
        if pipeline_id == "b":
            raise LookupError("deleted meanwhile")
        self.written += 10
        return status(self.written)


def test_the_recorder_samples_every_pipeline_and_forgets_deleted_ones() -> None:
    clock = iter([0.0, 10.0, 20.0])
    h = History()
    h.record("gone", 0.0, status(1))
    service = FakeService()
    recorder = HistoryRecorder(service, h, clock=lambda: next(clock))
    recorder.sample()
    recorder.sample()
    assert h.pipelines() == ["a"]  # b's status failed, gone was deleted
    assert h.latest("a").written_per_s == pytest.approx(1.0)
    service.ids = []
    recorder.sample()
    assert h.pipelines() == []


def test_the_recorder_thread_starts_and_stops() -> None:
    h = History()
    recorder = HistoryRecorder(FakeService(), h, interval_s=0.05)
    recorder.start()
    recorder.stop()
    assert h.latest("a") is not None
