"""What an alert or a resolution says: one `Notice`, as a line of text (Slack, the e-mail's
subject), a few lines (the e-mail's body) and a JSON body (webhooks)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone

from streamsift.config.durations import format_duration
from streamsift.service.alerts.episodes import Episode

TITLES = {
    "failed": "failed",
    "retrying": "retrying too long",
    "lag": "lagging",
    "dlq_growth": "dead letters growing",
}


@dataclass(frozen=True)
class Notice:
    """An alert (`resolved` False: the episode began) or its resolution."""

    episode: Episode
    resolved: bool
    state: str | None = None  # the pipeline's state when it was sent

    @property
    def event(self) -> str:
        return "resolved" if self.resolved else "alert"

    @property
    def lasted(self) -> timedelta | None:
        ep = self.episode
        return ep.resolved_at - ep.since if ep.resolved_at is not None else None

    def line(self) -> str:
        """One line: what, which pipeline, since when, the figure (and how long it lasted)."""
        ep = self.episode
        what = TITLES.get(ep.condition, ep.condition)
        since = _when(ep.since)
        if self.resolved:
            lasted = self.lasted or timedelta(0)
            now = f"; now {ep.resolved_figure}" if ep.resolved_figure else ""
            return (
                f"RESOLVED: streamsift pipeline {ep.pipeline_id}: no longer {what} "
                f"(since {since}, lasted {_span(lasted)}){now}"
            )
        figure = f": {ep.figure}" if ep.figure else ""
        return f"ALERT: streamsift pipeline {ep.pipeline_id} {what} since {since}{figure}"

    def text(self) -> str:
        """The line, then the reason (the pipeline's error) on a line of its own."""
        ep = self.episode
        lines = [self.line()]
        if ep.reason:
            lines.append(f"reason: {ep.reason}")
        if self.state:
            lines.append(f"state: {self.state}")
        return "\n".join(lines)

    def body(self) -> bytes:
        """The webhook's JSON body (UTF-8)."""
        ep = self.episode
        lasted = self.lasted
        doc = {
            "event": self.event,
            "pipeline": ep.pipeline_id,
            "condition": ep.condition,
            "episode": ep.id,
            "since": ep.since.isoformat(),
            "figure": ep.figure,
            "reason": ep.reason,
            "state": self.state,
            "resolved_at": ep.resolved_at.isoformat() if ep.resolved_at else None,
            "resolved_figure": ep.resolved_figure,
            "duration_seconds": round(lasted.total_seconds(), 3) if lasted else None,
            "text": self.text(),
        }
        return json.dumps(doc, separators=(",", ":"), sort_keys=True).encode()

    @property
    def key(self) -> str:
        """The same for every try of this notice: receivers may drop repeats by it."""
        return f"{self.episode.id}-{self.event}"


def _when(at: datetime) -> str:
    return at.astimezone(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC")


def _span(value: timedelta) -> str:
    return format_duration(timedelta(seconds=int(value.total_seconds())))
