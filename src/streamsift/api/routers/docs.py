"""The OpenAPI document and its Swagger UI at /docs, served without the token.

They describe the API and hold no data, so a browser can open them on a server that has a
token: Swagger's Authorize button takes the token, and the page fills it in by itself from
the web UI's tab (the UI keeps it in sessionStorage under `streamsift.token`).

Swagger UI's files come from the `swagger-ui-bundle-v2` package when it is installed (served
under /docs/assets/, nothing leaves the machine); otherwise from jsdelivr, as FastAPI's own
page loads them, and the page's CSP allows that CDN. The page runs no inline script (its
start is /docs/init.js), so the CSP needs no 'unsafe-inline' for scripts.
"""

from __future__ import annotations

import html
from importlib.util import find_spec
from pathlib import Path

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse, Response

from streamsift.api.error_responses import error_response

router = APIRouter(include_in_schema=False)

CDN = "https://cdn.jsdelivr.net/npm/swagger-ui-dist@5"
ASSETS = ("swagger-ui.css", "swagger-ui-bundle.js", "favicon-32x32.png")
TOKEN_KEY = "streamsift.token"  # where the web UI keeps the token (ui/src/api.ts)

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="{base}/swagger-ui.css">
<link rel="icon" type="image/png" href="{icon}">
</head><body>
<div id="swagger-ui"></div>
<noscript>This page needs JavaScript; the API's description is at
<a href="/openapi.json">/openapi.json</a>.</noscript>
<script src="{base}/swagger-ui-bundle.js"></script>
<script src="/docs/init.js"></script>
</body></html>
"""

INIT = """// Swagger UI on /openapi.json, authorized with the web UI's token when this tab has one.
const ui = SwaggerUIBundle({
  url: "/openapi.json",
  dom_id: "#swagger-ui",
  layout: "BaseLayout",
  deepLinking: true,
  showExtensions: true,
  validatorUrl: null,  // no badge from validator.swagger.io: nothing leaves the machine
  presets: [SwaggerUIBundle.presets.apis],
  onComplete: () => {
    const token = sessionStorage.getItem("TOKEN_KEY");
    if (token) ui.preauthorizeApiKey("HTTPBearer", token);
  },
});
""".replace("TOKEN_KEY", TOKEN_KEY)


def local_assets() -> Path | None:
    """Where the installed swagger-ui-bundle keeps Swagger UI's files, if it is installed."""
    if find_spec("swagger_ui_bundle") is None:
        return None
    import swagger_ui_bundle

    return Path(str(swagger_ui_bundle.swagger_ui_path))


def csp(local: bool) -> str:
    """The page's Content-Security-Policy: its own files (or the CDN's), no framing."""
    outside = "" if local else f" {CDN.split('/npm')[0]}"
    return (
        f"default-src 'self'; script-src 'self'{outside}; style-src 'self' 'unsafe-inline'"
        f"{outside}; img-src 'self' data:; connect-src 'self'; object-src 'none'; "
        "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"
    )


@router.get("/openapi.json")
def openapi(request: Request) -> JSONResponse:
    return JSONResponse(request.app.openapi())


@router.get("/docs")
def docs(request: Request) -> HTMLResponse:
    local = local_assets() is not None
    base = "/docs/assets" if local else CDN
    page = PAGE.format(
        title=html.escape(f"{request.app.title} API"),
        base=base,
        icon="/docs/assets/favicon-32x32.png" if local else "data:,",
    )
    return HTMLResponse(page, headers={"Content-Security-Policy": csp(local)})


@router.get("/docs/init.js")
def init() -> Response:
    return Response(
        INIT,
        media_type="text/javascript",
        headers={"Cache-Control": "no-cache", "Content-Security-Policy": csp(True)},
    )


@router.get("/docs/assets/{name}")
def asset(name: str) -> Response:
    root = local_assets()
    if root is None or name not in ASSETS or not (root / name).is_file():
        return error_response(404, f"no such file of the docs: {name}")
    return FileResponse(root / name, headers={"Cache-Control": "public, max-age=86400"})
