"""The web UI's second round (issue 31) in chromium: defaults that fit the server, "Test
connection" that tells the truth, messages once and in plain words, checks as the user types
or picks a file, a draft that survives a reload, charts drawn from the server's history on a
fresh visit, rates the server measured, a stopped pipeline edited through the wizard's steps,
a review that reads like a summary, search in the list, the dark theme, and a 390 px pass.

Fixtures (conftest.py): one server (history sampled every second) and one browser for the
module; every page is watched for console errors, 5xx answers and requests outside loopback.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer

from streamsift.embedded.broker import Broker, free_port

from .conftest import error_of, every_control_labelled, next_step, no_sideways_scroll, shot

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.integration, pytest.mark.ui]


def event(i: int) -> dict[str, Any]:
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {"event_id": f"e{i:05d}", "n": i, "created_at": now}


def produce(broker: Broker, topic: str, ids: range) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for i in ids:
        producer.produce(topic, key=f"e{i}".encode(), value=json.dumps(event(i)).encode())
    assert producer.flush(30) == 0


@pytest.fixture
def steady_events(broker: Broker, unique_name: str) -> Iterator[str]:
    """A topic with 40 events, then about 20 more a second while the test runs."""
    topic = unique_name
    broker.create_topic(topic, partitions=2)
    produce(broker, topic, range(40))
    halt = threading.Event()

    def run() -> None:
        i = 40
        while not halt.wait(0.25):
            produce(broker, topic, range(i, i + 5))
            i += 5

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    try:
        yield topic
    finally:
        halt.set()
        thread.join(10)


def api_wait(url: str, pipeline: str, ok: Any, what: str, timeout_s: float = 240) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        status = httpx.get(f"{url}/api/v1/pipelines/{pipeline}/status", timeout=30).json()
        if ok(status):
            return
        assert status["state"] != "Failed", status.get("error")
        assert time.monotonic() < deadline, f"{pipeline}: not {what} after {timeout_s} s"
        time.sleep(0.5)


def pipeline_doc(name: str, topic: str, servers: str, path: str) -> dict[str, Any]:
    fields = [("event_id", "string", "String"), ("n", "int", "Int64")]
    fields.append(("created_at", "timestamp", "DateTime64(3, 'UTC')"))
    return {
        "name": name,
        "source": {
            "bootstrap_servers": servers,
            "topic": topic,
            "schema": {
                "fields": [{"name": f, "type": t} for f, t, _ in fields],
                "event_time": "created_at",
            },
        },
        "dedup": {"key": "event_id", "time_window": "1h"},
        "filter": "n % 4 != 0",
        "sink": {
            "clickhouse": {"path": path},
            "table": topic,
            "create_table": True,
            "mapping": [{"field": f, "column": f, "type": c} for f, _, c in fields],
        },
    }


def test_a_running_pipeline_gives_defaults_charts_from_history_and_edits_in_the_wizard(
    page: Any, broker: Broker, steady_events: str, ui_server: str
) -> None:
    topic = steady_events
    name = f"guided-{topic.replace('_', '-')}"[:60]
    defaults = httpx.get(f"{ui_server}/api/v1/ui/defaults", timeout=30).json()
    path = defaults["clickhouse_path"]
    assert path.endswith("/clickhouse")
    answer = httpx.post(
        f"{ui_server}/api/v1/pipelines",
        json=pipeline_doc(name, topic, broker.bootstrap_servers, path),
        timeout=60,
    )
    assert answer.status_code == 201, answer.text
    api_wait(ui_server, name, lambda s: s["written"] > 0, "writing")

    # 5. a fresh visit: the charts are drawn from what the server recorded
    page.goto(f"/#/p/{name}")
    expect(page.get_by_test_id("chart-note")).to_contain_text("as the server recorded them")
    expect(page.locator("figure.chart").first).to_have_attribute(
        "data-points", re.compile(r"^([3-9]|\d{2,})$")
    )
    # 5. the records the filter dropped (every fourth), counted by the server
    expect(page.locator("[data-figure=filtered]")).not_to_have_text(re.compile(r"^[0–]$"))
    every_control_labelled(page)
    shot(page, "pipeline-charts-from-history")

    # 5, 8. the list: rows/s as the server measured them; search and filter
    page.goto("/")
    row = page.locator(f"tr[data-pipeline='{name}']")
    expect(row.locator("td[data-label='Rows/s']")).to_have_text(re.compile(r"^\d"))
    search = page.get_by_label("Search pipelines")
    search.fill(name[-8:])
    expect(row).to_be_visible()
    search.fill("no-such-pipeline")
    expect(row).to_have_count(0)
    expect(page.get_by_text("0 of 1 shown")).to_be_visible()
    search.fill("")
    page.get_by_label("Show", exact=True).select_option("active")
    expect(row).to_be_visible()
    every_control_labelled(page)
    shot(page, "pipelines-search")

    # 1. the wizard starts from this server's broker and embedded ClickHouse
    page.goto("/#/new")
    expect(page.get_by_label("Bootstrap servers")).to_have_value(broker.bootstrap_servers)
    shot(page, "wizard-1-kafka-defaults")
    next_step(page, "Topic and sample event")
    page.get_by_label("Topic", exact=True).select_option(topic)
    expect(page.get_by_test_id("sample-event")).to_contain_text('"event_id": "e')
    next_step(page, "Deduplication")
    # 8. per-partition dedup needs the key as the message key: said on the step
    expect(page.locator("#dedup-partition-note")).to_contain_text("Kafka message key")
    shot(page, "wizard-3-dedup-note")
    next_step(page, "Join (optional)")
    # 3. nothing typed yet: no message, however many fields the join adds
    page.get_by_label("Join with a second topic").check()
    page.wait_for_timeout(800)  # a validation round trip
    expect(page.locator("form.step [role=alert]")).to_have_count(0)
    shot(page, "wizard-join-untouched")
    page.get_by_label("Join with a second topic").uncheck()
    next_step(page, "Filter and computed fields")
    page.get_by_role("button", name="Add a computed field").click()
    page.wait_for_timeout(800)
    expect(page.locator("form.step [role=alert]")).to_have_count(0)
    page.get_by_role("button", name="remove computed field 1").click()
    flt = page.get_by_label("Filter: keep events for which this is true")
    flt.fill("n > 1 and")
    expect(error_of(page, "filter")).to_be_visible()
    said = error_of(page, "filter").inner_text()
    assert "<class" not in said and "sqlglot" not in said and "Required keyword" not in said
    assert page.get_by_text(said, exact=True).count() == 1, f"said more than once: {said}"
    shot(page, "wizard-filter-plain-words")
    flt.fill("")
    next_step(page, "ClickHouse")
    # 1. under the data dir; the table name not the running pipeline's
    expect(page.get_by_label("Data directory")).to_have_value(path)
    expect(page.get_by_label("Table", exact=True)).to_have_value(f"{topic}_2")
    # 2. the directory this server's pipeline writes to is fine, and said so
    page.get_by_role("button", name="Test connection").click()
    expect(page.get_by_text(f"this server's, used by {name}")).to_be_visible()
    shot(page, "wizard-5-clickhouse-shared")
    page.get_by_label("ORDER BY (columns, comma-separated)").fill("n, event_id")

    # 4. a reload keeps the draft, at the step it was on
    page.reload()
    expect(page.get_by_role("heading", name="ClickHouse", exact=True)).to_be_visible()
    expect(page.get_by_label("Table", exact=True)).to_have_value(f"{topic}_2")
    expect(page.get_by_text(re.compile(r"Your draft from .* was kept"))).to_be_visible()
    shot(page, "wizard-kept-after-reload")

    # 7. the review: sentences, the CREATE TABLE it runs, the YAML behind a toggle
    next_step(page, "Review and deploy")
    summary = page.get_by_test_id("review-summary")
    expect(summary).to_contain_text(f"Reads JSON events from the topic {topic}")
    expect(summary).to_contain_text("Drops repeats of the same event_id within 1h")
    ddl = page.get_by_test_id("review-ddl")
    expect(ddl).to_contain_text(f"CREATE TABLE IF NOT EXISTS `default`.`{topic}_2`")
    expect(ddl).to_contain_text("ORDER BY (`n`, `event_id`)")  # as edited, kept by the reload
    expect(page.get_by_test_id("review-yaml")).to_be_hidden()
    page.get_by_role("button", name="Show the YAML").click()
    expect(page.get_by_test_id("review-yaml")).to_contain_text(f"table: {topic}_2")
    every_control_labelled(page)
    shot(page, "wizard-6-review-summary")
    # 4. a taken name is said as it is typed
    page.get_by_label("Pipeline name").fill(name)
    expect(error_of(page, "pipeline-name")).to_contain_text("exists already")
    expect(page.get_by_role("button", name="Deploy")).to_be_disabled()

    # discarded: the wizard starts again from the server's defaults
    page.get_by_role("button", name="Discard draft").click()
    expect(page.get_by_role("heading", name="Kafka connection")).to_be_visible()
    expect(page.get_by_label("Bootstrap servers")).to_have_value(broker.bootstrap_servers)
    # 2. a broker that does not answer keeps the wizard on the step, saying why
    page.get_by_label("Bootstrap servers").fill(f"127.0.0.1:{free_port()}")
    page.get_by_role("button", name="Next", exact=True).click()
    expect(page.get_by_text(re.compile("this step cannot be left yet"))).to_be_visible(
        timeout=30_000
    )
    expect(page.get_by_role("heading", name="Kafka connection")).to_be_visible()
    shot(page, "wizard-kafka-unreachable-blocks")

    # 6. stopped, it opens in the wizard's steps with its values; reset_state named in words
    httpx.post(f"{ui_server}/api/v1/pipelines/{name}/stop", timeout=60)
    api_wait(ui_server, name, lambda s: s["state"] == "Stopped", "stopped", 120)
    page.goto(f"/#/p/{name}")
    page.get_by_role("link", name=f"edit {name} in the wizard").click()
    expect(page.get_by_role("heading", name=f"Edit {name}")).to_be_visible()
    expect(page.get_by_label("Bootstrap servers")).to_have_value(broker.bootstrap_servers)
    next_step(page, "Topic and sample event")
    expect(page.get_by_label("Topic", exact=True)).to_have_value(topic)
    expect(page.get_by_label("Field 1 name")).to_have_value("event_id")
    next_step(page, "Deduplication")
    expect(page.get_by_label("event_id (string)")).to_be_checked()
    page.get_by_label("Time window").fill("2h")
    for title in ("Join (optional)", "Filter and computed fields", "ClickHouse"):
        next_step(page, title)
    expect(page.get_by_label("Table", exact=True)).to_have_value(topic)
    next_step(page, "Review and deploy")
    reasons = page.get_by_test_id("reset-reasons")
    expect(reasons).to_contain_text("The dedup window changes (1h → 2h)")
    save = page.get_by_role("button", name="Save")
    expect(save).to_be_disabled()
    page.get_by_label("Start afresh (reset_state)").check()
    expect(save).to_be_enabled()
    every_control_labelled(page)
    shot(page, "wizard-edit-review")
    save.click()
    expect(page.locator(".message.ok")).to_contain_text("Saved as version 2.")
    document = httpx.get(f"{ui_server}/api/v1/pipelines/{name}/document", timeout=30).json()
    assert document["dedup"]["time_window"] == "2h"
    assert document["sink"]["table"] == topic and document["source"]["topic"] == topic
    assert document["filter"] == "n % 4 != 0"  # kept through the wizard

    # 5. the table's count and "rows written" differ when something else wrote to the table
    # (here: the rows of a pipeline that was there before); the page says why
    # (a fresh start after the edit: the counts begin again, the table keeps its rows)
    page.goto(f"/#/p/{name}")
    expect(page.locator("[data-figure=table-rows]")).to_have_text(re.compile(r"^[\d,]+$"))
    expect(page.locator("[data-figure=written]")).to_have_text(re.compile(r"^[\d,]+$"))
    page.wait_for_timeout(500)  # both figures from the same round of polls
    table_rows = page.locator("[data-figure=table-rows]").inner_text()
    written = page.locator("[data-figure=written]").inner_text()
    note = page.get_by_test_id("count-note")
    if table_rows != written:
        expect(note).to_contain_text("since it was created or last started afresh")
    else:
        expect(note).to_have_count(0)
    shot(page, "pipeline-table-count-note")


def test_an_upload_is_checked_when_picked(
    page: Any, broker: Broker, unique_name: str, tmp_path: Path
) -> None:
    missing = f"{unique_name}_missing"
    doc = pipeline_doc(
        f"up-{unique_name.replace('_', '-')}"[:60],
        missing,
        broker.bootstrap_servers,
        str(tmp_path / "clickhouse"),
    )
    upload = tmp_path / "pipeline.json"
    upload.write_text(json.dumps(doc))
    page.goto("/#/upload")
    page.get_by_label("Pipeline file").set_input_files(str(upload))
    # 4. the topic its brokers do not have, before anything is created
    expect(page.get_by_role("alert")).to_contain_text(f"the topic {missing} does not exist")
    expect(page.get_by_role("button", name="Create pipeline")).to_be_disabled()
    every_control_labelled(page)
    shot(page, "upload-missing-topic")
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: [unclosed\n")
    page.get_by_label("Pipeline file").set_input_files(str(bad))
    expect(page.get_by_role("alert")).to_contain_text("line")
    shot(page, "upload-malformed")


def test_phone_pass_and_dark_theme(phone_page: Any, broker: Broker, unique_name: str) -> None:
    page = phone_page
    topic = unique_name
    broker.create_topic(topic, partitions=1)
    produce(broker, topic, range(3))
    page.goto("/#/new")
    page.get_by_label("Bootstrap servers").fill(broker.bootstrap_servers)
    next_step(page, "Topic and sample event")
    page.get_by_label("Topic", exact=True).select_option(topic)
    expect(page.get_by_test_id("sample-event")).to_contain_text('"event_id": "e00000"')
    no_sideways_scroll(page)
    next_step(page, "Deduplication")
    no_sideways_scroll(page)
    shot(page, "phone-wizard-dedup")
    for title in ("Join (optional)", "Filter and computed fields", "ClickHouse"):
        next_step(page, title)
        no_sideways_scroll(page)
    # 8. each radio's words beside its button, wrapping in their own column
    for radio in ("ch-embedded", "ch-server", "table-create", "table-existing"):
        button = page.locator(f"#{radio}").bounding_box()
        label = page.locator(f"label[for={radio}]").bounding_box()
        assert label["x"] >= button["x"] + button["width"], (radio, button, label)
        assert label["y"] < button["y"] + button["height"], (radio, button, label)
    every_control_labelled(page)
    shot(page, "phone-wizard-clickhouse")
    next_step(page, "Review and deploy")
    no_sideways_scroll(page)
    shot(page, "phone-wizard-review")
    for where, title in (("/", "Pipelines"), ("/#/upload", "Create a pipeline from a file")):
        page.goto(where)
        expect(page.get_by_role("heading", name=title)).to_be_visible()
        no_sideways_scroll(page)
        every_control_labelled(page)
    # a pipeline's page and its dead letters (the module's first test left one)
    page.goto("/")
    page.wait_for_selector("table.pipelines, p.empty")
    link = page.locator("table.pipelines td[data-label=Name] a").first
    if link.count():
        link.click()
        expect(page.get_by_test_id("chart-note")).to_contain_text("as the server recorded them")
        expect(page.get_by_test_id("definition")).to_contain_text("name: ")
        no_sideways_scroll(page)
        every_control_labelled(page)
        shot(page, "phone-pipeline")
        page.locator("[data-figure=dlq] a").click()
        expect(page.get_by_role("heading", name=re.compile("^Dead letters of"))).to_be_visible()
        no_sideways_scroll(page)
        every_control_labelled(page)
    # 8. the system's dark setting is followed
    page.emulate_media(color_scheme="dark")
    page.goto("/#/new")
    expect(page.get_by_role("heading", name="Review and deploy")).to_be_visible()
    background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    assert background == "rgb(11, 18, 32)", background
    shot(page, "phone-wizard-review-dark")
