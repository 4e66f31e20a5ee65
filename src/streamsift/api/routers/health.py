"""Health checks, open without a token: `/healthz` (the process answers) and `/readyz`
(the pipeline service is up: 503 while the server starts or stops)."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse

from streamsift.api.error_responses import error_response

router = APIRouter(tags=["health"])


@router.get("/healthz", summary="the server answers")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@router.get(
    "/readyz",
    summary="the pipeline service is up",
    responses={503: {"description": "starting or stopping"}},
)
def readyz(request: Request) -> JSONResponse:
    if not getattr(request.app.state, "ready", False):
        return error_response(503, "the server is starting or stopping")
    return JSONResponse({"status": "ready"})
