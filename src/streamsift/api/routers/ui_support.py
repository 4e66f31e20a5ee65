"""The web UI's helper routes (/api/v1/ui): the wizard's defaults on this server, a pipeline
name checked as it is typed, a ClickHouse destination checked as deploy would meet it, an
uploaded file checked before create, the CREATE TABLE a document runs, and each pipeline's
figures over time as the server recorded them (service/history.py)."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request
from starlette.concurrency import run_in_threadpool

from streamsift.api.deps import DOCUMENT_BODY_OPENAPI, DocumentBody, ServiceDep, SettingsDep
from streamsift.api.routers.connections import (
    require_clickhouse_allowed,
    require_kafka_allowed,
    service_path,
)
from streamsift.config.sink import ClickHouseConnection
from streamsift.config.summary import summary
from streamsift.service import ui_support
from streamsift.service.core import judged
from streamsift.service.history import History, Point
from streamsift.wire.ui import (
    ClickHouseCheck,
    KnownClickHouse,
    NameCheck,
    Rate,
    Series,
    SeriesPoint,
    TableInUse,
    TablePlan,
    UiDefaults,
    UploadCheck,
)

router = APIRouter(prefix="/api/v1/ui", tags=["ui"])

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_\-]{0,99}")


def history_of(request: Request) -> History:
    """The app's History (api/app.py records into it)."""
    return request.app.state.history


@router.get("/defaults", summary="what the wizard starts from on this server")
def defaults(service: ServiceDep, settings: SettingsDep) -> UiDefaults:
    found = ui_support.known(service)
    return UiDefaults(
        bootstrap_servers=found.bootstrap_servers,
        clickhouse_path=str(settings.data_dir.resolve() / "clickhouse"),
        clickhouse_servers=[
            KnownClickHouse(
                host=c.host or "",
                port=c.port,
                database=c.database,
                username=c.username,
                secure=c.secure,
            )
            for c in found.servers
        ],
        tables_in_use=[TableInUse(table=t, pipeline=p) for t, p in found.tables],
        pipelines=found.pipelines,
    )


@router.get("/names/{name}", summary="whether a pipeline name is free and well formed")
def name_check(
    name: Annotated[str, Path(description="a pipeline name as typed")], service: ServiceDep
) -> NameCheck:
    if not NAME.fullmatch(name):
        return NameCheck(
            name=name,
            valid=False,
            taken=False,
            message="use letters, digits, _ and - (at most 100), starting with a letter or digit",
        )
    taken = name in {r.id for r in service.list()}
    message = f"a pipeline named {name} exists already: pick another name" if taken else None
    return NameCheck(name=name, valid=True, taken=taken, message=message)


@router.post("/clickhouse/check", summary="what deploying into this ClickHouse would meet")
async def clickhouse_check(
    body: ClickHouseConnection, service: ServiceDep, settings: SettingsDep
) -> ClickHouseCheck:
    await require_clickhouse_allowed(settings, body)
    conn = service_path(settings, body)
    verdict = await run_in_threadpool(
        ui_support.check_clickhouse, service, conn, settings.probe_timeout_s
    )
    return ClickHouseCheck(**verdict.__dict__)


@router.post(
    "/upload/check",
    summary="an uploaded document checked as create would, and its topics on their brokers",
    openapi_extra=DOCUMENT_BODY_OPENAPI,
)
async def upload_check(
    document: DocumentBody, service: ServiceDep, settings: SettingsDep
) -> UploadCheck:
    policy = settings.document_policy()
    _, pipeline = await run_in_threadpool(judged, document, policy)
    for src in pipeline.inputs:
        servers = getattr(src, "bootstrap_servers", None)
        if servers:
            await require_kafka_allowed(settings, servers, src.security)
    missing, problems, notes = await run_in_threadpool(
        ui_support.missing_topics, pipeline, settings.probe_timeout_s
    )
    taken = pipeline.name in {r.id for r in service.list()}
    if taken:
        problems.insert(0, f"a pipeline named {pipeline.name} exists already")
    return UploadCheck(
        name=pipeline.name,
        summary=summary(pipeline),
        name_taken=taken,
        missing_topics=missing,
        problems=problems,
        notes=notes,
    )


@router.post(
    "/table-plan",
    summary="the table a document writes into and the CREATE TABLE it runs",
    openapi_extra=DOCUMENT_BODY_OPENAPI,
)
def table_plan(document: DocumentBody, settings: SettingsDep) -> TablePlan:
    _, pipeline = judged(document, settings.document_policy())
    return TablePlan(
        table=pipeline.sink.table,
        create_table=pipeline.sink.create_table,
        sql=ui_support.create_table_statement(pipeline),
    )


def _point(p: Point) -> SeriesPoint:
    return SeriesPoint(
        at=datetime.fromtimestamp(p.t, timezone.utc),
        read=p.read,
        written=p.written,
        duplicates=p.duplicates,
        dlq=p.dlq,
        filtered=p.filtered,
        lag=p.lag,
        written_per_s=p.written_per_s,
        read_per_s=p.read_per_s,
    )


@router.get("/series/{pipeline_id}", summary="a pipeline's figures over time, oldest first")
def series(
    pipeline_id: Annotated[str, Path(description="the pipeline's id")],
    request: Request,
    service: ServiceDep,
    minutes: Annotated[int, Query(ge=1, le=24 * 60)] = 60,
    points: Annotated[int, Query(ge=2, le=2000)] = 360,
) -> Series:
    service.get(pipeline_id)  # 404 for no such pipeline
    history = history_of(request)
    since = datetime.now(timezone.utc).timestamp() - minutes * 60
    found = history.points(pipeline_id, since=since, limit=points)
    interval = request.app.state.history_interval_s
    return Series(id=pipeline_id, interval_s=interval, points=[_point(p) for p in found])


@router.get("/rates", summary="every pipeline's latest rows written per second")
def rates(request: Request, service: ServiceDep) -> list[Rate]:
    history = history_of(request)
    out = []
    for record in service.list():
        p = history.latest(record.id)
        out.append(
            Rate(
                id=record.id,
                written_per_s=p.written_per_s if p else None,
                at=datetime.fromtimestamp(p.t, timezone.utc) if p else None,
            )
        )
    return out
