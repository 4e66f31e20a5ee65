"""How a pipeline run by the service keeps going: its retries of transient faults, and how
long a stop may take. docs/operations.md ("States and retries") tells the whole story."""

from __future__ import annotations

from datetime import timedelta

from pydantic import Field, model_validator

from streamsift.config.base import ConfigModel, Duration


class Retry(ConfigModel):
    """Retries of transient faults (a broker or ClickHouse that does not answer, a worker
    process that died): the query starts again from its checkpoint after a back-off that
    doubles from `first_backoff` up to `max_backoff`. `max_attempts` counts consecutive
    failures (a committed micro-batch starts the count again); None: the server's setting
    (`streamsift serve --retry-attempts`, by default keep retrying). An error of unknown kind
    is retried `unexplained_attempts` times at most."""

    max_attempts: int | None = Field(default=None, ge=0)
    first_backoff: Duration = timedelta(seconds=1)
    max_backoff: Duration = timedelta(seconds=60)
    unexplained_attempts: int = Field(default=3, ge=0)

    @model_validator(mode="after")
    def _check(self) -> Retry:
        if self.first_backoff <= timedelta(0):
            raise ValueError("first_backoff: must be greater than zero")
        if self.max_backoff < self.first_backoff:
            raise ValueError("max_backoff: must be at least first_backoff")
        return self

    def backoff(self, attempt: int) -> timedelta:
        """The wait before try `attempt` (1 for the first retry): doubling, capped."""
        doubled = self.first_backoff * (2 ** min(max(attempt - 1, 0), 30))
        return min(doubled, self.max_backoff)


# How long a stop waits for the micro-batch in flight before ending the run anyway.
DEFAULT_STOP_TIMEOUT = timedelta(seconds=30)
