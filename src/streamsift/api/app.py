"""`create_app(settings, service=None)`: the FastAPI app of `streamsift serve`.

The lifespan owns the pipeline service: it starts it before the server answers `/readyz`
with 200 and closes it when the server stops (running pipelines keep running, for the next
server to adopt). Every route but the health checks sits behind the token when one is set.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from fastapi import Depends, FastAPI
from starlette.concurrency import run_in_threadpool

from streamsift import __version__
from streamsift.api.deps import require_token
from streamsift.api.errors import install_error_handlers
from streamsift.api.middleware import BodySizeLimit, CatchUnexpected
from streamsift.api.models import ErrorBody
from streamsift.api.routers import connections, docs, expressions, health, schemas, validation
from streamsift.api.settings import ServiceSettings

# Every route may answer these, in the one error shape (api/errors.py).
ERROR_RESPONSES: dict[int | str, dict[str, Any]] = {
    status: {"model": ErrorBody, "description": description}
    for status, description in (
        (400, "the request cannot be read"),
        (401, "the token is missing or wrong"),
        (404, "not found"),
        (413, "the body is larger than the limit"),
        (415, "unsupported content type"),
        (422, "the request or document has problems (details.problems)"),
        (500, "an unexpected error (logged)"),
        (502, "something downstream refused"),
        (503, "something outside did not answer, or the server is not ready"),
    )
}


def create_app(settings: ServiceSettings | None = None, service: Any = None) -> FastAPI:
    """The app for `settings`; `service` is a ready-made PipelineService (tests), else the
    lifespan builds one on the data directory."""
    settings = settings or ServiceSettings()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        own = app.state.service is None
        # >>> SERVICE CORE: build the PipelineService here when it is merged, e.g.
        #     from streamsift.runtime.service import PipelineService
        #     app.state.service = PipelineService(settings.data_dir)
        #     await run_in_threadpool(app.state.service.start)
        # <<< (until then the helper routes work and the pipeline routes answer 503)
        app.state.ready = True
        try:
            yield
        finally:
            app.state.ready = False
            if own and app.state.service is not None:
                await run_in_threadpool(app.state.service.close)

    app = FastAPI(
        title="streamsift",
        version=__version__,
        description="Run and watch streaming pipelines from Kafka to ClickHouse.",
        lifespan=lifespan,
        openapi_url=None,  # served by routers/docs.py, behind the token
        docs_url=None,
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.service = service
    app.state.ready = False
    install_error_handlers(app)
    app.add_middleware(CatchUnexpected)
    app.add_middleware(BodySizeLimit, max_bytes=settings.max_body_bytes)

    app.include_router(health.router)
    # The token check only when there is a token: then the OpenAPI document declares the
    # bearer scheme exactly when the server asks for it.
    auth = [Depends(require_token)] if settings.token is not None else []
    app.include_router(docs.router, dependencies=auth)
    # validation first: its POST /api/v1/pipelines/validate must win over /{id} routes.
    for router in (validation, connections, schemas, expressions):
        app.include_router(router.router, dependencies=auth, responses=ERROR_RESPONSES)
    return app
