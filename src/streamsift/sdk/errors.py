"""The SDK's errors: one per kind of answer, each carrying the server's error body.

    ApiError(status, code, message, details)
      BadRequest (400, 413, 415)   NotFound (404)   Conflict (409)   Unauthorized (401)
      ValidationFailed (422: .problems, one "field.path: message" line each)
      ServiceUnavailable (503: the server is not ready, or something outside did not answer)

They also derive from the matching kind of the error hierarchy (`streamsift.errors`), so code
that handles `ConfigurationError` or `TransientError` handles them too.
"""

from __future__ import annotations

from typing import Any

from streamsift.errors import (
    ConfigurationError,
    ConflictError,
    NotFoundError,
    PermanentError,
    StreamsiftError,
    TransientError,
)


class ApiError(StreamsiftError):
    """An error answer of the server: its status, code, message and details."""

    def __init__(self, status: int, code: str, message: str, details: dict[str, Any]) -> None:
        super().__init__(f"{status} {code}: {message}", hint=details.get("hint"))
        self.status = status
        self.code = code
        self.server_message = message
        self.details = details


class BadRequest(ApiError, ConfigurationError):
    """The server could not read the request (400, 413, 415)."""


class Unauthorized(ApiError, ConfigurationError):
    """The token is missing or wrong (401)."""


class NotFound(ApiError, NotFoundError):
    """404: no such pipeline, topic, table or route."""


class Conflict(ApiError, ConflictError):
    """409: the request does not fit the current state; `details` says what is allowed."""


class ValidationFailed(ApiError, ConfigurationError):
    """422: the document or request has problems, listed in `problems`."""

    @property
    def problems(self) -> list[str]:
        return list(self.details.get("problems", []))


class ServiceUnavailable(ApiError, TransientError):
    """503: the server is not ready, or a broker or ClickHouse did not answer."""


class ServerError(ApiError, PermanentError):
    """500 or 502: the server failed, or something downstream refused."""


_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: Unauthorized,
    404: NotFound,
    409: Conflict,
    413: BadRequest,
    415: BadRequest,
    422: ValidationFailed,
    503: ServiceUnavailable,
}


def error_from_response(status: int, body: Any) -> ApiError:
    """The typed error for an answer's status and (error-shaped, ideally) JSON body."""
    if not isinstance(body, dict):
        body = {"message": str(body)[:500] if body else f"HTTP {status}"}
    cls = _BY_STATUS.get(status, ServerError if status >= 500 else ApiError)
    details = body.get("details")
    return cls(
        status,
        str(body.get("code", "error")),
        str(body.get("message", f"HTTP {status}")),
        details if isinstance(details, dict) else {},
    )
