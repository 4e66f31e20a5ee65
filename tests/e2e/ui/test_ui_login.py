"""The web UI and /docs of a server that has a token, in a real browser (issue 25, finding 6):
the UI asks for the token once (a wrong one is said to be wrong and asked for again), keeps it
for the tab, and /docs opens from the UI's "API" link already authorized with it. Every page
is watched (conftest.py): no console error (a CSP violation is one), no request leaving
loopback (Swagger UI's files are served by the server itself)."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.util import find_spec
from typing import Any

import httpx
import pytest

from streamsift.api.app import create_app
from streamsift.api.settings import ServiceSettings
from support.servers import ServerThread

from .conftest import open_page, shot

expect = pytest.importorskip("playwright.sync_api").expect

TOKEN = "ui-login-token-7Qx4"
ASKED = "This server needs a token"


@pytest.fixture(scope="module")
def local_swagger() -> None:
    """Swagger UI's files from the swagger-ui-bundle-v2 package: without it /docs loads them
    from a CDN, which these tests (nothing leaves loopback) would count as a failure."""
    if find_spec("swagger_ui_bundle") is None:
        pytest.fail("/docs needs the swagger-ui-bundle-v2 package here: pip install it")


@pytest.fixture(scope="module")
def token_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    data = tmp_path_factory.mktemp("ui-login") / "data"
    with ServerThread(create_app(ServiceSettings(data_dir=data, token=TOKEN))) as server:
        yield server.url


def test_the_ui_asks_for_the_token_once_and_keeps_it_for_the_tab(
    browser: Any, token_server: str
) -> None:
    with open_page(browser, token_server, 1280, 900) as page:
        asked: list[str] = []
        page.on(
            "request",
            lambda r: (
                r.url.endswith("/api/v1/pipelines")
                and asked.append(r.headers.get("authorization", ""))
            ),
        )
        page.goto("/")
        expect(page.get_by_role("heading", name=ASKED)).to_be_visible()
        page.get_by_label("API token").fill("not-the-token")
        page.get_by_role("button", name="Use this token").click()
        expect(page.get_by_role("alert")).to_contain_text("not this server's")
        expect(page.get_by_role("heading", name=ASKED)).to_be_visible()
        page.get_by_label("API token").fill(TOKEN)
        page.get_by_label("API token").press("Enter")
        expect(page.get_by_text("No pipelines yet.")).to_be_visible()
        shot(page, "login-pipelines")
        # Kept for the tab: other pages and a reload ask no more.
        nav = page.get_by_role("navigation", name="main")
        nav.get_by_role("link", name="New pipeline").click()
        nav.get_by_role("link", name="Pipelines").click()
        expect(page.get_by_text("No pipelines yet.")).to_be_visible()
        page.reload()
        expect(page.get_by_text("No pipelines yet.")).to_be_visible()
        expect(page.get_by_role("heading", name=ASKED)).to_have_count(0)
        assert asked and asked[-1] == f"Bearer {TOKEN}"
        # A token that stops being right (the server restarted with another) is asked again.
        page.evaluate("sessionStorage.setItem('streamsift.token', 'stale')")
        page.reload()
        expect(page.get_by_role("heading", name=ASKED)).to_be_visible()
        expect(page.get_by_role("alert")).to_contain_text("not this server's")


def test_docs_open_from_the_ui_with_its_token(
    browser: Any, token_server: str, local_swagger: None
) -> None:
    with open_page(browser, token_server, 1280, 900) as page:
        page.goto("/")
        page.get_by_label("API token").fill(TOKEN)
        page.get_by_role("button", name="Use this token").click()
        expect(page.get_by_text("No pipelines yet.")).to_be_visible()
        page.get_by_role("navigation", name="main").get_by_role("link", name="API").click()
        page.wait_for_url("**/docs")
        expect(page.locator(".swagger-ui .title")).to_contain_text("streamsift")
        expect(
            page.locator(".opblock-summary-path", has_text="/api/v1/pipelines").first
        ).to_be_visible()
        # Authorized with the UI's token: the lock is closed; Try it out gets the list.
        expect(page.locator(".btn.authorize.locked")).to_be_visible()
        operation = page.locator("#operations-pipelines-list_pipelines_api_v1_pipelines_get")
        expect(operation).to_have_count(1)
        operation.locator(".opblock-summary").click()
        operation.get_by_role("button", name="Try it out").click()
        operation.get_by_role("button", name="Execute").click()
        status = operation.locator(".live-responses-table .response .response-col_status")
        expect(status.first).to_have_text("200")
        shot(page, "login-docs")


def test_docs_load_in_a_fresh_browser_without_a_token(
    browser: Any, token_server: str, local_swagger: None
) -> None:
    with open_page(browser, token_server, 1280, 900) as page:
        page.goto("/docs")
        expect(page.locator(".swagger-ui .title")).to_contain_text("streamsift")
        expect(page.locator(".btn.authorize")).to_be_visible()
        expect(page.locator(".btn.authorize.locked")).to_have_count(0)
    assert httpx.get(f"{token_server}/api/v1/pipelines").status_code == 401


def test_the_token_form_is_labelled(browser: Any, token_server: str) -> None:
    with open_page(browser, token_server, 390, 844) as page:
        page.goto("/")
        field = page.get_by_label("API token")
        expect(field).to_be_focused()
        expect(field).to_have_attribute("type", "password")


class AttackPage(BaseHTTPRequestHandler):
    """Another site's page, on another loopback port: a page and nothing else."""

    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b"<!doctype html><title>another site</title><p>hello</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def attack_site() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), AttackPage)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_page_of_another_origin_cannot_change_anything(
    browser: Any, tmp_path_factory: pytest.TempPathFactory, attack_site: str
) -> None:
    """The attack of finding 5 in a real browser: a page of another site (another loopback
    port) posts a pipeline document as text/plain, and with no type at all, in `no-cors`
    mode (no preflight), and asks for a stop. Nothing is created; the server's own page
    still may."""
    data = tmp_path_factory.mktemp("ui-cross") / "data"
    with ServerThread(create_app(ServiceSettings(data_dir=data))) as server:
        with open_page(browser, attack_site, 1280, 900) as page:
            page.goto("/")
            doc = '{"version": 1, "name": "cross-site", "source": {}, "sink": {}}'
            target = f"{server.url}/api/v1/pipelines"
            refused: list[int] = []
            page.on(
                "response",
                lambda r: r.url.startswith(server.url) and refused.append(r.status),
            )
            for headers in ("{'Content-Type': 'text/plain'}", "{}"):
                page.evaluate(
                    f"""async () => {{
                      await fetch({target!r}, {{method: 'POST', mode: 'no-cors',
                        headers: {headers}, body: {doc!r}}});
                      await fetch({target!r} + '/nope/stop', {{method: 'POST', mode: 'no-cors'}});
                    }}"""
                )
            assert refused == [403, 403, 403, 403]
        with open_page(browser, server.url, 1280, 900) as page:
            page.goto("/")
            own = page.evaluate(
                "async () => (await fetch('/api/v1/pipelines/nope/stop', {method: 'POST'})).status"
            )
            assert own == 404
        assert httpx.get(f"{server.url}/api/v1/pipelines").json() == []
