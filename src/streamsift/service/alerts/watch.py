"""`AlertWatch`: every few seconds, judge every pipeline's alert conditions and tell.

One round (`check`): for each pipeline, its rules (the server's `--alerts` merged with its
document's `alerts:`, config/alerts.py), its status and history from the `PipelineService`,
the findings (rules.py), then for each condition: holds and no open episode -> open one
(episodes.py) and queue the alert; does not hold and one is open -> resolve it and queue the
resolution; cannot tell -> nothing. Sending is queued (delivery.py): a round never waits for
a channel. An open episode of a deleted pipeline is resolved, told to the server's channels.
A failing round is logged and the next one runs.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.alerts import Alerts, merged
from streamsift.errors import StreamsiftError
from streamsift.service.alerts.channels import Sender, sender_for
from streamsift.service.alerts.delivery import Delivery
from streamsift.service.alerts.episodes import Episode, Episodes
from streamsift.service.alerts.notices import Notice
from streamsift.service.alerts.rules import FAILED, RETRYING, Judge, Observation, entered_at
from streamsift.service.core import PipelineService

log = logging.getLogger("streamsift.service.alerts")
INTERVAL_S = 5.0


def _now() -> datetime:
    return datetime.now(timezone.utc)


class AlertWatch:
    """Watches the pipelines of `service` for the alert conditions (see the module)."""

    def __init__(
        self,
        service: PipelineService,
        server_rules: Alerts | None = None,
        interval_s: float = INTERVAL_S,
        delivery: Delivery | None = None,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self.service = service
        self.server_rules = server_rules
        self.interval_s = interval_s
        self.delivery = delivery or Delivery()
        self.clock = clock
        self.episodes = Episodes(service.data_dir)
        self.judge = Judge()
        self._documents: dict[str, tuple[int, Alerts | None]] = {}
        self._senders: dict[Any, Sender] = {}
        self._halt = threading.Event()
        self._thread: threading.Thread | None = None

    # ------------------------------------------------------------------ thread

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="alert-watch", daemon=True)
        self._thread.start()

    def close(self) -> None:
        """Stop the rounds, give queued notices a moment to go out, close the table."""
        self._halt.set()
        if self._thread is not None:
            self._thread.join(30)
        self.delivery.close()
        self.episodes.close()

    def _run(self) -> None:
        while not self._halt.is_set():
            try:
                self.check()
            except Exception:  # noqa: BLE001 - the service closing, a bug: the next round
                log.exception("alerts: a round of checks failed")
            if self._halt.wait(self.interval_s):
                return

    # ------------------------------------------------------------------ a round

    def check(self) -> list[Notice]:
        """One round over every pipeline; returns the notices it queued."""
        records = self.service.list()
        open_episodes = self.episodes.open_episodes()
        told: list[Notice] = []
        for record in records:
            if self._halt.is_set():
                break
            rules = merged(self.server_rules, self._document_rules(record.id, record.version))
            has_open = any(pid == record.id for pid, _ in open_episodes)
            if not rules.rules_on and not has_open:
                continue
            try:
                told += self._check_pipeline(record.id, rules, open_episodes)
            except StreamsiftError as exc:  # deleted meanwhile
                log.debug("alerts: pipeline %s not checked: %s", record.id, exc)
        known = {record.id for record in records}
        for (pipeline_id, _), episode in open_episodes.items():
            if pipeline_id not in known:
                told += self._end(episode, "the pipeline was deleted", None, self.server_rules)
                self.judge.forget(pipeline_id)
                self._documents.pop(pipeline_id, None)
        return told

    def _check_pipeline(
        self, pipeline_id: str, rules: Alerts, open_episodes: dict[tuple[str, str], Episode]
    ) -> list[Notice]:
        status = self.service.status(pipeline_id)
        state = str(status.state)
        since = None
        if state in (FAILED, RETRYING):
            since = entered_at(self.service.history(pipeline_id), state)
        now = self.clock()
        obs = Observation(
            pipeline_id=pipeline_id,
            at=now,
            state=state,
            state_since=since,
            error=status.error,
            lag=status.lag,
            dlq=status.dlq,
        )
        told: list[Notice] = []
        for finding in self.judge.findings(rules, obs):
            episode = open_episodes.get((pipeline_id, finding.condition))
            if finding.active is True and episode is None:
                begun = self.episodes.begin(
                    pipeline_id,
                    finding.condition,
                    finding.since or now,
                    now,
                    finding.figure,
                    finding.reason,
                )
                if begun is not None:
                    told.append(self._tell(Notice(begun, resolved=False, state=state), rules))
            elif finding.active is False and episode is not None:
                told += self._end(episode, finding.figure, state, rules)
        return told

    def _end(
        self, episode: Episode, figure: str | None, state: str | None, rules: Alerts | None
    ) -> list[Notice]:
        ended = self.episodes.end(episode.id, self.clock(), figure)
        if ended is None:
            return []
        return [self._tell(Notice(ended, resolved=True, state=state), rules)]

    def _tell(self, notice: Notice, rules: Alerts | None) -> Notice:
        log.warning("alerts: %s", notice.line())
        for channel in rules.channels if rules is not None else ():
            key = (type(channel).__name__, hash(channel))
            sender = self._senders.get(key)
            if sender is None:
                sender = self._senders[key] = sender_for(channel)
            self.delivery.submit(key, sender, notice)
        return notice

    def _document_rules(self, pipeline_id: str, version: int) -> Alerts | None:
        """The `alerts:` of the pipeline's current document, secrets in clear (cached per
        version); None when it has none or cannot be read (logged once)."""
        cached = self._documents.get(pipeline_id)
        if cached is not None and cached[0] == version:
            return cached[1]
        rules: Alerts | None = None
        try:
            doc = self.service.document(pipeline_id, reveal_secrets=True)
            rules = parse_pipeline(doc).alerts
        except (ConfigError, StreamsiftError) as exc:
            log.warning(
                "alerts: pipeline %s: its document's alerts are not used: %s", pipeline_id, exc
            )
        if rules is not None:
            rules = self._allowed(pipeline_id, rules)
        self._documents[pipeline_id] = (version, rules)
        return rules

    def _allowed(self, pipeline_id: str, rules: Alerts) -> Alerts:
        """`rules` without the channels the server's policy refuses now (a document stored
        before the server's `--allow-connect` list changed): checked again per version."""
        policy = self.service.policy

        def allowed(**one: Any) -> bool:
            problems = list(policy.alert_problems(Alerts.model_construct(**one), "alerts"))
            for problem in problems:
                log.warning("alerts: pipeline %s: channel not used: %s", pipeline_id, problem)
            return not problems

        return rules.model_copy(
            update={
                "webhooks": tuple(w for w in rules.webhooks if allowed(webhooks=(w,))),
                "slack": tuple(c for c in rules.slack if allowed(slack=(c,))),
                "email": tuple(e for e in rules.email if allowed(email=(e,))),
            }
        )
