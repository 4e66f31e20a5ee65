"""Alerts set and shown per pipeline in the UI, in chromium (issue 27 item 5, issue 31 item
8): the wizard's review sets a Failed rule with a webhook on loopback (its messages next to
the field once it was changed), deploys, the stored document has the section with its secret
as ***, the pipeline page says the rule in words, and the wizard editing the pipeline shows
the rule again (secret ***) on a 390 px screen without sideways scrolling.

Fixtures (conftest.py): one server and one browser for the module; every page is watched for
console errors, 5xx answers and requests outside loopback.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer

from streamsift.embedded.broker import Broker, free_port

from .conftest import (
    deploy_from_review,
    error_of,
    every_control_labelled,
    next_step,
    no_sideways_scroll,
    open_page,
    shot,
)

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.integration, pytest.mark.ui]

STEPS = ("Deduplication", "Join (optional)", "Filter and computed fields", "ClickHouse")


def test_wizard_sets_a_failed_alert_with_a_webhook_shown_in_words_and_on_a_phone(
    page: Any, browser: Any, broker: Broker, unique_name: str, tmp_path: Path, ui_server: str
) -> None:
    topic = unique_name
    broker.create_topic(topic, partitions=1)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers})
    for i in range(3):
        producer.produce(topic, value=json.dumps({"event_id": f"e{i}", "n": i}).encode())
    assert producer.flush(30) == 0
    hook = f"http://127.0.0.1:{free_port()}/hooks/streamsift"  # loopback; nothing is sent
    secret = "a-long-random-signing-secret"

    page.goto("/#/new")
    page.get_by_label("Bootstrap servers").fill(broker.bootstrap_servers)
    next_step(page, "Topic and sample event")
    page.get_by_label("Topic", exact=True).select_option(topic)
    expect(page.get_by_test_id("sample-event")).to_contain_text('"event_id": "e0"')
    for title in STEPS:
        next_step(page, title)
    page.get_by_label("Data directory").fill(str(tmp_path / "clickhouse"))
    page.get_by_label("Table", exact=True).fill(topic)
    next_step(page, "Review and deploy")

    # folded away until asked for; nothing of it in the document meanwhile
    section = page.get_by_test_id("alerts-section")
    expect(section).to_be_hidden()
    page.get_by_role("button", name="Show the YAML").click()
    expect(page.get_by_test_id("review-yaml")).not_to_contain_text("alerts:")
    page.get_by_role("button", name="Set alerts").click()
    expect(section).to_be_visible()
    page.get_by_label("the pipeline has Failed").check()
    page.get_by_role("button", name="Add a webhook").click()
    # an empty new channel: the problem is listed, but not next to a field not yet touched
    expect(page.locator(".message.error")).to_contain_text("alerts.webhooks[0].url")
    expect(error_of(page, "alert-webhook-0-url")).to_have_count(0)
    url = page.get_by_label("Webhook 1 URL")
    url.fill("ftp://127.0.0.1/hook")
    expect(error_of(page, "alert-webhook-0-url")).to_have_text(
        "scheme 'ftp' is not allowed: use http or https"
    )
    url.fill(hook)
    expect(error_of(page, "alert-webhook-0-url")).to_have_count(0)
    page.get_by_label("Webhook 1 signing secret").fill(secret)
    expect(error_of(page, "alert-webhook-0-secret")).to_have_count(0)
    host = hook.split("/")[2]
    expect(page.get_by_test_id("review-summary")).to_contain_text(
        f"Alerts when it has Failed, via webhook {host}."
    )
    review = page.get_by_test_id("review-yaml")
    for text in ("alerts:", "failed: true", f"url: {hook}", "secret:"):
        expect(review).to_contain_text(text)
    expect(review).not_to_contain_text(secret)
    every_control_labelled(page)
    no_sideways_scroll(page)
    shot(page, "wizard-alerts")

    name = f"alerts-{topic.replace('_', '-')}"[:60]
    deploy_from_review(page, name)
    document = httpx.get(f"{ui_server}/api/v1/pipelines/{name}/document", timeout=30).json()
    assert document["alerts"] == {
        "failed": True,
        "webhooks": [{"url": hook, "secret": "***"}],
    }, document.get("alerts")
    rules = page.get_by_test_id("alert-rules")
    expect(rules).to_have_text(f"Alerts when it has Failed, via webhook {host}.")
    expect(page.get_by_role("heading", name="What alerted")).to_be_visible()
    every_control_labelled(page)
    shot(page, "pipeline-alerts")

    # the wizard editing it, on a phone: the stored rule and its secret as *** (kept unless
    # typed again), the section open, nothing wider than the screen
    with open_page(browser, ui_server, 390, 844) as phone:
        phone.goto(f"/#/p/{name}/wizard")
        expect(phone.get_by_role("heading", name=f"Edit {name}")).to_be_visible()
        next_step(phone, "Topic and sample event")
        for title in (*STEPS, "Review and deploy"):
            next_step(phone, title)
        expect(phone.get_by_role("button", name="Hide the alert settings")).to_be_visible()
        expect(phone.get_by_label("the pipeline has Failed")).to_be_checked()
        expect(phone.get_by_label("Webhook 1 URL")).to_have_value(hook)
        expect(phone.get_by_label("Webhook 1 signing secret")).to_have_value("***")
        expect(phone.locator("#alert-webhook-0-secret-help")).to_contain_text("leave *** to keep")
        phone.get_by_label("it has been Retrying for a while").check()
        expect(phone.get_by_label("Retrying for more than (minutes)")).to_have_value("5")
        phone.get_by_role("button", name="Add an e-mail channel").click()
        expect(phone.get_by_label("E-mail 1 SMTP port")).to_have_value("587")
        no_sideways_scroll(phone)
        every_control_labelled(phone)
        shot(phone, "phone-wizard-alerts")
        phone.get_by_role("button", name="remove e-mail 1").click()
        expect(phone.get_by_test_id("review-summary")).to_contain_text(
            f"Alerts when it has been Retrying for more than 5 minutes, via webhook {host}."
        )
