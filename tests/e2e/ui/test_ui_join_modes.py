"""The wizard's join modes in chromium: a `latest` join built in the wizard writes one row per
left record with the right version current at its event time (where `interval` would write
one per pair), its page says the mode in words; edited in the wizard it opens with its mode,
and becomes a `table` join with a ttl (the API's refusals shown next to the ttl field, the
mode change named as needing reset_state), saved as the document says.

A third topic joins in a second step (`join` as a list): one row per order with its user's
newest profile and its product's title. The server, browser and watched pages: conftest.py.
"""

from __future__ import annotations

import json
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import httpx
import pytest
from confluent_kafka import Producer

from streamsift.embedded.broker import Broker

from .conftest import (
    deploy_from_review,
    error_of,
    every_control_labelled,
    next_step,
    shot,
    wait_for_text,
)

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.integration, pytest.mark.ui]

ORDERS, USERS, PRODUCTS = 20, 5, 3


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def produce_orders_and_profiles(
    broker: Broker, orders: str, users: str, products: str | None = None
) -> None:
    """Two versions of each user's profile (10 and 5 minutes before the orders), then the
    orders: `latest` joins each order once, with the second version. With `products`, a
    product table (one title per id) first."""
    now = datetime.now(timezone.utc)
    producer = Producer({"bootstrap.servers": broker.bootstrap_servers, "linger.ms": 5})
    broker.create_topic(orders, partitions=1)
    broker.create_topic(users, partitions=1)
    if products:
        broker.create_topic(products, partitions=1)
        for p in range(PRODUCTS):
            product = {"product_id": f"p{p}", "title": f"product {p}"}
            producer.produce(products, key=f"p{p}".encode(), value=json.dumps(product).encode())
    for version, before in (("v1", 10), ("v2", 5)):
        for u in range(USERS):
            profile = {
                "user_id": f"u{u}",
                "name": f"user {u} {version}",
                "updated_at": _iso(now - timedelta(minutes=before)),
            }
            producer.produce(users, key=f"u{u}".encode(), value=json.dumps(profile).encode())
    for i in range(ORDERS):
        order = {
            "order_id": f"o{i:03d}",
            "user_id": f"u{i % USERS}",
            "product_id": f"p{i % PRODUCTS}",
            "amount": i + 0.5,
            "created_at": _iso(now),
        }
        producer.produce(orders, key=f"o{i}".encode(), value=json.dumps(order).encode())
    assert producer.flush(30) == 0


def join_users_to_orders(page: Any, broker: Broker, orders: str, users: str) -> None:
    """The wizard from its start to the join step, users picked as the second topic."""
    page.goto("/#/new")
    page.get_by_label("Bootstrap servers").fill(broker.bootstrap_servers)
    next_step(page, "Topic and sample event")
    page.get_by_label("Topic", exact=True).select_option(orders)
    expect(page.get_by_test_id("sample-event")).to_contain_text('"order_id": "o000"')
    next_step(page, "Deduplication")
    next_step(page, "Join (optional)")
    page.get_by_label("Join with a second topic").check()
    page.get_by_label("Second topic", exact=True).select_option(users)
    expect(page.get_by_label(f"Join key in {users}")).to_have_value("user_id")


def on_to_review(page: Any, screenshot: str, tmp_path: Path, column: str) -> None:
    """From the join step (its controls all labelled, shot) to the review: the embedded
    ClickHouse in `tmp_path`, a column for the joined field `column`."""
    every_control_labelled(page)
    shot(page, screenshot)
    next_step(page, "Filter and computed fields")
    next_step(page, "ClickHouse")
    page.get_by_label("Data directory").fill(str(tmp_path / "clickhouse"))
    expect(page.get_by_label(f"Column for {column}")).to_have_value(column)
    next_step(page, "Review and deploy")


def rows_written(page: Any, ui_server: str, name: str) -> dict[str, Any]:
    """Once the pipeline's page says one row per order was written (no dead letters): its
    table as the API reads it, holding exactly those rows."""
    wait_for_text(page, page.locator("[data-figure=written]"), str(ORDERS))
    expect(page.locator("[data-figure=dlq]")).to_have_text("0")
    table = httpx.get(f"{ui_server}/api/v1/pipelines/{name}/rows?limit=100", timeout=60).json()
    assert table["count"] == ORDERS
    return table


def terminate(page: Any, name: str) -> None:
    """Terminate the pipeline from its page and wait until it is stopped."""
    page.get_by_role("button", name=f"terminate {name}").click()
    page.get_by_role("dialog").get_by_role("button", name="Terminate").click()
    expect(page.locator(".title-row .state")).to_have_text("Stopped", timeout=120_000)


def test_latest_join_from_the_wizard_then_edited_into_a_table_join_with_a_ttl(
    page: Any, ui_server: str, broker: Broker, unique_name: str, tmp_path: Path
) -> None:
    orders, users = f"{unique_name}_orders", f"{unique_name}_users"
    produce_orders_and_profiles(broker, orders, users)

    join_users_to_orders(page, broker, orders, users)
    # interval unless chosen; each mode said in words beside its button
    expect(page.get_by_label("interval", exact=True)).to_be_checked()
    expect(page.locator("#join-mode-latest-line")).to_contain_text("newest version at that time")
    expect(page.locator("#join-mode-table-line")).to_contain_text("table of current values")
    page.get_by_label("latest", exact=True).check()
    expect(page.get_by_label(f"How long a {users} event waits for a match")).to_be_visible()
    expect(page.get_by_label(f"Name of {users}: name")).to_have_value("name")
    on_to_review(page, "wizard-join-latest", tmp_path, "name")
    expect(page.get_by_test_id("review-summary")).to_contain_text(
        f"one row per {orders} record, with the newest {users} version at its event time"
    )
    name = f"latest-{unique_name.replace('_', '-')}"[:60]
    deploy_from_review(page, name, "mode: latest")
    document = httpx.get(f"{ui_server}/api/v1/pipelines/{name}/document", timeout=30).json()
    assert document["join"]["mode"] == "latest"
    expect(page.get_by_test_id("join-words")).to_contain_text("(latest, enrichment)")

    # one row per order (interval would make one per order and version: 40), each with v2
    table = rows_written(page, ui_server, name)
    at = table["columns"].index("name")
    assert sorted(r[at] for r in table["rows"]) == sorted(
        f"user {i % USERS} v2" for i in range(ORDERS)
    )
    terminate(page, name)

    # edited: the wizard reads the mode back; table hides the right window, offers a ttl
    page.get_by_role("link", name=f"edit {name} in the wizard").click()
    expect(page.get_by_role("heading", name=f"Edit {name}")).to_be_visible()
    for title in ("Topic and sample event", "Deduplication", "Join (optional)"):
        next_step(page, title)
    expect(page.get_by_label("latest", exact=True)).to_be_checked()
    page.get_by_label("table", exact=True).check()
    expect(page.get_by_label(f"How long a {users} event waits for a match")).to_have_count(0)
    ttl = page.get_by_label(f"How long a {users} value is kept (optional)")
    ttl.fill("2x")
    expect(error_of(page, "join-right-ttl")).to_contain_text("'2x' is not a duration")
    ttl.fill("0s")
    expect(error_of(page, "join-right-ttl")).to_contain_text("must be positive")
    ttl.fill("7d")
    expect(error_of(page, "join-right-ttl")).to_have_count(0)
    every_control_labelled(page)
    shot(page, "wizard-join-table-ttl")
    for title in ("Filter and computed fields", "ClickHouse", "Review and deploy"):
        next_step(page, title)
    reasons = page.get_by_test_id("reset-reasons")
    expect(reasons).to_contain_text("The join mode changes (latest → table)")
    save = page.get_by_role("button", name="Save")
    expect(save).to_be_disabled()
    page.get_by_label("Start afresh (reset_state)").check()
    save.click()
    expect(page.locator(".message.ok")).to_contain_text("Saved as version 2.")
    document = httpx.get(f"{ui_server}/api/v1/pipelines/{name}/document", timeout=30).json()
    assert document["join"]["mode"] == "table"
    assert document["join"]["right"] == {"source": users, "key": "user_id", "ttl": "7d"}
    page.goto(f"/#/p/{name}")
    expect(page.get_by_test_id("join-words")).to_contain_text(
        f"{users} is a table of current values (table, lookup)"
    )


def test_three_topics_joined_in_two_steps_from_the_wizard(
    page: Any, ui_server: str, broker: Broker, unique_name: str, tmp_path: Path
) -> None:
    """orders ⨝ users (latest) ⨝ products (table): one row per order with its user's newest
    profile and its product's title; a later step offers every mode, latest first."""
    orders, users = f"{unique_name}_orders", f"{unique_name}_users"
    products = f"{unique_name}_products"
    produce_orders_and_profiles(broker, orders, users, products=products)

    join_users_to_orders(page, broker, orders, users)
    page.get_by_label("latest", exact=True).check()
    page.get_by_role("button", name="Join with another topic").click()
    step2 = page.get_by_role("region", name=re.compile("^Step 2: join the rows of step 1"))
    step2.get_by_label("Topic 3", exact=True).select_option(products)
    expect(step2.get_by_test_id("s2-sample-event")).to_contain_text('"title": "product 0"')
    # the previous step's output is this step's left side: its key paired by name
    expect(page.get_by_label("Join key in the rows of step 1")).to_have_value("product_id")
    expect(page.get_by_label(f"Join key in {products}")).to_have_value("product_id")
    modes = page.get_by_role("group", name="Join mode of step 2")
    expect(modes.get_by_label("latest", exact=True)).to_be_checked()  # a later step's default
    expect(modes.get_by_label("interval", exact=True)).to_be_enabled()
    modes.get_by_label("table", exact=True).check()
    expect(page.locator("#s2-mode-error")).to_have_count(0)
    page.get_by_label(f"How long a {products} value is kept (optional)").fill("7d")
    expect(page.get_by_label(f"Name of {products}: title")).to_have_value("title")
    on_to_review(page, "wizard-join-three-topics", tmp_path, "title")
    summary = page.get_by_test_id("review-summary")
    expect(summary).to_contain_text(f"Step 2: joins the rows of step 1 with {products}")
    name = f"chain-{unique_name.replace('_', '-')}"[:60]
    deploy_from_review(page, name, "mode: table")
    document = httpx.get(f"{ui_server}/api/v1/pipelines/{name}/document", timeout=30).json()
    assert [s["topic"] for s in document["sources"]] == [orders, users, products]
    assert [(s["mode"], s["right"]["source"]) for s in document["join"]] == [
        ("latest", users),
        ("table", products),
    ]
    assert "source" not in document["join"][1]["left"]
    expect(page.get_by_test_id("join-words")).to_contain_text("Step 2: joins the rows of step 1")

    table = rows_written(page, ui_server, name)
    at = {c: table["columns"].index(c) for c in ("order_id", "name", "title")}
    assert sorted((r[at["order_id"]], r[at["name"]], r[at["title"]]) for r in table["rows"]) == [
        (f"o{i:03d}", f"user {i % USERS} v2", f"product {i % PRODUCTS}") for i in range(ORDERS)
    ]
    terminate(page, name)

    # edited: both steps read back, the third topic with its mode and ttl
    page.get_by_role("link", name=f"edit {name} in the wizard").click()
    for title in ("Topic and sample event", "Deduplication", "Join (optional)"):
        next_step(page, title)
    expect(page.get_by_label("latest", exact=True).first).to_be_checked()
    expect(page.get_by_label("Topic 3", exact=True)).to_have_value(products)
    modes = page.get_by_role("group", name="Join mode of step 2")
    expect(modes.get_by_label("table", exact=True)).to_be_checked()
    expect(page.get_by_label(f"How long a {products} value is kept (optional)")).to_have_value("7d")
