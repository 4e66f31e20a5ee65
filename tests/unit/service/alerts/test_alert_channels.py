"""The alert channels against real servers on loopback: a webhook receiver that checks the
HMAC signature, a Slack-like incoming webhook, an SMTP server (aiosmtpd); the delivery's
retries with back-off, refusals not retried, and no secret in any log line."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from email import message_from_bytes

import pytest

from streamsift.config.alerts import parse_alerts
from streamsift.embedded.broker import free_port
from streamsift.errors import StreamsiftError
from streamsift.service.alerts.channels import (
    SIGNATURE_HEADER,
    TIMESTAMP_HEADER,
    sender_for,
    signature,
    verify,
)
from streamsift.service.alerts.delivery import Delivery, RetryPolicy
from streamsift.service.alerts.episodes import Episode
from streamsift.service.alerts.notices import Notice
from support.alert_receivers import Mailbox, Receiver
from support.waiting import wait_for

SECRET = "hmac-Secret-4Zt8"
SLACK_PATH = "/services/T000/B000/slackSecretPart9"
T0 = datetime(2026, 11, 28, 4, 0, tzinfo=timezone.utc)
FAST = RetryPolicy(attempts=3, first_backoff_s=0.05, max_backoff_s=0.1)

EPISODE = Episode(
    id=7,
    pipeline_id="orders",
    condition="lag",
    since=T0,
    opened_at=T0,
    figure="lag 12,345 > 10,000",
    reason="Kafka at 127.0.0.1:9092 is slow",
)
ALERT = Notice(EPISODE, resolved=False, state="Running")


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.close()


@pytest.fixture
def smtp() -> Iterator[Mailbox]:
    with Mailbox() as box:
        yield box


def test_the_webhook_is_signed_over_timestamp_and_body(receiver: Receiver):
    channel = parse_alerts({"webhooks": [{"url": f"{receiver.url}/hook", "secret": SECRET}]})
    sender_for(channel.webhooks[0]).send(ALERT)
    [(path, headers, body)] = receiver.got
    assert path == "/hook"
    stamp, signed = headers[TIMESTAMP_HEADER], headers[SIGNATURE_HEADER]
    assert abs(int(stamp) - time.time()) < 60
    assert verify(SECRET, stamp, body, signed)
    assert not verify("another secret", stamp, body, signed)
    assert not verify(
        SECRET, str(int(stamp) - 3600), body, signature(SECRET, str(int(stamp) - 3600), body)
    )
    sent = json.loads(body)
    assert sent["event"] == "alert" and sent["pipeline"] == "orders"
    assert sent["condition"] == "lag" and sent["figure"] == "lag 12,345 > 10,000"
    assert sent["since"] == T0.isoformat() and sent["reason"] == EPISODE.reason
    assert headers["X-Streamsift-Delivery"] == "7-alert"


def test_a_resolution_says_how_long_it_lasted(receiver: Receiver):
    ended = Episode(**{**EPISODE.__dict__, "resolved_at": T0 + timedelta(minutes=12, seconds=5)})
    resolved = Notice(ended, resolved=True, state="Running")
    channel = parse_alerts({"slack": [{"webhook_url": receiver.url + SLACK_PATH}]})
    sender_for(channel.slack[0]).send(resolved)
    [(path, headers, body)] = receiver.got
    assert path == SLACK_PATH and headers["Content-Type"] == "application/json"
    text = json.loads(body)["text"]
    assert text.startswith("RESOLVED: streamsift pipeline orders: no longer lagging")
    assert "lasted 12m5s" in text


def test_e_mail_reaches_the_smtp_server(smtp: Mailbox):
    channel = parse_alerts(
        {
            "email": [
                {
                    "host": "127.0.0.1",
                    "port": smtp.port,
                    "security": "none",
                    "from": "streamsift@example.com",
                    "to": ["ops@example.com", "oncall@example.com"],
                }
            ]
        }
    )
    sender_for(channel.email[0]).send(ALERT)
    [envelope] = smtp.messages
    assert envelope.mail_from == "streamsift@example.com"
    assert envelope.rcpt_tos == ["ops@example.com", "oncall@example.com"]
    mail = message_from_bytes(envelope.content)
    assert mail["Subject"].startswith("ALERT: streamsift pipeline orders lagging since")
    body = mail.get_payload(decode=True).decode()
    assert "lag 12,345 > 10,000" in body and "reason: Kafka at 127.0.0.1:9092 is slow" in body


def test_delivery_retries_a_5xx_with_back_off_and_drops_a_4xx(receiver: Receiver, caplog):
    caplog.set_level(logging.INFO, "streamsift.service.alerts")
    url = receiver.url + SLACK_PATH
    slack = sender_for(parse_alerts({"slack": [{"webhook_url": url}]}).slack[0])
    delivery = Delivery(FAST)
    receiver.answers[:] = [503, 500]  # then 200
    delivery.submit("slack", slack, ALERT)
    wait_for(lambda: len(receiver.got) == 3 and delivery.idle(), 10, what="three tries")
    receiver.answers[:] = [400]
    delivery.submit("slack", slack, ALERT)
    wait_for(lambda: len(receiver.got) == 4 and delivery.idle(), 10, what="one try")
    time.sleep(0.3)
    assert len(receiver.got) == 4  # a refusal is not tried again
    receiver.answers[:] = [500, 500, 500, 500]
    delivery.submit("slack", slack, ALERT)
    wait_for(lambda: len(receiver.got) == 7 and delivery.idle(), 10, what="three tries")
    delivery.close()
    assert "HTTP 400 (not retried)" in caplog.text and "after 3 tries" in caplog.text
    assert "slackSecretPart9" not in caplog.text  # the URL is a secret: named by host only


def test_an_unreachable_channel_does_not_hold_up_the_others(receiver: Receiver, caplog):
    dead = parse_alerts(
        {"webhooks": [{"url": f"http://127.0.0.1:{free_port()}/x", "secret": SECRET}]}
    )
    alive = parse_alerts({"webhooks": [{"url": receiver.url, "secret": SECRET}]})
    delivery = Delivery(RetryPolicy(attempts=5, first_backoff_s=1, max_backoff_s=1))
    started = time.monotonic()
    delivery.submit("dead", sender_for(dead.webhooks[0]), ALERT)
    delivery.submit("alive", sender_for(alive.webhooks[0]), ALERT)
    assert time.monotonic() - started < 0.5  # submitting never waits for a channel
    wait_for(lambda: len(receiver.got) == 1, 5, what="the live channel")
    delivery.close(drain_s=0.2)  # interrupts the dead one's back-off
    assert SECRET not in caplog.text


def test_a_sender_raises_the_errors_kinds():
    port = free_port()  # nothing listens
    channel = parse_alerts(
        {
            "email": [
                {"host": "127.0.0.1", "port": port, "security": "none"}
                | {"from": "a@example.com", "to": ["b@example.com"], "timeout": "2s"}
            ]
        }
    )
    with pytest.raises(StreamsiftError) as caught:
        sender_for(channel.email[0]).send(ALERT)
    assert caught.value.kind.value == "transient"
    assert f"email 127.0.0.1:{port}" in caught.value.message
