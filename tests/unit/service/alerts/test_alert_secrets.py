"""The alert channels' secrets (the webhook's HMAC secret, the SMTP password, the Slack URL)
are sealed at rest, masked in what the service answers, kept through an edit that sends
them back masked; and what a document may send to (service/document_policy.py)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.secrets import MASK, secret_values
from streamsift.service.database import DB_FILE, ServiceDatabase
from streamsift.service.document_policy import DocumentPolicy
from streamsift.service.edits import keep_masked_secrets
from support.pipeline_docs import fields, mapping, pipeline_doc

HMAC_SECRET = "hmac-Secret-8Kp2"
SLACK_URL = "https://hooks.slack.com/services/T0/B0/slackSecret3Jw"
SMTP_PASSWORD = "smtp-Secret-5Rn7"


def document(alerts: dict | None = None, clickhouse: Path | None = None) -> dict:
    return pipeline_doc(
        name="alerting",
        bootstrap_servers="kafka.example:9092",
        topic="events",
        fields=fields(("event_id", "string")),
        clickhouse={"path": str(clickhouse or "/tmp/unused")},
        mapping=mapping(("event_id", "event_id", "String")),
        alerts=alerts
        or {
            "failed": True,
            "webhooks": [{"url": "https://hooks.example/streamsift", "secret": HMAC_SECRET}],
            "slack": [{"webhook_url": SLACK_URL}],
            "email": [
                {
                    "host": "smtp.example.com",
                    "username": "alerts",
                    "password": SMTP_PASSWORD,
                    "from": "streamsift@example.com",
                    "to": ["ops@example.com"],
                }
            ],
        },
    )


SECRETS = (HMAC_SECRET, SLACK_URL, SMTP_PASSWORD)


def test_alert_secrets_are_sealed_at_rest_masked_in_answers_and_open_for_the_server(
    tmp_path: Path,
):
    doc = document()
    model = parse_pipeline(doc)
    assert set(SECRETS) <= set(secret_values(model))
    for text in (repr(model), str(model), model.model_dump_json()):
        assert not any(s in text for s in SECRETS)
    database = ServiceDatabase(tmp_path)
    database.add("alerting", doc, model)
    with sqlite3.connect(tmp_path / DB_FILE) as raw:
        stored = " ".join(r[0] for r in raw.execute("SELECT document FROM pipeline_versions"))
    assert "hooks.example" in stored  # the webhook's URL is not a secret; its key is
    assert not any(s in stored for s in SECRETS) and "slackSecret" not in stored
    answered = database.document("alerting")
    alerts = answered["alerts"]
    assert alerts["webhooks"][0]["secret"] == MASK
    assert alerts["slack"][0]["webhook_url"] == MASK
    assert alerts["email"][0]["password"] == MASK
    opened = database.document("alerting", reveal_secrets=True)
    assert opened["alerts"]["slack"][0]["webhook_url"] == SLACK_URL
    assert opened["alerts"]["webhooks"][0]["secret"] == HMAC_SECRET
    database.close()


def test_an_edit_sending_the_masked_secrets_back_keeps_them():
    current_doc = document()
    current = parse_pipeline(current_doc)
    sent = document()
    sent["alerts"]["webhooks"][0]["secret"] = MASK
    sent["alerts"]["slack"][0]["webhook_url"] = MASK
    sent["alerts"]["email"][0]["password"] = MASK
    sent["alerts"]["failed"] = False
    kept = keep_masked_secrets(sent, parse_pipeline(sent), current_doc, current)
    assert kept["alerts"]["slack"][0]["webhook_url"] == SLACK_URL
    assert kept["alerts"]["email"][0]["password"] == SMTP_PASSWORD
    assert kept["alerts"]["failed"] is False


def test_the_policy_keeps_alerts_inside_allow_connect(tmp_path: Path):
    doc = document(clickhouse=tmp_path / "ch")
    DocumentPolicy(tmp_path).check(parse_pipeline(doc))  # no list: anywhere
    policy = DocumentPolicy(tmp_path, allow_connect=("127.0.0.1", ".internal"))
    with pytest.raises(ConfigError) as caught:
        policy.check(parse_pipeline(doc))
    problems = caught.value.problems
    assert (
        "alerts.webhooks[0].url: hooks.example is outside this server's --allow-connect list: "
        "alerts may not be sent there"
    ) in problems
    assert any(p.startswith("alerts.slack[0].webhook_url: its host is outside") for p in problems)
    assert any(p.startswith("alerts.email[0].host: smtp.example.com is outside") for p in problems)
    assert not any("slackSecret" in p for p in problems)
    inside = document(
        {
            "webhooks": [{"url": "http://127.0.0.1:9/hook", "secret": "k"}],
            "email": [
                {"host": "mail.internal", "from": "a@x.internal", "to": ["b@x.internal"]},
            ],
        },
        clickhouse=tmp_path / "ch",
    )
    policy.check(parse_pipeline(inside))
