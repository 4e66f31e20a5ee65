"""`GET /metrics`: Prometheus text of every pipeline of the server (service/metrics.py), behind
the token when the server has one (Prometheus sends it with `authorization: {credentials: T}`).
Metric names, types and labels: docs/operations.md ("Metrics")."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import Response

from streamsift.api.deps import ServiceDep
from streamsift.service.metrics import ServiceCollector, exposition, registry_of

router = APIRouter(tags=["metrics"])


@router.get(
    "/metrics",
    summary="Prometheus metrics of every pipeline",
    response_class=Response,
    responses={
        200: {
            "description": "Prometheus text exposition format (OpenMetrics when asked for)",
            "content": {"text/plain": {"schema": {"type": "string"}}},
        }
    },
)
def metrics(request: Request, service: ServiceDep) -> Response:
    # a registry per scrape: it only holds the collector, which reads the workers' reports
    registry = registry_of(ServiceCollector(service))
    body, content_type = exposition(registry, request.headers.get("accept"))
    return Response(content=body, media_type=content_type)
