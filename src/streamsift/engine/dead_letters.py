"""A pipeline's dead letters, for every face: counts, listing, consuming, purging, replaying.

The CLI's `streamsift dlq` and the API's DLQ routes both go through `open_dead_letters`, which
opens the DLQ table with the sink's connection and turns what can go wrong into errors of the
one hierarchy, each with a hint.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

from streamsift.config.models import Pipeline
from streamsift.engine.errors import DlqNotFound, EmbeddedClickHouseBusy
from streamsift.errors import ConfigurationError
from streamsift.sinks.errors import SinkError, SinkTransientError

__all__ = ["ClassCount", "DeadLetter", "DeadLetters", "DlqTotals", "open_dead_letters"]

if TYPE_CHECKING:  # the ClickHouse client and pyarrow load only when dead letters are used
    from streamsift.engine.replay import ReplayReport
    from streamsift.sinks.dlq_queries import ClassCount, DeadLetter, DlqQueries

# A face waits this long for ClickHouse before it says it does not answer.
DLQ_RETRY_MAX_S = 5.0
DLQ_GIVE_UP_AFTER_S = 20.0


@dataclass(frozen=True)
class DlqTotals:
    pending: int
    consumed: int
    replayed: int
    replaying: int

    @property
    def total(self) -> int:
        return self.pending + self.consumed + self.replayed + self.replaying


@dataclass
class DeadLetters:
    """The dead letters of one pipeline, in its DLQ table."""

    pipeline: Pipeline
    queries: DlqQueries

    @property
    def table(self) -> str:
        return self.queries.table

    def where(self) -> str:
        return self.queries.where()

    def stats(self) -> tuple[list[ClassCount], DlqTotals]:
        counts = self.queries.stats()
        totals = DlqTotals(
            *(sum(getattr(c, k) for c in counts) for k in DlqTotals.__dataclass_fields__)
        )
        return counts, totals

    def pending(self, limit: int, offset: int = 0) -> list[DeadLetter]:
        """Up to `limit` pending dead letters, oldest position first, the first `offset`
        skipped: a page of the listing (stable while no new ones arrive before it)."""
        return self.queries.pending(limit, skip=offset)

    def pending_count(self) -> int:
        return self.queries.pending_count()

    def count(self) -> int:
        return self.queries.count()

    def consume(
        self, limit: int, hand_over: Callable[[list[DeadLetter]], None]
    ) -> list[DeadLetter]:
        """Hand the oldest pending ones over, then mark them handled.

        Handed over before marked: a failure in between leaves them pending, never lost.
        """
        letters = self.queries.pending(limit)
        if letters:
            hand_over(letters)
            self.queries.mark_consumed(letters)
        return letters

    def purge(self) -> int:
        return self.queries.purge()

    def replay(
        self, limit: int | None = None, dry_run: bool = False, chunk_size: int | None = None
    ) -> ReplayReport:
        """Re-process pending dead letters with the pipeline's current schema and mapping."""
        from streamsift.engine.replay import Replayer

        return Replayer(self.pipeline, self.queries.writer, chunk_size=chunk_size).run(
            limit=limit, dry_run=dry_run
        )


@contextlib.contextmanager
def open_dead_letters(pipeline: Pipeline) -> Iterator[DeadLetters]:
    """Open the pipeline's DLQ table; errors come out as ones of the hierarchy, with hints."""
    from streamsift.sinks.clickhouse import ClickHouseWriter
    from streamsift.sinks.dlq_queries import DlqMissing, DlqQueries
    from streamsift.sinks.retry import RetryPolicy

    conn = pipeline.sink.clickhouse
    retry = RetryPolicy(max_s=DLQ_RETRY_MAX_S, give_up_after_s=DLQ_GIVE_UP_AFTER_S)
    queries = DlqQueries(ClickHouseWriter(conn, retry=retry), pipeline.dlq_table)
    try:
        queries.open()
        yield DeadLetters(pipeline, queries)
    except DlqMissing as exc:
        raise DlqNotFound(
            f"{exc}: the pipeline has not written dead letters there yet",
            "run the pipeline first, or check dlq.table",
        ) from None
    except SinkTransientError as exc:
        raise SinkTransientError(str(exc), "is ClickHouse up? check sink.clickhouse") from None
    except SinkError as exc:
        if conn.embedded and "Unable to open the chdb engine" in str(exc):
            raise EmbeddedClickHouseBusy(
                f"cannot open the embedded ClickHouse at {conn.path}: another process "
                "(a running `streamsift run`?) has it open",
                "chdb allows one process per data directory: stop the pipeline first, "
                "or use a ClickHouse server",
            ) from None
        if not isinstance(exc, ConfigurationError):
            exc.hint = "nothing was changed by the failed statement; fix and re-run"
        raise
