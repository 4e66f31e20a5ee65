"""The web UI at `/`: the files `make setup` built from ui/ into streamsift/ui/static/.

The UI is a single page (hash routes) that talks to the native API over HTTP; this router
only hands out its files. When the UI was not built (a checkout without `make setup`), `/`
answers a short HTML page saying how to build it, never a 500. Served without the token:
the page holds no data, and asks for the token when the API answers 401.

Every file goes out with a Content-Security-Policy: the page's own scripts and styles only,
requests to this server only, never in a frame (`frame-ancestors 'none'`). Inline styles are
allowed (the charts set them; a style runs no code), inline scripts are not.
"""

from __future__ import annotations

import html
from importlib.resources import files
from pathlib import Path

from fastapi import APIRouter
from fastapi.responses import FileResponse, HTMLResponse, PlainTextResponse

router = APIRouter(tags=["ui"], include_in_schema=False)

CSP = (
    "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; "
    "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; "
    "object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
)

NOT_BUILT = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>streamsift: UI not built</title>
<meta name="viewport" content="width=device-width, initial-scale=1"></head>
<body style="font-family: system-ui, sans-serif; max-width: 40rem; margin: 2rem auto;
padding: 0 1rem; line-height: 1.5">
<h1>The web UI was not built</h1>
<p>This server runs, and its API answers at <a href="/docs">/docs</a>, but the UI's files
are missing from <code>{where}</code>.</p>
<p>Build them from a checkout with <code>make setup</code> (it runs <code>npm ci</code> and
<code>npm run build</code> in <code>ui/</code>; Node 20 or newer), then reload this page.</p>
</body></html>
"""


def static_dir() -> Path:
    """Where the built UI lives (inside the installed package)."""
    return Path(str(files("streamsift"))) / "ui" / "static"


@router.get("/", response_class=HTMLResponse, summary="the web UI")
def index() -> object:
    page = static_dir() / "index.html"
    if not page.is_file():
        return HTMLResponse(
            NOT_BUILT.format(where=html.escape(str(page.parent))),
            status_code=503,
            headers={"Content-Security-Policy": CSP},
        )
    # index.html names its hashed assets: always fetch it anew, so a rebuild shows at once.
    return FileResponse(page, headers={"Cache-Control": "no-cache", "Content-Security-Policy": CSP})


@router.get("/assets/{name:path}", summary="a built asset of the UI")
def asset(name: str) -> object:
    """A file of the build (cached for long: Vite puts a hash of the content in its name)."""
    root = (static_dir() / "assets").resolve()
    path = (root / name).resolve()
    if not path.is_relative_to(root) or not path.is_file():
        return PlainTextResponse(f"no such asset: {name}", status_code=404)
    return FileResponse(
        path,
        headers={
            "Cache-Control": "public, max-age=31536000, immutable",
            "Content-Security-Policy": CSP,
        },
    )
