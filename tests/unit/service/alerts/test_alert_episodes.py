"""Alert episodes in the service's SQLite file (service/alerts/episodes.py) and the watch's
rounds over them (service/alerts/watch.py): one alert when a condition starts to hold, none
while it holds, one resolution when it ends, nothing again after a restart."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

from streamsift.config.alerts import parse_alerts
from streamsift.errors import NotFoundError
from streamsift.service.alerts.episodes import Episodes
from streamsift.service.alerts.watch import AlertWatch
from streamsift.service.document_policy import DocumentPolicy

T0 = datetime(2026, 11, 28, 4, 0, tzinfo=timezone.utc)


def test_one_open_episode_per_pipeline_and_condition_kept_across_a_reopen(tmp_path: Path):
    episodes = Episodes(tmp_path)
    first = episodes.begin("p", "lag", T0, T0, "lag 12,345 > 10,000", None)
    assert first is not None and first.open
    assert episodes.begin("p", "lag", T0, T0, "again", None) is None  # open already
    assert episodes.begin("p", "failed", T0, T0, "state Failed", "boom") is not None
    episodes.close()

    reopened = Episodes(tmp_path)  # a server restart
    assert set(reopened.open_episodes()) == {("p", "lag"), ("p", "failed")}
    ended = reopened.end(first.id, T0 + timedelta(minutes=3), "lag 10 <= 10,000")
    assert ended is not None and ended.resolved_at == T0 + timedelta(minutes=3)
    assert reopened.end(first.id, T0, None) is None  # resolved once only
    again = reopened.begin("p", "lag", T0, T0, "a new stay", None)
    assert again is not None and again.id != first.id
    assert [e.condition for e in reopened.of_pipeline("p")] == ["lag", "failed", "lag"]


@dataclass
class Change:
    at: datetime
    to_state: str


@dataclass
class Record:
    id: str
    version: int = 1


@dataclass
class Status:
    state: str
    error: str | None = None
    lag: int | None = None
    dlq: int = 0


@dataclass
class Stand:
    """Stands in for PipelineService: the calls the watch makes, with states set by the test
    (running real pipelines is the integration test's job)."""

    data_dir: Path
    docs: dict[str, dict[str, Any]] = field(default_factory=dict)
    statuses: dict[str, Status] = field(default_factory=dict)
    histories: dict[str, list[Change]] = field(default_factory=dict)
    allow_connect: tuple[str, ...] = ()

    @property
    def policy(self) -> DocumentPolicy:
        return DocumentPolicy(self.data_dir, allow_connect=self.allow_connect)

    def list(self) -> list[Record]:
        return [Record(pid) for pid in self.statuses]

    def status(self, pipeline_id: str) -> Status:
        if pipeline_id not in self.statuses:
            raise NotFoundError(f"no pipeline {pipeline_id}")
        return self.statuses[pipeline_id]

    def history(self, pipeline_id: str) -> list[Change]:
        return self.histories.get(pipeline_id, [])

    def document(self, pipeline_id: str, reveal_secrets: bool = False) -> dict[str, Any]:
        return self.docs[pipeline_id]

    def go(self, pipeline_id: str, state: str, at: datetime, error: str | None = None) -> None:
        self.statuses[pipeline_id] = Status(state, error)
        self.histories.setdefault(pipeline_id, []).append(Change(at, state))


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> datetime:
        return self.now


def watch(stand: Stand, clock: Clock, server: dict[str, Any] | None = None) -> AlertWatch:
    rules = parse_alerts(server) if server is not None else None
    return AlertWatch(stand, rules, clock=clock)  # type: ignore[arg-type]


def test_a_failure_alerts_once_survives_a_restart_and_resolves_once(tmp_path: Path):
    clock, stand = Clock(), Stand(tmp_path)
    stand.docs["p"] = {"not": "a pipeline"}  # no alerts of its own: the server's apply
    stand.go("p", "Running", T0)
    first = watch(stand, clock, {"failed": True})
    assert first.check() == []
    clock.now = T0 + timedelta(seconds=10)
    stand.go("p", "Failed", clock.now, error="table t does not exist")
    [alert] = first.check()
    assert (alert.event, alert.episode.condition, alert.episode.since) == (
        "alert",
        "failed",
        clock.now,
    )
    assert "table t does not exist" in alert.text()
    assert "ALERT: streamsift pipeline p failed since 2026-11-28 04:00:10 UTC" in alert.line()
    assert first.check() == []  # still Failed: nothing more
    first.close()

    second = watch(stand, clock, {"failed": True})  # a restarted server
    assert second.check() == []
    stand.go("p", "Resuming", clock.now)
    assert second.check() == []  # it may fail again: cannot tell yet
    clock.now = T0 + timedelta(minutes=2, seconds=15)
    stand.go("p", "Running", clock.now)
    [resolved] = second.check()
    assert resolved.event == "resolved" and resolved.lasted == timedelta(minutes=2, seconds=5)
    assert "lasted 2m5s" in resolved.line() and "now state Running" in resolved.line()
    assert second.check() == []
    second.close()


def test_a_pipelines_own_rules_apply_and_a_deleted_pipelines_episode_ends(tmp_path: Path):
    from support.pipeline_docs import fields, mapping, pipeline_doc

    clock, stand = Clock(), Stand(tmp_path)
    stand.docs["q"] = pipeline_doc(
        name="q",
        fields=fields(("event_id", "string")),
        mapping=mapping(("event_id", "event_id", "String")),
        alerts={"lag": {"above": 100}},
    )
    stand.statuses["q"] = Status("Running", lag=5000)
    w = watch(stand, clock)
    [alert] = w.check()
    assert alert.episode.figure == "lag 5,000 > 100"
    del stand.statuses["q"]  # deleted
    [resolved] = w.check()
    assert resolved.resolved and resolved.episode.resolved_figure == "the pipeline was deleted"
    assert w.check() == []
    w.close()


def test_a_stored_channel_the_servers_allow_connect_now_refuses_is_not_used(tmp_path: Path):
    from support.pipeline_docs import fields, mapping, pipeline_doc

    hooks = [
        {"url": "http://127.0.0.1:9/hook", "secret": "k"},
        {"url": "https://elsewhere.example/hook", "secret": "k"},
    ]
    stand = Stand(tmp_path, allow_connect=("127.0.0.1",))
    stand.docs["r"] = pipeline_doc(
        name="r",
        fields=fields(("event_id", "string")),
        mapping=mapping(("event_id", "event_id", "String")),
        alerts={"failed": True, "webhooks": hooks},
    )
    stand.statuses["r"] = Status("Running")
    w = watch(stand, Clock())
    rules = w._document_rules("r", 1)
    assert rules is not None and [h.url for h in rules.webhooks] == [hooks[0]["url"]]
    w.close()
