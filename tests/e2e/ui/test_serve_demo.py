"""`streamsift serve --demo` as a new user runs it: within a minute the web UI shows the demo
pipeline running with rows written and duplicates dropped; SIGTERM stops it all, exit 0."""

from __future__ import annotations

import re
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from support.servers import Serve

from .conftest import next_step, open_page, shot

expect = pytest.importorskip("playwright.sync_api").expect

pytestmark = [pytest.mark.integration, pytest.mark.ui]


def _figure(page: Any, row: Any, column: str) -> int:
    text = row.locator(f"[data-col={column}]").inner_text().replace(",", "")
    return int(text) if text.isdigit() else 0


def wizard_fits_the_demo(page: Any, log_text: str, data_dir: Path) -> None:
    """Issue 31, points 1 and 2: the wizard starts from the demo's broker and the embedded
    ClickHouse under --data-dir, its table name is not the demo's, and Test connection says
    the demo's directory is fine (the server shares it)."""
    found = re.search(r"demo: broker at (\S+),", log_text)
    assert found, log_text[-2000:]
    page.goto("/#/new")
    expect(page.get_by_label("Bootstrap servers")).to_have_value(found.group(1))
    next_step(page, "Topic and sample event")
    page.get_by_label("Topic", exact=True).select_option("demo-events")
    expect(page.get_by_test_id("sample-event")).to_contain_text('"event_id"')
    for title in ("Deduplication", "Join (optional)", "Filter and computed fields", "ClickHouse"):
        next_step(page, title)
    expect(page.get_by_label("Data directory")).to_have_value(
        str(data_dir.resolve() / "clickhouse")
    )
    expect(page.get_by_label("Table", exact=True)).to_have_value("demo_events_2")
    page.get_by_role("button", name="Test connection").click()
    expect(page.get_by_text("this server's, used by demo-dedup")).to_be_visible()
    shot(page, "demo-wizard-clickhouse")


def test_serve_demo_shows_a_running_pipeline_with_rows_and_duplicates(
    browser: Any, tmp_path: Path
) -> None:
    log = tmp_path / "serve.log"
    serve = Serve(tmp_path / "data", log, ["--demo"])
    try:
        url = serve.start(wait_ready=False, listen_timeout=90).url
        text = log.read_text()
        assert "demo: broker at 127.0.0.1:" in text and "pipeline demo-dedup" in text

        with open_page(browser, url, 1280, 900) as page:
            page.goto("/")
            row = page.locator("tr[data-pipeline='demo-dedup']")
            expect(row.get_by_text("Running")).to_be_visible(timeout=120_000)
            deadline = time.monotonic() + 180
            while not (_figure(page, row, "written") > 0 and _figure(page, row, "duplicates") > 0):
                assert time.monotonic() < deadline, "no rows or duplicates shown within 3 min"
                page.wait_for_timeout(1000)
            shot(page, "demo-pipelines")
            row.get_by_role("link", name="demo-dedup", exact=True).click()
            expect(page.get_by_test_id("newest-rows").locator("tbody tr")).to_have_count(10)
            page.wait_for_timeout(6_000)  # a few points on the charts
            shot(page, "demo-pipeline")
            wizard_fits_the_demo(page, text, tmp_path / "data")
    finally:
        proc = serve.proc
        assert proc is not None
        proc.send_signal(signal.SIGTERM)
        try:
            code = proc.wait(120)
        except subprocess.TimeoutExpired:
            proc.kill()
            raise
    assert code == 0, log.read_text()[-2000:]
    assert "streamsift serve: stopped" in log.read_text()
