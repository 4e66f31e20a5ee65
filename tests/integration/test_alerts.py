"""Alerts end to end: `streamsift serve --alerts FILE` on loopback with a webhook receiver
that checks the HMAC signature, a Slack-like hook named by the pipeline's own `alerts:` and an
SMTP server (aiosmtpd). A pipeline that fails (its table does not exist and it may not create
it) gives exactly one alert per channel; a restart of the server gives none; the fix (an edit
that lets it create the table) and a resume give exactly one resolution per channel; three
dead letters then trip the pipeline's own DLQ-growth rule: one alert and, once the DLQ stops
growing, one resolution per channel.

One server and one pipeline: the resume costs one Spark start-up.
"""

from __future__ import annotations

import contextlib
import time
from email import message_from_bytes
from pathlib import Path

import pytest
import yaml

from streamsift.embedded.broker import Broker
from streamsift.sdk import Client, Conflict
from support.alert_receivers import Mailbox, Receiver
from support.servers import Serve
from support.service_pipeline import START_TIMEOUT_S, pipeline_doc, produce
from support.waiting import wait_for

pytestmark = pytest.mark.integration

HMAC_SECRET = "hmac-Secret-Integ-6Tq"
SLACK_PART = "/services/T1/B1/slackSecretIntegX"
CHECK_EVERY_S = 0.5


def counts(hook: Receiver, slack: Receiver, mailbox: Mailbox) -> tuple[int, int, int]:
    return len(hook.got), len(slack.got), len(mailbox.messages)


def test_a_failure_alerts_once_per_channel_and_its_fix_resolves_once(
    broker: Broker, tmp_path: Path
) -> None:
    name = "alerted"
    broker.create_topic(name, 1)
    hook, slack = Receiver(secret=HMAC_SECRET), Receiver()
    with Mailbox() as mailbox:
        alerts_file = tmp_path / "alerts.yaml"
        alerts_file.write_text(
            yaml.safe_dump(
                {
                    "failed": True,
                    "webhooks": [{"url": f"{hook.url}/alerts", "secret": HMAC_SECRET}],
                    "email": [
                        {
                            "host": "127.0.0.1",
                            "port": mailbox.port,
                            "security": "none",
                            "from": "streamsift@example.com",
                            "to": ["ops@example.com"],
                        }
                    ],
                }
            )
        )
        data_dir = tmp_path / "data"
        server = Serve(
            data_dir,
            tmp_path / "serve.log",
            ["--alerts", str(alerts_file), "--alerts-interval", str(CHECK_EVERY_S)],
        )
        doc = pipeline_doc(name, broker, {"path": str(data_dir / "clickhouse")})
        doc["sink"]["create_table"] = False  # no table: a permanent failure at start
        doc["alerts"] = {  # its own channel and rule, beside the server's
            "slack": [{"webhook_url": slack.url + SLACK_PART}],
            "dlq_growth": {"by": 3, "within": "4s"},
        }
        server.start()
        try:
            with server.client() as client:
                client.create(doc)
                wait_for(
                    lambda: counts(hook, slack, mailbox) == (1, 1, 1),
                    START_TIMEOUT_S,
                    what="one alert per channel",
                    log=server.log,
                )
                assert client.get(name).state == "Failed"
                error = client.get(name).error
                [alert] = hook.bodies()
                assert (alert["event"], alert["pipeline"], alert["condition"]) == (
                    "alert",
                    name,
                    "failed",
                )
                assert alert["reason"] == error and "create_table" in error
                assert alert["since"] == client.history(name)[-1].at.isoformat()
                [(path, _, _)] = slack.got
                assert path == SLACK_PART
                mail = message_from_bytes(mailbox.messages[0].content)
                assert mail["Subject"].startswith(f"ALERT: streamsift pipeline {name} failed")
                assert hook.forged == []
                [episode] = client.alerts(name)  # the API's view: one open episode
                assert (episode.condition, episode.resolved_at) == ("failed", None)
                assert episode.id == alert["episode"] and episode.reason == error
                time.sleep(6 * CHECK_EVERY_S)
                assert counts(hook, slack, mailbox) == (1, 1, 1)  # still Failed: no more

            server.stop()  # a restart neither alerts again nor forgets the open episode
            server.start()
            with server.client() as client:
                time.sleep(6 * CHECK_EVERY_S)
                assert counts(hook, slack, mailbox) == (1, 1, 1)

                fixed = client.document(name)  # secrets come back masked, and are kept
                fixed["sink"]["create_table"] = True
                client.edit(name, fixed)
                client.resume(name)
                wait_for(
                    lambda: counts(hook, slack, mailbox) == (2, 2, 2),
                    START_TIMEOUT_S,
                    what="one resolution per channel",
                    log=server.log,
                )
                assert client.get(name).state == "Running"
                resolved = hook.bodies()[1]
                assert (resolved["event"], resolved["episode"]) == ("resolved", alert["episode"])
                assert resolved["duration_seconds"] > 0 and resolved["state"] == "Running"
                assert slack.got[1][0] == SLACK_PART  # the masked Slack URL was kept
                text = slack.bodies()[1]["text"]
                assert text.startswith(f"RESOLVED: streamsift pipeline {name}: no longer failed")
                time.sleep(6 * CHECK_EVERY_S)
                assert counts(hook, slack, mailbox) == (2, 2, 2)
                [episode] = client.alerts(name)
                assert episode.resolved_at is not None and episode.resolved_figure == (
                    "state Running"
                )

                # three dead letters: the DLQ grew by 3 (the pipeline's rule), then stays
                produce(broker, name, range(0), extra=(b"{not json",) * 3)
                wait_for(
                    lambda: counts(hook, slack, mailbox) == (3, 3, 3),
                    START_TIMEOUT_S,
                    what="one DLQ alert per channel",
                    log=server.log,
                )
                grew = hook.bodies()[2]
                assert (grew["event"], grew["condition"]) == ("alert", "dlq_growth")
                assert grew["figure"].startswith("DLQ +3 within 4s (bound 3)")
                wait_for(
                    lambda: counts(hook, slack, mailbox) == (4, 4, 4),
                    30,
                    what="the DLQ alert resolved",
                    log=server.log,
                )
                assert hook.bodies()[3]["event"] == "resolved"
                time.sleep(6 * CHECK_EVERY_S)
                assert counts(hook, slack, mailbox) == (4, 4, 4)
                with contextlib.suppress(Conflict):
                    client.terminate(name)
            log = server.text()
            assert HMAC_SECRET not in log and "slackSecretInteg" not in log
        finally:
            # best effort: leave no worker behind (serve's shutdown keeps pipelines running)
            with contextlib.suppress(Exception), Client(server.url) as client:  # noqa: BLE001
                client.terminate(name)
            server.stop()
            hook.close()
            slack.close()
