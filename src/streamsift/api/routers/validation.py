"""Validate a pipeline document without creating anything: `streamsift validate` over HTTP."""

from __future__ import annotations

from fastapi import APIRouter

from streamsift.api.deps import DOCUMENT_BODY_OPENAPI, DocumentBody, SettingsDep
from streamsift.config.summary import summary
from streamsift.service.core import judged
from streamsift.wire.error_body import ErrorBody
from streamsift.wire.helpers import ValidateResult

router = APIRouter(prefix="/api/v1/pipelines", tags=["pipelines"])


@router.post(
    "/validate",
    summary="check a pipeline document (JSON or YAML); 422 lists its problems",
    openapi_extra=DOCUMENT_BODY_OPENAPI,
    responses={422: {"model": ErrorBody, "description": "details.problems: one line each"}},
)
def validate(document: DocumentBody, settings: SettingsDep) -> ValidateResult:
    """As create would judge it: the document (its relative paths the data dir's), then what
    this server lets documents name."""
    _, pipeline = judged(document, settings.document_policy())
    return ValidateResult(name=pipeline.name, summary=summary(pipeline))
