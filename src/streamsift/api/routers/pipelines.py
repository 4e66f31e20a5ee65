"""Pipelines: create, list, read, edit, stop, terminate, resume, delete; status and history.

Each route is one call of the service core (service/core.py); its errors answer in the one
shape (api/error_responses.py): a document's problems 422, no such pipeline 404, a request the state
does not allow 409 with `current_status` and `valid_transitions`. Routes are plain functions:
FastAPI runs them in its threadpool, so the service's blocking work never holds the event loop.
Documents go out with their secrets as `***`.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response

from streamsift.api.deps import DOCUMENT_BODY_OPENAPI, DocumentBody, ServiceDep
from streamsift.api.glassflow_shapes import originals_of
from streamsift.engine.errors import DlqNotFound
from streamsift.service.authoring.table_preview import newest_rows
from streamsift.wire.error_body import ErrorBody
from streamsift.wire.pipelines import (
    PipelineModel,
    PipelineStatusModel,
    StatusChangeModel,
    TableRowsModel,
)

CONFLICT = {
    409: {
        "model": ErrorBody,
        "description": "not allowed in the pipeline's state: details.current_status and "
        "details.valid_transitions say what is",
    }
}

router = APIRouter(prefix="/api/v1/pipelines", tags=["pipelines"], responses=CONFLICT)

PipelineId = Annotated[str, Path(description="the pipeline's id: its document's name")]


@router.post(
    "",
    status_code=201,
    summary="create a pipeline from a document (JSON or YAML) and start it",
    openapi_extra=DOCUMENT_BODY_OPENAPI,
)
def create(document: DocumentBody, service: ServiceDep) -> PipelineModel:
    return PipelineModel.model_validate(service.create(document))


@router.get("", summary="every pipeline, with its state")
def list_pipelines(service: ServiceDep) -> list[PipelineModel]:
    return [PipelineModel.model_validate(r) for r in service.list()]


@router.get("/{pipeline_id}", summary="a pipeline's record")
def get(pipeline_id: PipelineId, service: ServiceDep) -> PipelineModel:
    return PipelineModel.model_validate(service.get(pipeline_id))


@router.put(
    "/{pipeline_id}",
    summary="replace a stopped pipeline's document (a new version)",
    description="Secrets sent as `***` keep their stored values. A change of what the "
    "checkpoint's state is built on (source topics, dedup key or window, join keys) is "
    "refused (409) unless `reset_state=true`, which drops offsets and dedup/join state.",
    openapi_extra=DOCUMENT_BODY_OPENAPI,
)
def edit(
    pipeline_id: PipelineId,
    document: DocumentBody,
    service: ServiceDep,
    reset_state: Annotated[
        bool, Query(description="start afresh at the next resume (needed by some changes)")
    ] = False,
) -> PipelineModel:
    return PipelineModel.model_validate(service.edit(pipeline_id, document, reset_state))


@router.delete(
    "/{pipeline_id}",
    status_code=204,
    response_class=Response,
    summary="forget a stopped pipeline: its versions, history and checkpoint",
)
def delete(pipeline_id: PipelineId, service: ServiceDep) -> None:
    service.delete(pipeline_id)
    # the GlassFlow routes keep a pipeline's GlassFlow document beside the store: gone with it
    originals_of(service.data_dir).forget(pipeline_id)


@router.post("/{pipeline_id}/stop", summary="stop gracefully: the micro-batch in flight ends")
def stop(pipeline_id: PipelineId, service: ServiceDep) -> PipelineModel:
    return PipelineModel.model_validate(service.stop(pipeline_id))


@router.post(
    "/{pipeline_id}/terminate",
    summary="stop at once (the checkpoint keeps exactly-once: a batch in flight is redone)",
)
def terminate(pipeline_id: PipelineId, service: ServiceDep) -> PipelineModel:
    return PipelineModel.model_validate(service.terminate(pipeline_id))


@router.post("/{pipeline_id}/resume", summary="start a stopped or failed pipeline again")
def resume(pipeline_id: PipelineId, service: ServiceDep) -> PipelineModel:
    return PipelineModel.model_validate(service.resume(pipeline_id))


@router.get(
    "/{pipeline_id}/document",
    summary="the pipeline's current document (secrets as ***)",
    response_model=dict[str, Any],
)
def document(pipeline_id: PipelineId, service: ServiceDep) -> dict[str, Any]:
    return service.document(pipeline_id, reveal_secrets=False)


@router.get("/{pipeline_id}/status", summary="state, counts, lag and the last micro-batch")
def status(pipeline_id: PipelineId, service: ServiceDep) -> PipelineStatusModel:
    return PipelineStatusModel.model_validate(service.status(pipeline_id))


@router.get("/{pipeline_id}/history", summary="every change of state, oldest first")
def history(pipeline_id: PipelineId, service: ServiceDep) -> list[StatusChangeModel]:
    return [StatusChangeModel.model_validate(c) for c in service.history(pipeline_id)]


@router.get("/{pipeline_id}/rows", summary="rows in the pipeline's table, and the newest ones")
def rows(
    pipeline_id: PipelineId,
    service: ServiceDep,
    limit: Annotated[int, Query(ge=1, le=100, description="at most this many rows")] = 10,
) -> TableRowsModel:
    try:
        return TableRowsModel.model_validate(newest_rows(service, pipeline_id, limit))
    except DlqNotFound:  # not started yet: neither its table nor its DLQ table exists
        sink = service.pipeline(pipeline_id).sink
        columns = [m.column for m in sink.mapping]
        return TableRowsModel(
            table=sink.table, exists=False, count=0, columns=columns, order=None, rows=[]
        )
