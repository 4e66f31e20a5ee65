"""GlassFlow's REST API (`/api/v1/pipeline...`), so GlassFlow's scripts and Python SDK run
against streamsift: a thin adapter over the PipelineService and the GlassFlow importer.

Bodies are GlassFlow v3 JSON (converted by config/glassflow, then run by the service); `GET`
answers v3 JSON: the document the pipeline was created from when it still is its current
version (secrets "***"), else an export of its streamsift document (config/glassflow/export.py,
docs/glassflow.md says what v3 cannot express). Action routes answer 200 with an empty body, as
GlassFlow does; status codes and error codes are the ones GlassFlow's SDK maps to its exceptions
(see api/glassflow_shapes.py). A pipeline created through either API is visible through both.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Annotated, Any

from fastapi import APIRouter, Body, FastAPI, Query, Request, Response
from fastapi.responses import JSONResponse

from streamsift import __version__
from streamsift.api.deps import ServiceDep
from streamsift.api.glassflow_shapes import (
    EMPTY_DLQ_STATE,
    GlassFlowStatusError,
    Originals,
    check_texts,
    dead_letter_message,
    dlq_state,
    glassflow_errors,
    glassflow_status,
    normalize_v3,
    originals_of,
    rfc3339,
    transformation_type,
)
from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.glassflow import glassflow_version, import_glassflow
from streamsift.config.glassflow.export import export_v3
from streamsift.engine.dead_letters import DeadLetters
from streamsift.engine.errors import DlqNotFound
from streamsift.engine.registry_fields import glassflow_with_registry_fields
from streamsift.errors import ConflictError, NotFoundError

PREFIX = "/api/v1/pipeline"
MAX_DLQ_BATCH = 1000

router = APIRouter(prefix=PREFIX, tags=["glassflow"])
open_router = APIRouter(prefix="/api/v1", tags=["glassflow"])

GlassFlowBody = Annotated[dict[str, Any], Body(description="a GlassFlow pipeline (JSON)")]


def include(app: FastAPI, dependencies: list[Any], responses: dict[int | str, Any]) -> None:
    """Add the GlassFlow routes to `app`: health open, the rest behind `dependencies`."""
    app.add_exception_handler(GlassFlowStatusError, _status_error)
    app.include_router(open_router)
    app.include_router(router, dependencies=dependencies, responses=responses)


def _status_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, GlassFlowStatusError)
    return JSONResponse(exc.body(), status_code=exc.status)


def _originals(service: Any) -> Originals:
    return originals_of(service.data_dir)


def _empty() -> Response:
    return Response(status_code=200)


# ------------------------------------------------------------------ health, platform


@open_router.get("/healthz", summary="GlassFlow's health check")
def healthz() -> dict[str, str]:
    return {"status": "ok"}


@open_router.get("/platform", summary="GlassFlow's platform: the orchestrator")
def platform() -> dict[str, str]:
    return {"orchestrator": "local", "api_version": "v3", "streamsift_version": __version__}


# ------------------------------------------------------------------ pipelines


def _import_v3(doc: dict[str, Any], action: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the v3 body as GlassFlow reads it, our document); GlassFlow's 422 for v1/v2."""
    check_texts(doc)
    with glassflow_errors(action):
        version = glassflow_version(doc)
        if version != "v3":
            raise ConfigError(
                f'version: unsupported pipeline version {doc.get("version")!r}; expected "v3" '
                "(convert it with POST /api/v1/pipeline/migrate-preview)"
            )
        doc = normalize_v3(doc)
        return doc, import_glassflow(glassflow_with_registry_fields(doc)).document


@router.post("", summary="create and start a pipeline from GlassFlow v3 JSON")
def create(service: ServiceDep, body: GlassFlowBody) -> Response:
    doc, ours = _import_v3(body, "create")
    pipeline_id = str(doc.get("pipeline_id", "")).strip()
    if ours["name"] != pipeline_id:
        raise GlassFlowStatusError(
            400,
            "bad_request",
            "pipeline id is invalid",
            {"pipeline_id": pipeline_id, "hint": "letters, digits, _ and - only"},
        )
    if _exists(service, pipeline_id):
        # GlassFlow's SDK reads 403 on create as "already exists" (PipelineAlreadyExistsError).
        raise GlassFlowStatusError(
            403, "forbidden", "pipeline with this ID already exists", {"pipeline_id": pipeline_id}
        )
    with glassflow_errors("create"):
        try:
            record = service.create(ours)
        except ConflictError:
            raise GlassFlowStatusError(
                403, "forbidden", "pipeline with this ID already exists", {}
            ) from None
    _originals(service).keep(record, doc)
    return _empty()


def _exists(service: Any, pipeline_id: str) -> bool:
    try:
        service.get(pipeline_id)
    except NotFoundError:
        return False
    return True


@router.get("", summary="every pipeline, in GlassFlow's list shape")
def list_pipelines(service: ServiceDep) -> list[dict[str, Any]]:
    originals = _originals(service)
    items = []
    for record in service.list():
        pipeline = service.pipeline(record.id)
        kept = originals.document(record) or {}
        items.append(
            {
                "pipeline_id": record.id,
                "name": originals.name(record),
                "transformation_type": transformation_type(pipeline),
                "created_at": rfc3339(record.created_at),
                "updated_at": rfc3339(record.updated_at),
                "status": glassflow_status(record.state),
                "metadata": {"tags": list((kept.get("metadata") or {}).get("tags") or [])},
            }
        )
    return items


@router.get("/{pipeline_id}", summary="a pipeline as GlassFlow v3 JSON (secrets ***)")
def get_pipeline(
    service: ServiceDep,
    pipeline_id: str,
    schema: Annotated[
        list[str] | None,
        Query(
            description="GlassFlow's `<source_id>:<version>` (its schema registry's versions): "
            "streamsift keeps one schema per source, the document's, so any is refused (400)"
        ),
    ] = None,
) -> dict[str, Any]:
    record = service.get(pipeline_id)
    if schema:
        raise GlassFlowStatusError(
            400,
            "bad_request",
            f"schema={schema[0]}: streamsift keeps no schema versions; a pipeline has one "
            "schema per source, the one in its document (GET without `schema`)",
            {"schema": schema},
        )
    originals = _originals(service)
    kept = originals.document(record)
    if kept is not None:
        return kept
    pipeline = service.pipeline(pipeline_id)
    return export_v3(pipeline, display_name=originals.name(record)).document


@router.patch("/{pipeline_id}", summary="rename a pipeline (its display name)")
def rename(service: ServiceDep, pipeline_id: str, body: GlassFlowBody) -> Response:
    name = body.get("name")
    if not isinstance(name, str) or not name.strip():
        raise GlassFlowStatusError(
            422, "unprocessable_entity", "name: a non-empty string is required", {}
        )
    check_texts({"name": name.strip()})
    record = service.get(pipeline_id)
    _originals(service).rename(record, name.strip())
    return _empty()


@router.delete("/{pipeline_id}", summary="delete a stopped pipeline")
def delete(service: ServiceDep, pipeline_id: str) -> Response:
    with glassflow_errors("delete"):
        service.delete(pipeline_id)
    _originals(service).forget(pipeline_id)
    return _empty()


@router.post("/{pipeline_id}/edit", summary="replace a stopped pipeline's document, resume it")
def edit(
    service: ServiceDep,
    pipeline_id: str,
    body: GlassFlowBody,
    reset_state: Annotated[
        bool, Query(description="streamsift: start afresh when dedup/join keys or topics change")
    ] = False,
) -> Response:
    body_id = str(body.get("pipeline_id", "")).strip()
    if body_id != pipeline_id:
        raise GlassFlowStatusError(
            400,
            "bad_request",
            "pipeline_id in the body must match the pipeline id in the path",
            {"json_id": body_id, "path_id": pipeline_id},
        )
    service.get(pipeline_id)  # 404 before the document's problems
    doc, ours = _import_v3(body, "edit")
    with glassflow_errors("edit"):
        record = service.edit(pipeline_id, ours, reset_state=reset_state)
    _originals(service).keep(record, doc)
    # GlassFlow resumes a pipeline after an edit (its SDK then reports Resuming).
    with glassflow_errors("resume"):
        service.resume(pipeline_id)
    return _empty()


@router.post("/{pipeline_id}/stop", summary="stop gracefully (the batch in flight finishes)")
def stop(service: ServiceDep, pipeline_id: str) -> Response:
    with glassflow_errors("stop"):
        service.stop(pipeline_id)
    return _empty()


@router.post("/{pipeline_id}/terminate", summary="stop at once")
def terminate(service: ServiceDep, pipeline_id: str) -> Response:
    with glassflow_errors("terminate"):
        service.terminate(pipeline_id)
    return _empty()


@router.post("/{pipeline_id}/resume", summary="resume a stopped or failed pipeline")
def resume(service: ServiceDep, pipeline_id: str) -> Response:
    with glassflow_errors("resume"):
        service.resume(pipeline_id)
    return _empty()


@router.get("/{pipeline_id}/health", summary="a pipeline's status, in GlassFlow's words")
def health(service: ServiceDep, pipeline_id: str) -> dict[str, Any]:
    record = service.get(pipeline_id)
    return {
        "pipeline_id": record.id,
        "pipeline_name": _originals(service).name(record),
        "overall_status": glassflow_status(record.state),
        "created_at": rfc3339(record.created_at),
        "updated_at": rfc3339(record.updated_at),
    }


@router.post("/migrate-preview", summary="GlassFlow v1/v2 JSON as v3 (creates nothing)")
def migrate_preview(body: GlassFlowBody) -> dict[str, Any]:
    check_texts(body)
    with glassflow_errors("migration"):
        result = import_glassflow(glassflow_with_registry_fields(body))
        pipeline = parse_pipeline(result.document)
    name = body.get("name") if isinstance(body.get("name"), str) else None
    document = export_v3(pipeline, display_name=name).document
    document["pipeline_id"] = result.pipeline_id or document["pipeline_id"]
    tags = (
        (body.get("metadata") or {}).get("tags") if isinstance(body.get("metadata"), dict) else None
    )
    if isinstance(tags, list):
        document["metadata"] = {"tags": [str(t) for t in tags]}
    return document


# ------------------------------------------------------------------ DLQ


@contextmanager
def _dead_letters(service: Any, pipeline_id: str) -> Iterator[DeadLetters | None]:
    """The pipeline's dead letters; None while its DLQ table does not exist yet."""
    service.get(pipeline_id)  # 404 for an unknown pipeline
    try:
        with service.dead_letters(pipeline_id) as letters:
            yield letters
    except DlqNotFound:
        yield None


@router.get("/{pipeline_id}/dlq/consume", summary="take up to batch_size dead letters, once")
def dlq_consume(
    service: ServiceDep,
    pipeline_id: str,
    batch_size: Annotated[int, Query(ge=0, le=MAX_DLQ_BATCH)] = 0,
) -> list[dict[str, str]]:
    with _dead_letters(service, pipeline_id) as letters:
        if letters is None:
            return []
        taken = letters.consume(batch_size or 1, lambda _: None)
        return [dead_letter_message(x) for x in taken]


@router.get("/{pipeline_id}/dlq/state", summary="dead-letter counts and times")
def dlq_state_route(service: ServiceDep, pipeline_id: str) -> dict[str, Any]:
    with _dead_letters(service, pipeline_id) as letters:
        return dict(EMPTY_DLQ_STATE) if letters is None else dlq_state(letters)


@router.post("/{pipeline_id}/dlq/purge", summary="delete every dead letter of the pipeline")
def dlq_purge(service: ServiceDep, pipeline_id: str) -> Response:
    with _dead_letters(service, pipeline_id) as letters:
        if letters is not None:
            letters.purge()
    return _empty()
