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

from streamsift.api.errors import BadRequest
from streamsift.api.settings import ServiceSettings
from streamsift.config.errors import ConfigError
from streamsift.config.loader import parse_document
from streamsift.errors import TransientError

YAML_TYPES = frozenset({"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"})
JSON_TYPES = frozenset({"application/json", ""})
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


def get_service(request: Request) -> Any:
    """The PipelineService the lifespan built (typed Any until the service core is merged)."""
    service = getattr(request.app.state, "service", None)
    if service is None:
        raise ServiceNotReady("the pipeline service is not running")
    return service


ServiceDep = Annotated[Any, Depends(get_service)]

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
    """The request body as a mapping: YAML for a YAML content type, JSON otherwise.

    Malformed input is a 400 naming the line and column; it is not validated as a pipeline
    here (routes do that, answering 422 with one line per problem)."""
    content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type in YAML_TYPES:
        syntax = "yaml"
    elif content_type in JSON_TYPES or content_type.endswith("+json"):
        syntax = "json"
    else:
        raise BadRequest(
            f"content type {content_type!r} is not supported: send application/json "
            "or application/yaml",
            status=415,
        )
    data = await request.body()
    if not data.strip():
        raise BadRequest("the request body is empty: send a pipeline document")
    try:
        return parse_document(data, syntax)
    except ConfigError as exc:
        raise BadRequest(exc.problems[0]) from None


DocumentBody = Annotated[dict[str, Any], Depends(document_body)]
