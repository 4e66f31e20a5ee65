"""The API's one mapping from errors to HTTP answers, and the one shape of every error body.

    {"status": 404, "code": "not_found", "message": "...", "details": {...}}

(the shape GlassFlow's API uses, so one shape serves both APIs). Errors of the hierarchy map by
kind: a pipeline document's problems (`ConfigError`) → 422 with `details.problems`, one
"field.path: message" line each, as `streamsift validate` prints them; `NotFoundError` → 404;
`ConflictError` → 409 with its details; any other `ConfigurationError` → 400;
`TransientError` → 503; `PermanentError` → 502 (something downstream refused). FastAPI's own
request validation → 422 (400 for a body that is not JSON); anything unexpected → 500 with a
generic message, logged by its type and traceback (middleware.py). `details.hint` carries the error's hint when it has one.
"""

from __future__ import annotations

import logging
import traceback
from http import HTTPStatus
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from streamsift.config.errors import ConfigError
from streamsift.errors import (
    ConfigurationError,
    ConflictError,
    NotFoundError,
    StreamsiftError,
    TransientError,
)

log = logging.getLogger("streamsift.api")

CODES = {
    400: "bad_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "unprocessable_entity",
    500: "internal_error",
    502: "bad_gateway",
    503: "service_unavailable",
}


class InvalidRequest(ConfigurationError):
    """A request the server cannot read: a malformed body, an unsupported content type."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


def status_of(exc: StreamsiftError) -> int:
    """The HTTP status for an error of the hierarchy."""
    if isinstance(exc, ConfigError):
        return 422
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, ConflictError):
        return 409
    if isinstance(exc, InvalidRequest):
        return exc.status
    if isinstance(exc, ConfigurationError):
        return 400
    if isinstance(exc, TransientError):
        return 503
    return 502


def error_body(status: int, message: str, details: dict[str, Any] | None = None) -> dict:
    code = CODES.get(status) or HTTPStatus(status).phrase.lower().replace(" ", "_")
    return {"status": status, "code": code, "message": message, "details": details or {}}


def error_response(
    status: int,
    message: str,
    details: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> JSONResponse:
    return JSONResponse(error_body(status, message, details), status_code=status, headers=headers)


def _streamsift_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StreamsiftError)
    status = status_of(exc)
    details: dict[str, Any] = {}
    message = exc.message
    if isinstance(exc, ConfigError):
        details["problems"] = exc.problems
        count = len(exc.problems)
        message = f"the pipeline document has {count} problem{'s' if count != 1 else ''}"
    if isinstance(exc, ConflictError):
        details.update(exc.details)
    if exc.hint:
        details["hint"] = exc.hint
    if status >= 500:
        log.warning("%s %s: %s", request.method, request.url.path, exc.message)
    return error_response(status, message, details)


def _request_validation_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = exc.errors()
    bad_json = next((e for e in errors if e.get("type") == "json_invalid"), None)
    if bad_json is not None:
        return error_response(400, _json_problem(bad_json, exc.body))
    if any(
        tuple(e.get("loc") or ()) == ("body",) and isinstance(e.get("input"), bytes) for e in errors
    ):
        return error_response(
            400, "the body must be a JSON object, sent with Content-Type: application/json"
        )
    problems = [_problem(e) for e in errors]
    count = len(problems)
    return error_response(
        422,
        f"the request has {count} problem{'s' if count != 1 else ''}",
        {"problems": problems},
    )


def _json_problem(error: dict[str, Any], body: Any) -> str:
    """'not valid JSON: <why> at line L column C', like a pipeline file's message."""
    why = (error.get("ctx") or {}).get("error", "cannot be decoded")
    loc = error.get("loc") or ()
    pos = loc[-1] if loc and isinstance(loc[-1], int) else None
    if pos is None or not isinstance(body, (str, bytes)):
        return f"not valid JSON: {why}"
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    line = text.count("\n", 0, pos) + 1
    column = pos - (text.rfind("\n", 0, pos) + 1) + 1
    return f"not valid JSON: {why} at line {line} column {column}"


def _problem(error: dict[str, Any]) -> str:
    """'field.path: message' for one of FastAPI's validation errors (without 'body.')."""
    loc = list(error.get("loc") or ())
    if loc and loc[0] in ("body", "query", "path", "header"):
        where = loc.pop(0)
        if not loc and where != "body":
            loc = [where]
    path = ".".join(f"[{p}]" if isinstance(p, int) else str(p) for p in loc).replace(".[", "[")
    msg = str(error.get("msg", "invalid"))
    for prefix in ("Value error, ", "Assertion failed, "):
        msg = msg.removeprefix(prefix)
    if error.get("type") == "missing":
        msg = "required field is missing"
    elif error.get("type") == "extra_forbidden":
        msg = "unknown field"
    return f"{path}: {msg}" if path else msg


def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    status = exc.status_code
    if status == 404 and exc.detail == "Not Found":
        message = f"no such route: {request.method} {request.url.path}"
    elif status == 405:
        message = f"{request.method} is not allowed on {request.url.path}"
    else:
        message = str(exc.detail)
    return error_response(status, message, headers=getattr(exc, "headers", None))


def log_unexpected(method: str, path: str, exc: BaseException) -> None:
    """Log an unexpected error by its type and where it came from, not its text: the text of
    an error nobody planned for may hold anything, secrets included."""
    where = "".join(traceback.format_tb(exc.__traceback__))
    log.error("unexpected %s in %s %s\n%s", type(exc).__name__, method, path, where)


def unexpected_response() -> JSONResponse:
    return error_response(500, "internal error: see the server's log")


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(StreamsiftError, _streamsift_error)
    app.add_exception_handler(RequestValidationError, _request_validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
