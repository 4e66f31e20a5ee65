"""The web UI in a real browser: `streamsift serve`'s app on a loopback port (uvicorn in a
thread, the real pipeline service with its worker processes, the bundled broker, embedded
ClickHouse), driven by Playwright through Debian's chromium.

One server and one browser serve the whole session (each pipeline start costs a Spark
driver). Every page a test opens is watched: a console error, an uncaught exception, a 5xx
answer or a request to anything but loopback fails the test. Screenshots go to
test-artifacts/ui/ (not in git).
"""

from __future__ import annotations

import contextlib
import re
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import httpx
import pytest

from streamsift.api.app import create_app
from streamsift.api.settings import ServiceSettings
from support import paths
from support.servers import ServerThread

playwright_sync = pytest.importorskip("playwright.sync_api")
expect_ = playwright_sync.expect

ARTIFACTS = paths.ARTIFACTS / "ui"
LOOPBACK = {"127.0.0.1", "localhost", "::1", "[::1]"}
# Chrome logs every fetch() answered 4xx/5xx as a console error ("Failed to load resource:
# the server responded with a status of 422"). The UI asks the API to validate drafts (422,
# shown next to the field) and to test connections (503 when nothing answers, 502 when the
# other side refuses: shown in words), so those lines are expected; 500 (the API's own
# failure) never is, nor is any other console error.
ROWS_TIMEOUT_MS = 240_000  # a pipeline's first rows: a Spark driver starts first
EXPECTED_STATUS = re.compile(r"the server responded with a status of (4\d\d|502|503) ")


@dataclass
class Watch:
    """What a page did that a test must not see."""

    console_errors: list[str] = field(default_factory=list)
    outside_requests: list[str] = field(default_factory=list)
    server_errors: list[str] = field(default_factory=list)  # 500 and 5xx but 502/503

    def check(self) -> None:
        assert not self.outside_requests, f"requests outside loopback: {self.outside_requests}"
        assert not self.console_errors, f"console errors: {self.console_errors}"
        assert not self.server_errors, f"5xx answers: {self.server_errors}"


@pytest.fixture(scope="module")
def ui_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The UI's server (no token) for one module; its URL. At the end its pipelines are
    terminated and waited for, so its workers and ClickHouse endpoints end with it."""
    if not (paths.REPO / "src/streamsift/ui/static/index.html").is_file():
        pytest.fail("the UI is not built: run `make setup` (npm ci + npm run build in ui/)")
    data = tmp_path_factory.mktemp("ui-serve") / "data"
    # the wizard tests put their embedded ClickHouse in their own temp dirs: allowed here
    base = tmp_path_factory.getbasetemp()
    # the charts' history sampled every second (10 s in production), so a test sees points soon
    # the pipeline host warms while a test drives the wizard (every module deploys), as
    # `streamsift serve` starts it
    settings = ServiceSettings(
        data_dir=data,
        probe_timeout_s=5,
        allow_paths=(base,),
        history_interval_s=1.0,
        warm_host=True,
    )
    # a page's request to a pipeline's ClickHouse that does not answer retries for 20 s (the
    # DLQ's face, engine/dead_letters.py): the module's end need not wait for its answer
    with ServerThread(create_app(settings), graceful_s=2) as server:
        try:
            yield server.url
        finally:
            _terminate_all(server.url)


def _terminate_all(url: str) -> None:
    """Terminate every pipeline not at rest and wait (at most a minute) until none runs."""
    api = f"{url}/api/v1/pipelines"
    with contextlib.suppress(httpx.HTTPError):
        for p in httpx.get(api, timeout=30).json():
            if p["state"] not in ("Stopped", "Failed"):
                httpx.post(f"{api}/{p['id']}/terminate", timeout=60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and any(
            p["state"] not in ("Stopped", "Failed") for p in httpx.get(api, timeout=30).json()
        ):
            time.sleep(0.5)


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """Chromium for one module. Not for the session: Playwright's sync API keeps an event
    loop running in this thread while it is open, and later modules' `asyncio.run` fail."""
    executable = shutil.which("chromium")
    if executable is None:
        pytest.fail(
            "Debian's chromium is needed: `make test` installs it (apt-get install chromium)"
        )
    with playwright_sync.sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        yield b
        b.close()


def watched_page(browser: Any, base_url: str, width: int, height: int) -> tuple[Any, Any, Watch]:
    context = browser.new_context(
        base_url=base_url, viewport={"width": width, "height": height}, accept_downloads=True
    )
    watch = Watch()

    def route(r: Any) -> None:
        url = urlparse(r.request.url)
        if url.scheme in ("http", "https", "ws", "wss") and url.hostname not in LOOPBACK:
            watch.outside_requests.append(r.request.url)
            r.abort()
        else:
            r.continue_()

    context.route("**/*", route)
    page = context.new_page()
    page.set_default_timeout(20_000)
    page.on(
        "console",
        lambda m: (
            m.type == "error"
            and not EXPECTED_STATUS.search(m.text)
            and watch.console_errors.append(m.text)
        ),
    )
    page.on("pageerror", lambda e: watch.console_errors.append(f"uncaught: {e}"))
    page.on(
        "response",
        lambda r: (
            r.status >= 500
            and r.status not in (502, 503)
            and watch.server_errors.append(f"{r.status} {r.url}")
        ),
    )
    return context, page, watch


@contextlib.contextmanager
def open_page(browser: Any, base_url: str, width: int, height: int) -> Iterator[Any]:
    """A watched page (see the module's docstring), checked when it is closed."""
    context, p, watch = watched_page(browser, base_url, width, height)
    try:
        yield p
    finally:
        context.close()
    watch.check()


@pytest.fixture
def page(browser: Any, ui_server: str) -> Iterator[Any]:
    """A page 1280 px wide."""
    with open_page(browser, ui_server, 1280, 900) as p:
        yield p


@pytest.fixture
def phone_page(browser: Any, ui_server: str) -> Iterator[Any]:
    """A page 390 px wide (a phone)."""
    with open_page(browser, ui_server, 390, 844) as p:
        yield p


def shot(page: Any, name: str) -> Path:
    """A full-page screenshot into test-artifacts/ui/<name>.png."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    return path


def no_sideways_scroll(page: Any) -> None:
    """The page fits its window's width (no horizontal scrolling)."""
    scroll, width = page.evaluate(
        "[document.documentElement.scrollWidth, document.documentElement.clientWidth]"
    )
    assert scroll <= width, f"the page is {scroll} px wide in a {width} px window"


def every_control_labelled(page: Any) -> None:
    """Every input, select, textarea and button on the page has a name a screen reader says."""
    unnamed = page.evaluate(
        """() => [...document.querySelectorAll('input, select, textarea, button')]
          .filter((e) => !(e.labels && e.labels.length) && !e.getAttribute('aria-label')
                         && !(e.tagName === 'BUTTON' && e.textContent.trim()))
          .map((e) => e.outerHTML.slice(0, 160))"""
    )
    assert not unnamed, f"controls without a label: {unnamed}"


def wait_for_text(
    page: Any, locator: Any, text: str, timeout_s: float = ROWS_TIMEOUT_MS / 1000
) -> None:
    """Wait until `locator` shows `text`; fail at once, with its error, if the pipeline fails."""
    deadline = time.monotonic() + timeout_s
    while (shown := locator.inner_text().strip()) != text:
        failed = page.locator(".state.failed")
        assert not failed.count(), (
            f"the pipeline failed: {page.locator('.error-text, .message.error').all_inner_texts()}"
        )
        assert time.monotonic() < deadline, (
            f"still {shown!r}, not {text!r}, after {timeout_s:.0f} s"
        )
        page.wait_for_timeout(500)


def error_of(page: Any, field_id: str) -> Any:
    """The message shown next to the field `field_id`."""
    return page.locator(f"#{field_id}-error")


def next_step(page: Any, title: str) -> None:
    """Click the wizard's Next and wait for the step `title`: Next checks the step with the
    API first, and a click made meanwhile moves nowhere (it is disabled until the check ends)."""
    page.get_by_role("button", name="Next", exact=True).click()
    expect_(page.get_by_role("heading", name=title, exact=True)).to_be_visible()


def deploy_from_review(page: Any, name: str, *in_yaml: str) -> None:
    """On the wizard's review step: name the pipeline, see `in_yaml` in its document, Deploy,
    and land on its page."""
    page.get_by_label("Pipeline name").fill(name)
    review = page.get_by_test_id("review-yaml")
    for text in in_yaml:
        expect_(review).to_contain_text(text)
    page.get_by_role("button", name="Deploy").click()
    expect_(page.get_by_role("heading", name=name)).to_be_visible()
