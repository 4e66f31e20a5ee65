"""Check filter and computed-field expressions, and preview their value on a sample event.

Checking and previewing run on worker threads, at most `_AT_ONCE` at a time (further requests
wait on the event loop, holding no thread), so previews cannot take the threads `/healthz` and
the other routes need; the preview's own budget (service/authoring/expressions/interpreter.py) bounds each one.
An expression past a bound on its size or nesting is a 422 naming `expression`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import anyio
from fastapi import APIRouter, Request

from streamsift.api.error_responses import InvalidRequest
from streamsift.service.authoring import expression_preview
from streamsift.service.errors import ExpressionTooBig
from streamsift.wire.helpers import (
    EvaluateRequest,
    ExpressionCheckResult,
    ExpressionRequest,
    ExpressionValueResult,
)

router = APIRouter(prefix="/api/v1/expressions", tags=["expressions"])

_AT_ONCE = 2
T = TypeVar("T")


async def _off_the_loop(request: Request, fn: Callable[[], T]) -> T:
    limiter = getattr(request.app.state, "expression_limiter", None)
    if limiter is None:  # one per app, made inside the event loop that serves it
        limiter = request.app.state.expression_limiter = anyio.CapacityLimiter(_AT_ONCE)
    try:
        return await anyio.to_thread.run_sync(fn, limiter=limiter)
    except ExpressionTooBig as exc:
        raise InvalidRequest(str(exc), 422) from None


@router.post("/validate", summary="check an expression as `streamsift validate` does")
async def validate(request: Request, body: ExpressionRequest) -> ExpressionCheckResult:
    checked = await _off_the_loop(
        request, lambda: expression_preview.check(body.expression, body.scope(), body.type)
    )
    return ExpressionCheckResult(kind=checked.kind, fields=list(checked.fields))


@router.post("/evaluate", summary="an expression's value on a sample event")
async def evaluate(request: Request, body: EvaluateRequest) -> ExpressionValueResult:
    result = await _off_the_loop(
        request,
        lambda: expression_preview.evaluate(body.expression, body.scope(), body.event, body.type),
    )
    return ExpressionValueResult(
        value=result.value, kind=result.kind, passes=result.passes, note=result.note
    )
