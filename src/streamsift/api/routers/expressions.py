"""Check filter and computed-field expressions, and preview their value on a sample event."""

from __future__ import annotations

from fastapi import APIRouter

from streamsift.api.models import (
    EvaluateRequest,
    ExpressionCheckResult,
    ExpressionRequest,
    ExpressionValueResult,
)
from streamsift.runtime import expression_preview

router = APIRouter(prefix="/api/v1/expressions", tags=["expressions"])


@router.post("/validate", summary="check an expression as `streamsift validate` does")
def validate(body: ExpressionRequest) -> ExpressionCheckResult:
    checked = expression_preview.check(body.expression, body.scope(), body.type)
    return ExpressionCheckResult(kind=checked.kind, fields=list(checked.fields))


@router.post("/evaluate", summary="an expression's value on a sample event")
def evaluate(body: EvaluateRequest) -> ExpressionValueResult:
    result = expression_preview.evaluate(body.expression, body.scope(), body.event, body.type)
    return ExpressionValueResult(
        value=result.value, kind=result.kind, passes=result.passes, note=result.note
    )
