"""A pipeline's alert episodes, newest first: what alerted, since when, and when it was
resolved (service/alerts/, docs/operations.md "Alerts")."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from streamsift.api.deps import ServiceDep
from streamsift.wire.alerts import AlertEpisodeModel

router = APIRouter(prefix="/api/v1/pipelines/{pipeline_id}/alerts", tags=["alerts"])

PipelineId = Annotated[str, Path(description="the pipeline's id: its document's name")]


@router.get("", summary="the pipeline's alert episodes, newest first")
def alert_episodes(
    pipeline_id: PipelineId,
    service: ServiceDep,
    request: Request,
    limit: Annotated[int, Query(ge=1, le=1000, description="at most this many")] = 100,
) -> list[AlertEpisodeModel]:
    service.get(pipeline_id)  # 404 for a pipeline that does not exist
    watch = request.app.state.alerts
    found = watch.episodes.of_pipeline(pipeline_id, limit) if watch is not None else []
    return [AlertEpisodeModel.model_validate(e) for e in found]
