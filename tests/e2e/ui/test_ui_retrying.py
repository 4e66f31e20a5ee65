"""A pipeline retrying a transient fault, as its page says it (issue 27): the state chip says
Retrying, and one message in words says why, which attempt, when the next try is, and that
nothing is lost, instead of an error to act on. Its ClickHouse server is a closed port on
loopback, so the worker retries from its first connect (no Spark query is needed).
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from streamsift.embedded.broker import Broker, free_port
from support.service_pipeline import pipeline_doc
from support.waiting import wait_for

from .conftest import shot

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.integration, pytest.mark.ui]


def test_a_retrying_pipeline_says_why_and_when_it_tries_again(
    page: Any, broker: Broker, unique_name: str, ui_server: str
) -> None:
    name = unique_name.replace("_", "-")
    broker.create_topic(name, 1)
    doc = pipeline_doc(
        name, broker, {"host": "127.0.0.1", "port": free_port()}, connect_timeout="1s"
    )
    doc["runtime"] = {
        "retry": {"first_backoff": "2m", "max_backoff": "2m"}
    }  # the retry stays on screen meanwhile
    api = f"{ui_server}/api/v1/pipelines"
    assert httpx.post(api, json=doc, timeout=60).status_code == 201
    wait_for(
        lambda: httpx.get(f"{api}/{name}", timeout=30).json()["state"] == "Retrying",
        120,
        what="Retrying",
    )

    page.goto(f"/#/p/{name}")
    message = page.locator(".message", has_text="Retrying by itself")
    expect(message).to_contain_text("attempt 1")
    expect(message).to_contain_text("did not answer")
    expect(message).to_contain_text("Nothing is lost")
    expect(page.locator(".message.error", has_text="Last error")).to_have_count(0)
    shot(page, "pipeline-retrying")
    assert httpx.post(f"{api}/{name}/stop", timeout=60).status_code == 200
