"""The alerts route's body: a pipeline's alert episodes (service/alerts/episodes.py), read
by attribute from the service's episodes."""

from __future__ import annotations

from datetime import datetime

from pydantic import Field

from streamsift.wire.base import Answer


class AlertEpisodeModel(Answer):
    """One stay of an alert condition: the alert when it began, the resolution when it
    ended (`resolved_at` null while it holds)."""

    id: int
    pipeline_id: str
    condition: str = Field(description="failed, retrying, lag or dlq_growth")
    since: datetime = Field(description="when the condition began to hold")
    opened_at: datetime = Field(description="when the server saw it and alerted")
    figure: str | None = Field(default=None, description="e.g. 'lag 12,345 > 10,000'")
    reason: str | None = Field(default=None, description="the pipeline's error then")
    resolved_at: datetime | None = None
    resolved_figure: str | None = None
