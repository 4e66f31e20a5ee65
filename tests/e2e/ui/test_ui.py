"""The web UI end to end in chromium: the wizard's validation on bad input (on a phone-wide
window), a dedup pipeline built in the wizard that runs (rows, duplicates and dead letters
counted on the pipelines page; stop; the DLQ consumed), and a GlassFlow JSON uploaded.

Fixtures (conftest.py): one server and one browser for the session; every page is watched for
console errors, 5xx answers and requests outside loopback.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer
from fastapi.testclient import TestClient

from streamsift.api.app import create_app
from streamsift.api.routers import ui as ui_router
from streamsift.api.settings import ServiceSettings
from streamsift.embedded.broker import Broker, free_port
from support.paths import EXAMPLES
from support.servers import ServerThread

from .conftest import (
    deploy_from_review,
    error_of,
    every_control_labelled,
    next_step,
    no_sideways_scroll,
    open_page,
    shot,
    wait_for_text,
)

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.integration, pytest.mark.ui]


def event(i: int) -> dict[str, Any]:
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    return {
        "event_id": f"e{i:04d}",
        "user": {"id": f"u{i % 5}", "name": f"user {i % 5}"},
        "n": i,
        "created_at": now,
    }


def produce(
    broker: Broker, topic: str, ids: range, twice: bool, extra: tuple[bytes, ...] = ()
) -> None:
    """Each event (twice with `twice`: dedup keeps one), then the `extra` raw messages."""
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    for _ in range(2 if twice else 1):
        for i in ids:
            value = json.dumps(event(i)).encode()
            producer.produce(topic, key=f"e{i}".encode(), value=value)
    for raw in extra:
        producer.produce(topic, key=b"bad", value=raw)
    assert producer.flush(30) == 0


def test_root_says_so_when_the_ui_was_not_built(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(ui_router, "static_dir", lambda: tmp_path / "static")
    # a Host this server answers to (TestClient's default, testserver, is refused)
    client = TestClient(
        create_app(ServiceSettings(data_dir=tmp_path / "data")), base_url="http://127.0.0.1"
    )
    answer = client.get("/")
    assert answer.status_code == 503
    assert answer.headers["content-type"].startswith("text/html")
    assert "The web UI was not built" in answer.text and "make setup" in answer.text
    assert client.get("/assets/index.js").status_code == 404


def test_wizard_shows_each_problem_next_to_its_field_on_a_phone(
    phone_page: Any, broker: Broker, unique_name: str
) -> None:
    page = phone_page
    topic = unique_name
    broker.create_topic(topic, partitions=1)
    produce(broker, topic, range(3), twice=False)
    page.goto("/#/new")
    expect(page.get_by_role("heading", name="Kafka connection")).to_be_visible()

    servers = page.get_by_label("Bootstrap servers")
    servers.fill("localhost")
    expect(error_of(page, "kafka-bootstrap_servers")).to_contain_text(
        "'localhost' is not host:port"
    )
    no_sideways_scroll(page)
    every_control_labelled(page)
    shot(page, "phone-wizard-kafka-invalid")
    servers.press("Enter")  # Next, from the keyboard: refused while the field has a problem
    expect(page.get_by_role("heading", name="Kafka connection")).to_be_visible()
    expect(servers).to_be_focused()

    servers.fill(f"127.0.0.1:{free_port()}")  # nothing listens there
    page.get_by_role("button", name="Test connection").click()
    expect(page.get_by_text(re.compile(r"Could not connect: .*127\.0\.0\.1"))).to_be_visible(
        timeout=30_000
    )
    servers.fill(broker.bootstrap_servers)
    page.get_by_role("button", name="Test connection").click()
    expect(page.get_by_text(re.compile(r"Connected: 1 broker"))).to_be_visible()
    servers.press("Enter")

    expect(page.get_by_role("heading", name="Topic and sample event")).to_be_visible()
    page.get_by_label("Topic", exact=True).select_option(topic)
    expect(page.get_by_test_id("sample-event")).to_contain_text('"event_id": "e0000"')
    name0 = page.get_by_label("Field 1 name")
    original = name0.input_value()
    name0.fill("1bad")
    expect(error_of(page, "field-0-name")).to_contain_text("1bad")
    no_sideways_scroll(page)
    every_control_labelled(page)
    name0.fill(original)
    expect(error_of(page, "field-0-name")).to_have_count(0)
    page.get_by_role("button", name="Next", exact=True).click()

    expect(page.get_by_role("heading", name="Deduplication")).to_be_visible()
    window = page.get_by_label("Time window")
    window.fill("1x")
    expect(error_of(page, "dedup-window")).to_contain_text("'1x' is not a duration")
    window.fill("1h")
    expect(error_of(page, "dedup-window")).to_have_count(0)
    page.get_by_role("button", name="Next", exact=True).click()
    expect(page.get_by_role("heading", name="Join (optional)")).to_be_visible()
    page.get_by_role("button", name="Next", exact=True).click()

    expect(page.get_by_role("heading", name="Filter and computed fields")).to_be_visible()
    flt = page.get_by_label("Filter: keep events for which this is true")
    flt.fill("n >")
    # one message, next to the field, in the product's words (not sqlglot's)
    expect(error_of(page, "filter")).to_be_visible()
    said = error_of(page, "filter").inner_text()
    assert "<class" not in said and "Required keyword" not in said, said
    assert page.get_by_text(said, exact=True).count() == 1
    flt.fill("n > 1")
    expect(page.get_by_test_id("filter-preview")).to_have_text("drops the sample event")
    flt.fill("")
    page.get_by_role("button", name="Next", exact=True).click()

    expect(page.get_by_role("heading", name="ClickHouse")).to_be_visible()
    column_type = page.get_by_label("Type of column event_id")
    column_type.fill("Strin")
    expect(page.locator("[id^=map-][id$=-type-error]").first).to_contain_text(
        "unknown ClickHouse type 'Strin'"
    )
    column_type.fill("Int64")
    expect(page.locator("[id^=map-][id$=-type-error]").first).to_contain_text(
        "field 'event_id' (string) cannot go into column 'event_id' (Int64)"
    )
    no_sideways_scroll(page)
    every_control_labelled(page)
    shot(page, "phone-wizard-clickhouse-invalid")
    column_type.fill("String")
    page.get_by_role("button", name="Next", exact=True).click()

    expect(page.get_by_role("heading", name="Review and deploy")).to_be_visible()
    name = page.get_by_label("Pipeline name")
    name.fill("not a name")
    expect(error_of(page, "pipeline-name")).to_contain_text("'not a name' is not a pipeline name")
    expect(page.get_by_role("button", name="Deploy")).to_be_disabled()
    no_sideways_scroll(page)
    every_control_labelled(page)
    page.get_by_role("button", name="Back", exact=True).click()  # back keeps what was entered
    expect(page.get_by_label("Type of column event_id")).to_have_value("String")


def test_wizard_dedup_pipeline_deploys_counts_rows_stops_and_consumes_its_dlq(
    page: Any, broker: Broker, unique_name: str, tmp_path: Path, ui_server: str
) -> None:
    topic = unique_name
    unique, malformed = 40, (b"{not json", b"[1, 2]", b"")
    broker.create_topic(topic, partitions=2)
    produce(broker, topic, range(unique), twice=True, extra=malformed)

    page.goto("/")
    expect(page.get_by_role("heading", name="Pipelines")).to_be_visible()
    page.get_by_role("link", name="New pipeline").first.click()

    page.get_by_label("Bootstrap servers").fill(broker.bootstrap_servers)
    page.get_by_role("button", name="Test connection").click()
    expect(page.get_by_text(re.compile(r"Connected: 1 broker"))).to_be_visible()
    every_control_labelled(page)
    shot(page, "wizard-1-kafka")
    page.get_by_role("button", name="Next", exact=True).click()

    page.get_by_label("Topic", exact=True).select_option(topic)
    expect(page.get_by_test_id("sample-event")).to_contain_text('"user": {')
    # inferred from the sample: nested fields as dot paths, the event time picked
    names = [page.get_by_label(f"Field {i} name").input_value() for i in range(1, 6)]
    assert sorted(names) == ["created_at", "event_id", "n", "user.id", "user.name"]
    expect(page.get_by_label("Event time field")).to_have_value("created_at")
    every_control_labelled(page)
    shot(page, "wizard-2-topic")
    page.get_by_role("button", name="Next", exact=True).click()

    expect(page.get_by_label("Drop duplicate events")).to_be_checked()
    expect(page.get_by_label("event_id (string)")).to_be_checked()
    expect(page.get_by_text("First wins: the first event with a key is written")).to_be_visible()
    page.get_by_label("Time window").fill("1h")
    every_control_labelled(page)
    shot(page, "wizard-3-dedup")
    next_step(page, "Join (optional)")
    expect(page.get_by_label("Join with a second topic")).not_to_be_checked()
    next_step(page, "Filter and computed fields")

    page.get_by_role("button", name="Add a computed field").click()
    page.get_by_label("Computed field 1 name").fill("user_upper")
    page.get_by_label("Computed field 1 expression (Spark SQL)").fill("upper(user.name)")
    expect(page.get_by_test_id("transform-0-preview")).to_have_text(
        re.compile(r'on the sample event: "USER \d"')
    )
    page.get_by_label("Filter: keep events for which this is true").fill("n >= 0")
    expect(page.get_by_test_id("filter-preview")).to_have_text("keeps the sample event")
    every_control_labelled(page)
    shot(page, "wizard-4-transform")
    page.get_by_role("button", name="Next", exact=True).click()

    page.get_by_label("Data directory").fill(str(tmp_path / "clickhouse"))
    expect(page.get_by_label("Column for user.id")).to_have_value("user_id")
    expect(page.get_by_label("Type of column created_at")).to_have_value("DateTime64(3, 'UTC')")
    expect(page.get_by_label("Column for user_upper")).to_have_value("user_upper")
    every_control_labelled(page)
    shot(page, "wizard-5-clickhouse")
    page.get_by_role("button", name="Next", exact=True).click()

    name = f"ui-{topic.replace('_', '-')}"[:60]
    page.get_by_label("Pipeline name").fill(name)
    yaml_text = page.get_by_test_id("review-yaml")
    expect(yaml_text).to_contain_text(f"name: {name}")
    expect(yaml_text).to_contain_text("key: event_id")
    expect(yaml_text).to_contain_text("filter: n >= 0")
    with page.expect_download() as download:
        page.get_by_role("button", name="Download YAML").click()
    assert f"topic: {topic}" in Path(download.value.path()).read_text()
    every_control_labelled(page)
    shot(page, "wizard-6-review")
    deploy = page.get_by_role("button", name="Deploy")
    expect(deploy).to_be_enabled()
    deploy.click()

    expect(page.get_by_role("heading", name=name)).to_be_visible()
    page.get_by_role("link", name="← All pipelines").click()
    row = page.locator(f"tr[data-pipeline='{name}']")
    # every event once, every repeat dropped, every malformed message a dead letter
    wait_for_text(page, row.locator("[data-col=written]"), str(unique))
    expect(row.locator("[data-col=duplicates]")).to_have_text(str(unique))
    expect(row.locator("[data-col=dlq]")).to_have_text(str(len(malformed)), timeout=30_000)
    expect(row.get_by_text("Running")).to_be_visible()
    every_control_labelled(page)
    shot(page, "pipelines")

    row.get_by_role("button", name=f"stop {name}").click()
    dialog = page.get_by_role("dialog")
    expect(dialog).to_contain_text(f"Stop {name}?")
    dialog.get_by_role("button", name="Stop").click()
    expect(row.get_by_text("Stopped")).to_be_visible(timeout=120_000)

    row.get_by_role("link", name=f"dead letters of {name}").click()
    expect(page.get_by_role("heading", name=f"Dead letters of {name}")).to_be_visible()
    expect(page.locator("[data-figure=pending]")).to_have_text(str(len(malformed)))
    expect(page.locator("tr[data-class]")).not_to_have_count(0)
    expect(page.get_by_role("list", name="pending dead letters")).to_contain_text("{not json")
    every_control_labelled(page)
    shot(page, "dlq")
    page.get_by_label("How many to consume").fill("10")
    page.get_by_role("button", name="Consume").click()
    # (a busy machine makes ClickHouse slow: the answer, or the error shown instead, may take a while)
    expect(page.locator(".message").first).to_contain_text(
        f"{len(malformed)} dead letter(s) consumed", timeout=60_000
    )
    expect(page.get_by_role("list", name="consumed dead letters").locator("li")).to_have_count(
        len(malformed)
    )
    expect(page.locator("[data-figure=pending]")).to_have_text("0")
    expect(page.locator("[data-figure=consumed]")).to_have_text(str(len(malformed)))

    page.get_by_role("link", name=f"← {name}").click()
    expect(page.locator("[data-figure=written]")).to_have_text(str(unique))
    # where it runs, and its dedup state's size on disk
    expect(page.locator("[data-figure=isolation]")).to_have_text("the pipeline host (shared)")
    expect(page.locator("[data-figure=state]")).to_contain_text("dedup ")
    expect(page.get_by_test_id("definition")).to_contain_text(f"topic: {topic}")
    # the table's rows (GET .../rows): all of them counted, the newest 10 shown
    expect(page.locator("[data-figure=table-rows]")).to_have_text(str(unique))
    expect(page.get_by_test_id("newest-rows").locator("tbody tr")).to_have_count(10)
    expect(page.get_by_test_id("newest-rows")).to_contain_text("USER ")
    answer = httpx.get(f"{ui_server}/api/v1/pipelines/{name}/rows?limit=100", timeout=30).json()
    assert answer["count"] == unique and answer["order"] == "created_at"
    assert sorted(r[answer["columns"].index("event_id")] for r in answer["rows"]) == [
        f"e{i:04d}" for i in range(unique)
    ]
    every_control_labelled(page)
    shot(page, "pipeline")


def test_glassflow_json_uploaded_becomes_a_pipeline_with_its_password_hidden(
    page: Any, broker: Broker, unique_name: str, tmp_path: Path
) -> None:
    doc = json.loads((EXAMPLES / "glassflow-dedup-v3.json").read_text())
    pipeline_id = f"gf-{unique_name.replace('_', '-')}"[:60]
    doc["pipeline_id"] = pipeline_id
    doc["sources"][0]["connection_params"]["brokers"] = [broker.bootstrap_servers]
    doc["sources"][0]["topic"] = unique_name
    broker.create_topic(unique_name, partitions=1)
    password = "gf-Secret-9Hw2"
    doc["sink"]["connection_params"].update(password=password, http_port=str(free_port()))
    upload = tmp_path / "glassflow.json"
    upload.write_text(json.dumps(doc, indent=2))

    page.goto("/#/upload")
    page.get_by_label("Pipeline file").set_input_files(str(upload))
    expect(page.get_by_label("Contents of glassflow.json (editable)")).to_have_value(
        re.compile('"version": "v3"')
    )
    # checked as soon as it is picked (its topic exists: nothing missing)
    expect(page.get_by_text(re.compile(f"ok: {pipeline_id}: "))).to_be_visible()
    every_control_labelled(page)
    shot(page, "upload")
    page.get_by_role("button", name="Create pipeline").click()

    expect(page.get_by_role("heading", name=pipeline_id)).to_be_visible()
    definition = page.get_by_test_id("definition")
    expect(definition).to_contain_text("key: event_id")
    expect(definition).to_contain_text('password: "***"')
    assert password not in page.content()
    with page.expect_download() as download:
        page.get_by_role("button", name="Download YAML").click()
    assert f"name: {pipeline_id}" in Path(download.value.path()).read_text()

    # terminate, then delete: each after its confirmation
    page.get_by_role("button", name=f"terminate {pipeline_id}").click()
    page.get_by_role("dialog").get_by_role("button", name="Terminate").click()
    expect(page.locator(".title-row .state")).to_have_text("Stopped", timeout=120_000)
    # saved from the editor as read back: the password stays *** there, and the API keeps
    # the stored one for a *** (tests/integration/test_service.py)
    page.get_by_role("link", name=f"edit {pipeline_id}", exact=True).click()
    expect(page.get_by_label("Pipeline document (YAML)")).to_have_value(
        re.compile(r'password: "\*\*\*"')
    )
    expect(page.locator("#edit-doc-check")).to_contain_text("ok: ")
    page.get_by_role("button", name="Save").click()
    expect(page.locator(".message.ok")).to_contain_text("Saved as version 2.")
    assert password not in page.content()
    page.get_by_role("link", name=f"← {pipeline_id}").click()
    page.get_by_role("button", name=f"delete {pipeline_id}").click()
    page.get_by_role("dialog").get_by_role("button", name="Cancel").click()
    expect(page.get_by_role("heading", name=pipeline_id)).to_be_visible()
    page.get_by_role("button", name=f"delete {pipeline_id}").click()
    page.get_by_role("dialog").get_by_role("button", name="Delete").click()
    expect(page.get_by_role("heading", name="Pipelines")).to_be_visible()
    expect(page.locator(f"tr[data-pipeline='{pipeline_id}']")).to_have_count(0)


def test_bad_upload_lists_each_problem(page: Any) -> None:
    page.goto("/#/upload")
    # checked as it is typed: no button to press first, Create held back
    page.get_by_label("Or paste the document").fill("name: x\nsource: {topic: t}\n")
    expect(page.get_by_role("alert")).to_contain_text("source.bootstrap_servers")
    expect(page.get_by_role("button", name="Create pipeline")).to_be_disabled()
    page.get_by_label("Or paste the document").fill("name: [unclosed\n")
    expect(page.get_by_role("alert")).to_contain_text("line")


def test_wizard_join_pipeline_writes_one_row_per_matching_pair(
    page: Any, broker: Broker, unique_name: str, tmp_path: Path
) -> None:
    orders, users = f"{unique_name}_orders", f"{unique_name}_users"
    now = datetime.now(timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    broker.create_topic(orders, partitions=1)
    broker.create_topic(users, partitions=1)
    for u in range(5):
        user = {"user_id": f"u{u}", "name": f"user {u}", "updated_at": now}
        producer.produce(users, key=f"u{u}".encode(), value=json.dumps(user).encode())
    for i in range(20):
        order = {
            "order_id": f"o{i:03d}",
            "user_id": f"u{i % 5}",
            "amount": i + 0.5,
            "created_at": now,
        }
        producer.produce(orders, key=f"o{i}".encode(), value=json.dumps(order).encode())
    assert producer.flush(30) == 0

    page.goto("/#/new")
    page.get_by_label("Bootstrap servers").fill(broker.bootstrap_servers)
    page.get_by_role("button", name="Next", exact=True).click()
    page.get_by_label("Topic", exact=True).select_option(orders)
    expect(page.get_by_test_id("sample-event")).to_contain_text('"order_id": "o000"')
    page.get_by_role("button", name="Next", exact=True).click()
    expect(page.get_by_label("order_id (string)")).to_be_checked()
    page.get_by_role("button", name="Next", exact=True).click()

    expect(page.get_by_role("heading", name="Join (optional)")).to_be_visible()
    page.get_by_label("Join with a second topic").check()
    page.get_by_label("Second topic", exact=True).select_option(users)
    expect(page.get_by_test_id("right-sample-event")).to_contain_text('"name": "user ')
    expect(page.get_by_label(f"Join key in {orders}")).to_have_value("user_id")
    expect(page.get_by_label(f"Join key in {users}")).to_have_value("user_id")
    page.get_by_label("inner").check()
    expect(page.get_by_label(f"Name of {users}: name")).to_have_value("name")
    page.get_by_label(f"Name of {users}: name").fill("user_name")
    page.get_by_label(f"How long a {orders} event waits for a match").fill("2x")
    expect(page.locator("#join-left-window-error")).to_contain_text("'2x' is not a duration")
    page.get_by_label(f"How long a {orders} event waits for a match").fill("1h")
    expect(page.locator("#join-left-window-error")).to_have_count(0)
    every_control_labelled(page)
    shot(page, "wizard-join")
    page.get_by_role("button", name="Next", exact=True).click()

    # the filter sees the joined record, made of the two samples
    page.get_by_label("Filter: keep events for which this is true").fill("amount >= 0")
    expect(page.get_by_test_id("filter-preview")).to_have_text("keeps the sample event")
    page.get_by_role("button", name="Next", exact=True).click()

    page.get_by_label("Data directory").fill(str(tmp_path / "clickhouse"))
    expect(page.get_by_label("Column for user_name")).to_have_value("user_name")
    page.get_by_role("button", name="Next", exact=True).click()

    name = f"join-{unique_name.replace('_', '-')}"[:60]
    deploy_from_review(page, name, "type: inner", "as: user_name")
    # every order has its user: one row each, nothing in the DLQ
    wait_for_text(page, page.locator("[data-figure=written]"), "20")
    expect(page.locator("[data-figure=dlq]")).to_have_text("0")
    page.get_by_role("button", name=f"terminate {name}").click()
    page.get_by_role("dialog").get_by_role("button", name="Terminate").click()
    expect(page.locator(".title-row .state")).to_have_text("Stopped", timeout=120_000)


def test_ui_asks_for_the_token_of_a_server_that_has_one(browser: Any, tmp_path: Path) -> None:
    settings = ServiceSettings(data_dir=tmp_path / "data", token="ui-token-5Rk2")
    with (
        ServerThread(create_app(settings)) as server,
        open_page(browser, server.url, 1280, 900) as page,
    ):
        page.goto("/")
        expect(page.get_by_role("heading", name="This server needs a token")).to_be_visible()
        page.get_by_label("API token").fill("wrong")
        page.get_by_label("API token").press("Enter")
        # the wrong one refused (and the field emptied) before the right one is typed
        expect(page.get_by_text("That token is not this server's")).to_be_visible()
        page.get_by_label("API token").fill("ui-token-5Rk2")
        page.get_by_role("button", name="Use this token").click()
        expect(page.get_by_text("No pipelines yet.")).to_be_visible()
