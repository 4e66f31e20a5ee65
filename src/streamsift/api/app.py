"""`create_app(settings, service=None)`: the FastAPI app of `streamsift serve`.

The lifespan owns the pipeline service: it builds and starts it on the data directory before
the server answers `/readyz` with 200, and closes it when the server stops without stopping
the pipelines (they keep running, for the next server on the data directory to adopt). Every
route but the health checks, the web UI's files and the API's description (/docs,
/openapi.json: they hold no data) sits behind the token when one is set; `HttpGuard`
(http_guard.py) refuses foreign Host names, cross-site changes and unreadable body types.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from starlette.concurrency import run_in_threadpool

from streamsift import __version__
from streamsift.api.deps import require_token
from streamsift.api.error_responses import install_error_handlers
from streamsift.api.http_guard import HttpGuard
from streamsift.api.middleware import BodySizeLimit, CatchUnexpected
from streamsift.api.routers import alerts as alerts_api
from streamsift.api.routers import (
    connections,
    dlq,
    docs,
    expressions,
    health,
    metrics,
    pipelines,
    schemas,
    ui,
    ui_support,
    validation,
)
from streamsift.api.routers import glassflow as glassflow_api
from streamsift.api.settings import ServiceSettings
from streamsift.service.alerts.watch import AlertWatch
from streamsift.service.core import PipelineService
from streamsift.service.history import KEEP_S, History, HistoryRecorder
from streamsift.service.otlp_receiver import OtlpReceiver
from streamsift.wire.error_body import ErrorBody

# Every route may answer these, in the one error shape (api/error_responses.py).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in (
        (400, "the request cannot be read"),
        (401, "the token is missing or wrong"),
        (403, "a cross-site request may not change anything"),
        (404, "not found"),
        (413, "the body is larger than the limit"),
        (415, "unsupported content type"),
        (422, "the request or document has problems (details.problems)"),
        (500, "an unexpected error (logged)"),
        (502, "something downstream refused"),
        (503, "something outside did not answer, or the server is not ready"),
    )
}


def _started_service(settings: ServiceSettings) -> PipelineService:
    service = PipelineService(
        settings.data_dir,
        otlp=_otlp_receiver(settings),
        policy=settings.document_policy(),
        retry_attempts=settings.retry_attempts,
        warm_host=settings.warm_host,
        isolation=settings.isolation,
    )
    service.start()
    return service


def _otlp_receiver(settings: ServiceSettings) -> OtlpReceiver | None:
    """The OTLP receiver on the settings' ports, started by the service with its first OTLP
    pipeline; None when both ports are off."""
    if settings.otlp_http_port is None and settings.otlp_grpc_port is None:
        return None
    return OtlpReceiver(
        host=settings.host,
        http_port=settings.otlp_http_port,
        grpc_port=settings.otlp_grpc_port,
        token=settings.token.get_secret_value() if settings.token else None,
    )


def create_app(
    settings: ServiceSettings | None = None, service: PipelineService | None = None
) -> FastAPI:
    """The app for `settings`; `service` is a ready-made PipelineService (tests), else the
    lifespan builds one on the data directory."""
    settings = settings or ServiceSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = app.state.service is None
        if own:
            # Starting adopts the workers a previous server left running and restarts the
            # pipelines that should run: blocking work, off the event loop.
            app.state.service = await run_in_threadpool(_started_service, settings)
        app.state.ready = True
        # The UI's charts: each pipeline's figures sampled on a thread (service/history.py).
        recorder = HistoryRecorder(app.state.service, app.state.history, interval)
        recorder.start()
        # Alerts: every pipeline's conditions judged on a thread (service/alerts/watch.py).
        alerts = AlertWatch(app.state.service, settings.alerts, settings.alerts_interval_s)
        alerts.start()
        app.state.alerts = alerts  # its episodes, for routers/alerts.py
        try:
            yield
        finally:
            app.state.alerts = None
            await run_in_threadpool(alerts.close)
            recorder.stop()
            app.state.ready = False
            if own:
                # Pipelines keep running: the next server on this data dir adopts them.
                await run_in_threadpool(app.state.service.close, stop_all=False)
                app.state.service = None

    app = FastAPI(
        title="streamsift",
        version=__version__,
        description="Run and watch streaming pipelines from Kafka to ClickHouse.",
        lifespan=lifespan,
        openapi_url=None,  # served by routers/docs.py
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.service = service
    app.state.alerts = None
    interval = settings.history_interval_s
    app.state.history = History(capacity=max(1, int(KEEP_S / interval)))
    app.state.history_interval_s = interval
    app.state.ready = False
    install_error_handlers(app)
    app.add_middleware(CatchUnexpected)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)
    # Outermost: a refused request is answered before anything reads it, and every answer
    # (a 413 or 500 too) carries the security headers.
    app.add_middleware(HttpGuard, bound_host=settings.host, allowed_hosts=settings.allowed_hosts)

    app.include_router(health.router)
    # The token check only when there is a token: then the OpenAPI document declares the
    # bearer scheme exactly when the server asks for it.
    auth = [Depends(require_token)] if settings.token is not None else []
    # The API's description and its Swagger UI without the token: they hold no data, and the
    # page asks for the token (Authorize) or takes the web UI's.
    app.include_router(docs.router)
    # validation first: its POST /api/v1/pipelines/validate must win over /{id} routes.
    for router in (
        validation,
        pipelines,
        dlq,
        connections,
        schemas,
        expressions,
        metrics,
        ui_support,
        alerts_api,
    ):
        app.include_router(router.router, dependencies=auth, responses=ERROR_RESPONSES)
    glassflow_api.include(app, auth, ERROR_RESPONSES)  # GlassFlow's API: /api/v1/pipeline...
    # The web UI's files (no token: they hold no data; the UI sends the token to the API).
    app.include_router(ui.router)
    return app
