"""The alert conditions judged from statuses (service/alerts/rules.py) and the rules' shape
(config/alerts.py): when each condition holds, cannot be told, or stops holding."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

import pytest

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.alerts import merged, parse_alerts
from streamsift.service.alerts.rules import Judge, Observation, entered_at, growth
from support.pipeline_docs import fields, mapping, pipeline_doc

T0 = datetime(2026, 11, 28, 4, 0, tzinfo=timezone.utc)


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def obs(t: float, state: str = "Running", **kw: object) -> Observation:
    kw.setdefault("state_since", T0)
    return Observation("p", at(t), state, **kw)  # type: ignore[arg-type]


def verdict(judge: Judge, rules: object, o: Observation, condition: str):
    [found] = [f for f in judge.findings(rules, o) if f.condition == condition]  # type: ignore[arg-type]
    return found


def test_failed_holds_while_failed_cannot_be_told_while_starting_and_ends_when_running():
    rules, judge = parse_alerts({"failed": True}), Judge()
    failed = verdict(judge, rules, obs(10, "Failed", error="table t does not exist"), "failed")
    assert (failed.active, failed.since, failed.reason) == (True, T0, "table t does not exist")
    assert verdict(judge, rules, obs(20, "Resuming"), "failed").active is None
    assert verdict(judge, rules, obs(30, "Running"), "failed").active is False
    assert verdict(judge, rules, obs(40, "Stopped"), "failed").active is False


def test_retrying_holds_only_after_its_threshold_from_the_first_retry_of_the_stay():
    @dataclass
    class Change:
        at: datetime
        to_state: str

    history = [Change(at(0), "Running"), Change(at(5), "Retrying"), Change(at(50), "Retrying")]
    since = entered_at(history, "Retrying")
    assert since == at(5)  # Retrying -> Retrying is one stay
    assert entered_at(history, "Running") is None
    rules, judge = parse_alerts({"retrying": {"longer_than": "1m"}}), Judge()
    short = verdict(judge, rules, obs(60, "Retrying", state_since=since), "retrying")
    assert short.active is False
    long = verdict(
        judge, rules, obs(66, "Retrying", state_since=since, error="no broker"), "retrying"
    )
    assert (long.active, long.since, long.reason) == (True, at(5), "no broker")
    assert long.figure == "Retrying for 1m1s (> 1m)"
    assert verdict(judge, rules, obs(70, "Running"), "retrying").active is False
    # no history entry to go by: timed from the first round that saw it Retrying
    assert verdict(judge, rules, obs(100, "Retrying", state_since=None), "retrying").active is False
    late = verdict(judge, rules, obs(161, "Retrying", state_since=None), "retrying")
    assert (late.active, late.since) == (True, at(100))


def test_lag_must_stay_above_its_bound_for_longer_than_and_is_not_judged_while_down():
    rules = parse_alerts({"lag": {"above": 10_000, "longer_than": "30s"}})
    judge = Judge()
    assert verdict(judge, rules, obs(0, lag=12_345), "lag").active is None  # not yet 30 s
    assert verdict(judge, rules, obs(20, lag=9_000), "lag").active is False  # dipped: again
    assert verdict(judge, rules, obs(25, lag=12_345), "lag").active is None
    found = verdict(judge, rules, obs(55, lag=12_345), "lag")
    assert (found.active, found.since) == (True, at(25))
    assert found.figure == "lag 12,345 > 10,000 for 30s"
    assert verdict(judge, rules, obs(60, "Failed", lag=50_000), "lag").active is None
    assert verdict(judge, rules, obs(61, lag=None), "lag").active is None
    assert verdict(judge, rules, obs(70, "Stopped", lag=50_000), "lag").active is False
    now = verdict(judge, rules, obs(80, lag=10_000), "lag")
    assert (now.active, now.figure) == (False, "lag 10,000 <= 10,000")


def test_dlq_growth_counts_rises_inside_its_window_and_never_a_reset():
    rules = parse_alerts({"dlq_growth": {"by": 100, "within": "1m"}})
    judge = Judge()
    assert verdict(judge, rules, obs(0, dlq=500), "dlq_growth").active is None  # a baseline
    assert verdict(judge, rules, obs(10, dlq=560), "dlq_growth").active is None
    found = verdict(judge, rules, obs(20, dlq=620), "dlq_growth")
    assert (found.active, found.since) == (True, at(20))
    assert found.figure == "DLQ +120 within 1m (bound 100); 620 in all"
    # a new run counts from 0 again: not growth; nothing more within a minute: it ends
    assert verdict(judge, rules, obs(40, dlq=0), "dlq_growth").active is True  # +120 still in
    assert verdict(judge, rules, obs(85, dlq=10), "dlq_growth").active is False
    assert growth([(at(0), 5), (at(1), 2), (at(2), 7)]) == 5


def test_after_a_restart_dlq_growth_is_not_told_false_before_it_saw_a_whole_window():
    rules = parse_alerts({"dlq_growth": {"by": 5, "within": "10m"}})
    judge = Judge()  # a new server: no samples
    assert verdict(judge, rules, obs(0, dlq=90), "dlq_growth").active is None
    assert verdict(judge, rules, obs(300, dlq=90), "dlq_growth").active is None
    assert verdict(judge, rules, obs(601, dlq=90), "dlq_growth").active is False


def test_a_condition_without_a_rule_is_false_so_an_open_episode_of_it_ends():
    found = verdict(Judge(), parse_alerts({}), obs(0, "Failed"), "failed")
    assert found.active is False


def test_a_pipelines_rule_replaces_the_servers_per_condition_and_channels_add_up():
    server = parse_alerts(
        {
            "failed": True,
            "lag": {"above": 1000},
            "webhooks": [{"url": "https://hooks.example/a", "secret": "s1"}],
        }
    )
    own = parse_alerts(
        {"lag": {"above": 50}, "failed": False, "slack": [{"webhook_url": "https://h.example/x"}]}
    )
    rules = merged(server, own)
    assert rules.rules_on == ("lag",)
    assert rules.rule("lag").above == 50
    assert [type(c).__name__ for c in rules.channels] == ["WebhookChannel", "SlackChannel"]
    assert merged(server, None) is server
    assert merged(None, None).rules_on == ()


@pytest.mark.parametrize(
    ("alerts", "problem"),
    [
        ({"failed": 1}, "alerts.failed: use true, false or the rule's settings"),
        ({"lag": True}, "alerts.lag: above: required field is missing"),
        ({"dlq_growth": {"within": "0s"}}, "alerts.dlq_growth.within: must be greater than zero"),
        ({"retrying": {"longer_than": "soon"}}, "alerts.retrying.longer_than: 'soon' is not a"),
        (
            {"webhooks": [{"url": "ftp://x.example/", "secret": "s"}]},
            "alerts.webhooks[0].url: scheme 'ftp' is not allowed",
        ),
        ({"webhooks": [{"url": "https://x.example/"}]}, "alerts.webhooks[0].secret: required"),
        (
            {"slack": [{"webhook_url": "gopher://hooks.slack.com/services/T0/B0/XYZ"}]},
            "alerts.slack[0].webhook_url: scheme 'gopher' is not allowed",
        ),
        (
            {"email": [{"host": "smtp.example", "from": "me", "to": ["a@b.example"]}]},
            "alerts.email[0].from: 'me' is not an e-mail address",
        ),
        (
            {
                "email": [
                    {
                        "host": "smtp.example",
                        "security": "none",
                        "username": "u",
                        "password": "p",
                        "from": "me@x.example",
                        "to": ["a@b.example"],
                    }
                ]
            },
            "alerts.email[0]: security: logging in over an unencrypted connection",
        ),
        ({"pager": True}, "alerts.pager: unknown field"),
    ],
)
def test_a_wrong_rule_or_channel_is_named_by_its_field(alerts: dict, problem: str):
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(document(alerts))
    assert any(p.startswith(problem) for p in caught.value.problems), caught.value.problems


def test_a_secret_slack_url_is_not_repeated_in_its_error():
    url = "hooks.slack.com/services/T0/B0/SECRETPART"
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(document({"slack": [{"webhook_url": url}]}))
    assert "SECRETPART" not in str(caught.value)


def document(alerts: dict) -> dict:
    return pipeline_doc(
        name="alerting",
        bootstrap_servers="kafka.example:9092",
        topic="events",
        fields=fields(("event_id", "string")),
        clickhouse={"path": "/tmp/unused"},
        mapping=mapping(("event_id", "event_id", "String")),
        alerts=alerts,
    )
