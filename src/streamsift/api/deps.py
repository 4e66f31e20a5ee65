"""Dependencies the routers declare: the service, the settings, the token check, documents.

ServiceDep   the app's PipelineService (503 while the server starts or stops)
SettingsDep  the ServiceSettings the app was built with
require_token  `Authorization: Bearer <token>` when the server has a token
DocumentBody   a request body holding a pipeline document, as JSON or YAML
"""

from __future__ import annotations

import hmac
from typing import Annotated, Any

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.exceptions import HTTPException

from streamsift.api.error_responses import InvalidRequest
from streamsift.api.http_guard import YAML_TYPES, body_type_ok, media_type
from streamsift.api.settings import ServiceSettings
from streamsift.config.errors import ConfigError
from streamsift.config.loader import parse_document
from streamsift.errors import TransientError
from streamsift.service.core import PipelineService

# How a route that reads a DocumentBody describes its body in the OpenAPI document.
DOCUMENT_BODY_OPENAPI: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "description": "a pipeline document (streamsift or GlassFlow), as JSON or YAML",
        "content": {
            "application/json": {"schema": {"type": "object"}},
            "application/yaml": {"schema": {"type": "string"}},
        },
    }
}


def get_settings(request: Request) -> ServiceSettings:
    return request.app.state.settings


SettingsDep = Annotated[ServiceSettings, Depends(get_settings)]


class ServiceNotReady(TransientError):
    default_hint = "the server is starting or stopping; try again in a moment"


def get_service(request: Request) -> PipelineService:
    """The PipelineService the lifespan built (503 before it has, or after it closed)."""
    service = getattr(request.app.state, "service", None)
    if service is None or not getattr(request.app.state, "ready", False):
        raise ServiceNotReady("the pipeline service is not running")
    return service


ServiceDep = Annotated[PipelineService, Depends(get_service)]

_bearer = HTTPBearer(
    auto_error=False,
    description="the token `streamsift serve` was started with (--token, STREAMSIFT_API_TOKEN)",
)


def require_token(
    settings: SettingsDep,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """401 unless the request carries the server's token (compared in constant time)."""
    if settings.token is None:
        return
    expected = settings.token.get_secret_value().encode()
    given = credentials.credentials.encode() if credentials is not None else b""
    if credentials is None or not hmac.compare_digest(given, expected):
        raise HTTPException(
            401,
            "this server needs a token: send the header 'Authorization: Bearer <token>'"
            if credentials is None
            else "the token is not this server's",
            headers={"WWW-Authenticate": "Bearer"},
        )


async def document_body(request: Request) -> dict[str, Any]:
    """The request body as a mapping: YAML for a YAML content type, JSON for a JSON one.

    A body without a Content-Type is refused (415), not read as JSON: a browser may send such
    a body cross-site without asking first (http_guard.py refuses it before it gets here).
    Malformed input is a 400 naming the line and column; it is not validated as a pipeline
    here (routes do that, answering 422 with one line per problem)."""
    content_type = media_type(request.headers.get("content-type", ""))
    data = await request.body()
    if not data.strip():
        raise InvalidRequest("the request body is empty: send a pipeline document")
    if not body_type_ok(content_type):
        raise InvalidRequest(
            f"content type {content_type!r} is not supported: send application/json "
            "or application/yaml",
            status=415,
        )
    syntax = "yaml" if content_type in YAML_TYPES else "json"
    try:
        return parse_document(data, syntax)
    except ConfigError as exc:
        raise InvalidRequest(exc.problems[0]) from None


DocumentBody = Annotated[dict[str, Any], Depends(document_body)]
