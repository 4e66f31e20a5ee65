"""A pipeline's dead letters: stats, a paged list, consume, purge and replay.

The routes open the pipeline's DLQ table through the service (engine/dead_letters.py, the
same code as `streamsift dlq`); they are plain functions, so FastAPI runs their ClickHouse work
in its threadpool. A pipeline that has not created its DLQ table yet has no dead letters:
its stats are zeros and its lists empty (no pipeline at all is a 404).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, TypeVar

from fastapi import APIRouter, Body, Path, Query

from streamsift.api.deps import ServiceDep
from streamsift.engine.dead_letters import DeadLetters
from streamsift.engine.errors import DlqNotFound
from streamsift.service.core import PipelineService
from streamsift.wire.dead_letters import (
    ConsumedLetters,
    DeadLetterModel,
    DeadLetterPage,
    DlqStats,
    PurgeResult,
    ReplayRequest,
    ReplayResult,
)

T = TypeVar("T")
MAX_PAGE = 1000

router = APIRouter(prefix="/api/v1/pipelines/{pipeline_id}/dlq", tags=["dead letters"])

PipelineId = Annotated[str, Path(description="the pipeline's id: its document's name")]
Limit = Annotated[int, Query(ge=1, le=MAX_PAGE, description="at most this many")]


def _with_letters(
    service: PipelineService, pipeline_id: str, use: Callable[[DeadLetters], T], none: T
) -> T:
    """`use` the pipeline's dead letters; `none` when its DLQ table does not exist yet."""
    try:
        with service.dead_letters(pipeline_id) as letters:
            return use(letters)
    except DlqNotFound:
        return none


@router.get("/stats", summary="dead letters by what happened to them, and by error class")
def stats(pipeline_id: PipelineId, service: ServiceDep) -> DlqStats:
    def count(letters: DeadLetters) -> DlqStats:
        counts, totals = letters.stats()
        return DlqStats.of(pipeline_id, letters.table, counts, totals)

    return _with_letters(service, pipeline_id, count, None) or DlqStats.of(
        pipeline_id, service.pipeline(pipeline_id).dlq_table, [], None
    )


@router.get("/messages", summary="a page of the pending dead letters, oldest position first")
def messages(
    pipeline_id: PipelineId,
    service: ServiceDep,
    limit: Limit = 100,
    offset: Annotated[int, Query(ge=0, description="skip this many first")] = 0,
) -> DeadLetterPage:
    def page(letters: DeadLetters) -> DeadLetterPage:
        found = letters.pending(limit, offset)
        return DeadLetterPage(
            pending=letters.pending_count(),
            offset=offset,
            limit=limit,
            messages=[DeadLetterModel.of(x) for x in found],
        )

    empty = DeadLetterPage(pending=0, offset=offset, limit=limit, messages=[])
    return _with_letters(service, pipeline_id, page, empty)


@router.post(
    "/consume",
    summary="take the oldest pending dead letters and mark them consumed",
    description="The answer carries them; they are marked before it is sent, so a caller "
    "that loses the answer finds them as consumed (in stats), not pending.",
)
def consume(pipeline_id: PipelineId, service: ServiceDep, limit: Limit = 100) -> ConsumedLetters:
    def take(letters: DeadLetters) -> ConsumedLetters:
        taken = letters.consume(limit, lambda _: None)
        return ConsumedLetters(consumed=len(taken), messages=[DeadLetterModel.of(x) for x in taken])

    return _with_letters(service, pipeline_id, take, ConsumedLetters(consumed=0, messages=[]))


@router.post("/purge", summary="delete all the pipeline's dead letters, pending and handled")
def purge(pipeline_id: PipelineId, service: ServiceDep) -> PurgeResult:
    purged = _with_letters(service, pipeline_id, lambda letters: letters.purge(), 0)
    return PurgeResult(purged=purged)


@router.post(
    "/replay",
    summary="re-process pending dead letters with the pipeline's current schema and mapping",
    description="Records that now parse (and that ClickHouse accepts) are written into the "
    "table and marked replayed; the others stay pending with their new error. Safe to repeat.",
)
def replay(
    pipeline_id: PipelineId,
    service: ServiceDep,
    body: Annotated[ReplayRequest, Body()] = ReplayRequest(),  # noqa: B008 - an immutable model
) -> ReplayResult:
    def run(letters: DeadLetters) -> ReplayResult:
        report = letters.replay(limit=body.limit, dry_run=body.dry_run)
        return ReplayResult.model_validate(report.as_dict())

    nothing = ReplayResult(
        replayed=0,
        still_failing=0,
        chunks=0,
        resumed_chunks=0,
        dry_run=body.dry_run,
        still_failing_by_class=[],
    )
    return _with_letters(service, pipeline_id, run, nothing)
