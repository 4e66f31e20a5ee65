"""Whether each alert condition holds for a pipeline now: pure logic over what the service
reports (state, when it entered it, error, lag, dead letters), no I/O.

`Judge.findings` answers per condition True (holds), False (does not) or None (cannot tell
now: a pipeline starting, a lag not yet measured, DLQ samples that do not yet span the
window; an open episode then stays open, and none is opened). It keeps what it needs
between calls: when a lag first went above its bound, and the DLQ counts it sampled.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from streamsift.config.alerts import (
    CONDITIONS,
    Alerts,
    DlqGrowthRule,
    LagRule,
    RetryingRule,
)
from streamsift.config.durations import format_duration

FAILED = "Failed"
RETRYING = "Retrying"
RUNNING_STATES = ("Running", RETRYING)  # a lag is measured by a running query
STARTING_STATES = ("Created", "Resuming")
AT_REST_BY_REQUEST = ("Stopping", "Stopped", "Terminating")


@dataclass(frozen=True)
class Observation:
    """What the service says about one pipeline at `at`."""

    pipeline_id: str
    at: datetime
    state: str
    state_since: datetime | None  # when it entered `state` (the history)
    error: str | None = None
    lag: int | None = None
    dlq: int | None = None  # records written to the DLQ


@dataclass(frozen=True)
class Finding:
    """One condition's verdict: `active` True/False/None (cannot tell), since when it holds,
    the figure that decided (e.g. "lag 12,345 > 10,000") and the reason (the error)."""

    condition: str
    active: bool | None
    since: datetime | None = None
    figure: str | None = None
    reason: str | None = None


def entered_at(changes: Iterable[Any], state: str) -> datetime | None:
    """When the pipeline entered `state`: the first of the history's latest run of entries
    into it (Retrying -> Retrying, each attempt, is one stay). `changes`: oldest first, each
    with `at` and `to_state`."""
    since = None
    for change in reversed(list(changes)):
        if str(change.to_state) != state:
            break
        since = change.at
    return since


class Judge:
    """Judges the conditions of pipelines, one observation at a time (see the module)."""

    def __init__(self) -> None:
        self._lag_above_since: dict[str, datetime] = {}
        self._retrying_seen: dict[str, datetime] = {}  # when the history does not say
        self._dlq: dict[str, deque[tuple[datetime, int]]] = {}

    def findings(self, rules: Alerts, obs: Observation) -> list[Finding]:
        """A finding for every condition: those without a rule are False (an open episode
        of a rule since removed is resolved)."""
        found = []
        for condition in CONDITIONS:
            rule = rules.rule(condition)
            if rule is None:
                self._forget_condition(obs.pipeline_id, condition)
                found.append(Finding(condition, False, figure="no rule for it any more"))
            elif condition == "failed":
                found.append(self._failed(obs))
            elif condition == "retrying":
                found.append(self._retrying(rule, obs))
            elif condition == "lag":
                found.append(self._lag(rule, obs))
            else:
                found.append(self._dlq_growth(rule, obs))
        return found

    def forget(self, pipeline_id: str) -> None:
        """Drop what is kept about a pipeline (deleted)."""
        self._lag_above_since.pop(pipeline_id, None)
        self._retrying_seen.pop(pipeline_id, None)
        self._dlq.pop(pipeline_id, None)

    def _forget_condition(self, pipeline_id: str, condition: str) -> None:
        if condition == "lag":
            self._lag_above_since.pop(pipeline_id, None)
        elif condition == "dlq_growth":
            self._dlq.pop(pipeline_id, None)

    # ------------------------------------------------------------------ conditions

    @staticmethod
    def _failed(obs: Observation) -> Finding:
        if obs.state == FAILED:
            return Finding("failed", True, obs.state_since, "state Failed", obs.error)
        if obs.state in STARTING_STATES:  # resumed: Failed again, or running soon
            return Finding("failed", None)
        return Finding("failed", False, figure=f"state {obs.state}")

    def _retrying(self, rule: RetryingRule, obs: Observation) -> Finding:
        bound = format_duration(rule.longer_than)
        if obs.state != RETRYING:
            self._retrying_seen.pop(obs.pipeline_id, None)
            return Finding("retrying", False, figure=f"state {obs.state}")
        since = obs.state_since or self._retrying_seen.setdefault(obs.pipeline_id, obs.at)
        stay = obs.at - since
        figure = f"Retrying for {_span(stay)} (> {bound})"
        if stay > rule.longer_than or (rule.longer_than == timedelta(0)):
            return Finding("retrying", True, since, figure, obs.error)
        return Finding("retrying", False, figure=f"Retrying for {_span(stay)} (<= {bound})")

    def _lag(self, rule: LagRule, obs: Observation) -> Finding:
        assert rule.above is not None
        pid = obs.pipeline_id
        if obs.state in AT_REST_BY_REQUEST:
            self._lag_above_since.pop(pid, None)
            return Finding("lag", False, figure=f"state {obs.state}")
        if obs.state not in RUNNING_STATES or obs.lag is None:
            return Finding("lag", None)
        if obs.lag <= rule.above:
            self._lag_above_since.pop(pid, None)
            return Finding("lag", False, figure=f"lag {obs.lag:,} <= {rule.above:,}")
        since = self._lag_above_since.setdefault(pid, obs.at)
        figure = f"lag {obs.lag:,} > {rule.above:,}"
        if obs.at - since >= rule.longer_than:
            if rule.longer_than > timedelta(0):
                figure += f" for {_span(obs.at - since)}"
            return Finding("lag", True, since, figure, obs.error)
        return Finding("lag", None)  # above, not yet for long enough

    def _dlq_growth(self, rule: DlqGrowthRule, obs: Observation) -> Finding:
        if obs.dlq is None:
            return Finding("dlq_growth", None)
        samples = self._dlq.setdefault(obs.pipeline_id, deque())
        samples.append((obs.at, obs.dlq))
        start = obs.at - rule.within
        # keep one sample at or before the window's start: the baseline of the rise
        while len(samples) > 1 and samples[1][0] <= start:
            samples.popleft()
        rise = growth(samples)
        window = format_duration(rule.within)
        figure = f"DLQ +{rise:,} within {window} (bound {rule.by:,}); {obs.dlq:,} in all"
        if rise >= rule.by:
            since = _rise_reached(samples, rule.by) or obs.at
            return Finding("dlq_growth", True, since, figure, obs.error)
        if samples[0][0] <= start:
            return Finding("dlq_growth", False, figure=figure)
        return Finding("dlq_growth", None)  # the samples do not span the window yet


def growth(samples: Sequence[tuple[datetime, int]]) -> int:
    """How much the count rose over `samples` (oldest first). A count that falls (a run's
    counters starting again) starts a new baseline: a reset is never read as growth."""
    rise = 0
    for (_, before), (_, after) in zip(samples, list(samples)[1:], strict=False):
        rise += max(0, after - before)
    return rise


def _rise_reached(samples: Sequence[tuple[datetime, int]], by: int) -> datetime | None:
    """The time of the sample at which the rise over `samples` first reached `by`."""
    rise = 0
    items = list(samples)
    for (_, before), (at, after) in zip(items, items[1:], strict=False):
        rise += max(0, after - before)
        if rise >= by:
            return at
    return None


def _span(value: timedelta) -> str:
    """A stay for people: whole seconds (`12m5s`)."""
    return format_duration(timedelta(seconds=int(value.total_seconds())))
