"""Fixing a pipeline in the UI, in chromium: an edit of a stopped pipeline (validated as you
type, a state-changing edit refused without reset_state), then its dead letters replayed and
purged on the DLQ page; and the wizard mapping onto an existing ClickHouse table (a type
warning, the mapping fixed). Rows are counted exactly in ClickHouse.

Fixtures (conftest.py): one server and one browser for the module; every page is watched for
console errors, 5xx answers and requests outside loopback.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import clickhouse_connect
import httpx
import pytest
from confluent_kafka import Producer

from streamsift.embedded.broker import Broker

from .conftest import (
    deploy_from_review,
    every_control_labelled,
    next_step,
    no_sideways_scroll,
    shot,
    wait_for_text,
)

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.integration, pytest.mark.ui]


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def produce(broker: Broker, topic: str, events: list[dict[str, Any]]) -> None:
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for e in events:
        producer.produce(topic, key=e["event_id"].encode(), value=json.dumps(e).encode())
    assert producer.flush(30) == 0


def wizard_through_topic(page: Any, broker: Broker, topic: str, first_id: str) -> None:
    """The wizard's Kafka and topic steps, up to the dedup step."""
    page.goto("/#/new")
    page.get_by_label("Bootstrap servers").fill(broker.bootstrap_servers)
    page.get_by_role("button", name="Next", exact=True).click()
    page.get_by_label("Topic", exact=True).select_option(topic)
    expect(page.get_by_test_id("sample-event")).to_contain_text(f'"event_id": "{first_id}"')
    page.get_by_role("button", name="Next", exact=True).click()
    expect(page.get_by_role("heading", name="Deduplication")).to_be_visible()


def field_type(page: Any, name: str) -> Any:
    """The type control of the inferred field `name` on the topic step."""
    i = 1
    while page.get_by_label(f"Field {i} name").count():
        if page.get_by_label(f"Field {i} name").input_value() == name:
            return page.get_by_label(f"Field {i} type")
        i += 1
    raise AssertionError(f"no field {name!r} on the topic step")


def test_edit_a_stopped_pipeline_then_replay_its_dead_letters_and_purge(
    page: Any, broker: Broker, unique_name: str, tmp_path: Path, ui_server: str
) -> None:
    """amount inferred as int from the sample, producers later send 12.5: those go to the
    DLQ; stop, edit the type to float in the UI, replay: every row in ClickHouse once."""
    topic = unique_name
    total = 40
    fixable = [i for i in range(total) if i >= 20 and i % 2]  # amount 12.5-like
    events = [
        {"event_id": f"e{i:04d}", "amount": i + 0.5 if i in fixable else i, "created_at": now()}
        for i in range(total)
    ]
    broker.create_topic(topic, partitions=1)
    produce(broker, topic, events)

    wizard_through_topic(page, broker, topic, "e0000")
    page.get_by_role("button", name="Back", exact=True).click()
    expect(field_type(page, "amount")).to_have_value("int")  # the sample's first 20: ints
    page.get_by_role("button", name="Next", exact=True).click()
    # dedup mode last, with its one line
    page.get_by_label("last", exact=True).check()
    expect(page.locator("#dedup-mode-last-line")).to_have_text(
        "Last wins: every new version of a key is written and the table keeps the latest "
        "(read it with FINAL)."
    )
    expect(page.get_by_label("event_id (string)")).to_be_checked()
    for title in ("Join (optional)", "Filter and computed fields", "ClickHouse"):
        next_step(page, title)
    page.get_by_label("Data directory").fill(str(tmp_path / "clickhouse"))
    expect(page.get_by_label("Column for _kafka.offset")).to_have_value("_version")
    page.get_by_label("Type of column amount").fill("Float64")  # the table holds decimals
    page.get_by_role("button", name="Next", exact=True).click()
    name = f"edit-{topic.replace('_', '-')}"[:60]
    deploy_from_review(page, name, "mode: last")
    wait_for_text(page, page.locator("[data-figure=written]"), str(total - len(fixable)))
    expect(page.locator("[data-figure=dlq]")).to_have_text(str(len(fixable)), timeout=30_000)
    document = httpx.get(f"{ui_server}/api/v1/pipelines/{name}/document", timeout=30).json()
    assert document["dedup"]["mode"] == "last"

    expect(page.get_by_role("link", name=f"edit {name}", exact=True)).to_have_count(
        0
    )  # not while running
    page.get_by_role("button", name=f"stop {name}").click()
    page.get_by_role("dialog").get_by_role("button", name="Stop").click()
    expect(page.locator(".title-row .state")).to_have_text("Stopped", timeout=120_000)
    page.get_by_role("link", name=f"edit {name}", exact=True).click()

    expect(page.get_by_role("heading", name=f"Edit {name}")).to_be_visible()
    doc = page.get_by_label("Pipeline document (YAML)")
    expect(doc).to_have_value(re.compile(r"name: amount\n\s+type: int\n"))
    expect(page.locator("#edit-doc-check")).to_contain_text("ok: ")
    original = doc.input_value()
    # validated as you type: the problem next to the field, Save held back
    doc.fill(re.sub(r"(name: amount\n\s+type: )int", r"\1intt", original))
    expect(page.locator("#edit-doc-check")).to_contain_text("source.schema.fields")
    expect(page.locator("#edit-doc-check")).to_contain_text("intt")
    expect(page.get_by_role("button", name="Save")).to_be_disabled()
    every_control_labelled(page)
    no_sideways_scroll(page)
    shot(page, "edit-invalid")
    # a change of the dedup window needs reset_state: refused, in words
    doc.fill(original.replace("time_window: 1h", "time_window: 2h"))
    expect(page.locator("#edit-doc-check")).to_contain_text("ok: ")
    page.get_by_role("button", name="Save").click()
    refusal = page.locator(".message.error")
    expect(refusal).to_contain_text("Not saved: ")
    expect(refusal).to_contain_text("reset_state=true")
    # the fix: amount is a float
    doc.fill(re.sub(r"(name: amount\n\s+type: )int", r"\1float", original))
    expect(page.locator("#edit-doc-check")).to_contain_text("ok: ")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".message.ok")).to_contain_text("Saved as version 2.")
    document = httpx.get(f"{ui_server}/api/v1/pipelines/{name}/document", timeout=30).json()
    amount = next(f for f in document["source"]["schema"]["fields"] if f["name"] == "amount")
    assert amount["type"] == "float" and document["dedup"]["time_window"] == "1h"
    shot(page, "edit-saved")

    page.get_by_role("link", name="replay its dead letters").click()
    expect(page.locator("[data-figure=pending]")).to_have_text(str(len(fixable)))
    expect(page.locator("tr[data-class=type_mismatch]")).to_have_count(1)
    page.get_by_role("button", name="Replay with the current definition").click()
    expect(page.locator(".message.ok")).to_contain_text(
        f"Replayed {len(fixable)}; 0 still failing", timeout=60_000
    )
    expect(page.locator("[data-figure=pending]")).to_have_text("0")
    expect(page.locator("[data-figure=replayed]")).to_have_text(str(len(fixable)))
    answer = httpx.get(f"{ui_server}/api/v1/pipelines/{name}/rows?limit=100", timeout=30).json()
    assert answer["count"] == total
    rows = {r[answer["columns"].index("event_id")]: r for r in answer["rows"]}
    assert sorted(rows) == [e["event_id"] for e in events]
    amount_at = answer["columns"].index("amount")
    assert {k: float(r[amount_at]) for k, r in rows.items()} == {
        e["event_id"]: e["amount"] for e in events
    }

    # purge, after its confirmation (Cancel first keeps them)
    page.get_by_role("button", name="Purge").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(f"Purge every dead letter of {name}?")
    dialog.get_by_role("button", name="Cancel").click()
    expect(page.locator("[data-figure=total]")).to_have_text(str(len(fixable)))
    page.get_by_role("button", name="Purge").click()
    page.get_by_role("dialog").get_by_role("button", name="Purge").click()
    expect(page.locator(".message.ok")).to_contain_text(
        f"{len(fixable)} dead letter(s) purged.", timeout=60_000
    )
    expect(page.locator("[data-figure=total]")).to_have_text("0")
    shot(page, "dlq-replayed-purged")
    page.get_by_role("link", name=f"← {name}").click()
    expect(page.locator("[data-figure=table-rows]")).to_have_text(str(total))


def test_wizard_maps_onto_an_existing_table_after_a_type_warning(
    page: Any, broker: Broker, unique_name: str, clickhouse: int
) -> None:
    topic, table = unique_name, f"existing_{unique_name}"
    client = clickhouse_connect.get_client(host="127.0.0.1", port=clickhouse)
    client.command(
        f"CREATE TABLE {table} (event_id String, user_id UInt32, user_name String, n Int64, "
        "created_at DateTime64(3, 'UTC'), loaded_at DateTime DEFAULT now()) "
        "ENGINE = MergeTree ORDER BY event_id"
    )
    unique = 30
    events = [
        {
            "event_id": f"e{i:04d}",
            "user": {"id": f"u{i % 5}", "no": i % 5, "name": f"user {i % 5}"},
            "n": i,
            "created_at": now(),
        }
        for i in range(unique)
    ]
    broker.create_topic(topic, partitions=1)
    produce(broker, topic, events + events[:10])  # 10 re-sent: dedup drops them

    wizard_through_topic(page, broker, topic, "e0000")
    expect(page.get_by_label("event_id (string)")).to_be_checked()
    for title in ("Join (optional)", "Filter and computed fields", "ClickHouse"):
        next_step(page, title)
    page.get_by_label("A ClickHouse server (HTTP port)").check()
    page.get_by_label("Host", exact=True).fill("127.0.0.1")
    page.get_by_label("HTTP port", exact=True).fill(str(clickhouse))
    page.get_by_role("button", name="Test connection").click()
    expect(
        page.get_by_text(re.compile(r"Connected: ClickHouse .*database default"))
    ).to_be_visible()
    expect(page.locator("#ch-table-help")).to_contain_text(table)
    page.get_by_label("Table", exact=True).fill(table)
    page.get_by_label("Write into an existing table's columns").check()
    page.get_by_role("button", name="Load the table's columns").click()
    expect(page.get_by_text(f"6 column(s) of {table} loaded")).to_be_visible()
    # matched by name; user.id (a string) does not fit the UInt32 column: said next to it
    user_id = page.get_by_label("Field for column user_id")
    expect(user_id).to_have_value("user.id")
    expect(page.locator("#map-1-field-error")).to_contain_text(
        "field 'user.id' (string) cannot go into column 'user_id' (UInt32)"
    )
    expect(page.get_by_label("Field for column loaded_at")).to_have_value("")  # its default
    no_sideways_scroll(page)
    every_control_labelled(page)
    shot(page, "wizard-existing-table")
    user_id.select_option("user.no")
    expect(page.locator("#map-1-field-error")).to_have_count(0)
    page.get_by_role("button", name="Next", exact=True).click()

    name = f"existing-{topic.replace('_', '-')}"[:60]
    deploy_from_review(page, name, "create_table: false", "field: user.no")
    wait_for_text(page, page.locator("[data-figure=written]"), str(unique))
    expect(page.locator("[data-figure=duplicates]")).to_have_text("10")
    rows = client.query(
        f"SELECT event_id, user_id, user_name, n, loaded_at > 0 FROM {table} ORDER BY event_id"
    ).result_rows
    assert rows == [
        (e["event_id"], e["user"]["no"], e["user"]["name"], e["n"], True) for e in events
    ]
    client.close()
    page.get_by_role("button", name=f"terminate {name}").click()
    page.get_by_role("dialog").get_by_role("button", name="Terminate").click()
    expect(page.locator(".title-row .state")).to_have_text("Stopped", timeout=120_000)
