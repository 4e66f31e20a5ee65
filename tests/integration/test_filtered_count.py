"""The `filtered` figure counts each record the filter dropped once, over a pipeline's life.

A dedup pipeline with a filter reads messages of which some are re-sends (dropped by dedup),
some fail the filter (dropped, counted as filtered) and some make the filter NULL (dead
letters, not filtered). Its figures are checked per run (the CLI's stats) and over its life
(the ledger's totals, which the service's status and /metrics show), after a run caught up, a
live run stopped by a stop request, and a resume.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.runner import PipelineRunner, RunResult
from streamsift.service.metrics import PipelineReport, pipeline_families
from support.pipeline_docs import fields, mapping, pipeline_doc

pytestmark = pytest.mark.integration

FILTER = "n % 3 != 0"  # n NULL: the filter is NULL, a dead letter
WAIT_S = 240.0


@dataclass
class Part:
    """Messages produced at once, and what each figure must count of them."""

    messages: list[tuple[bytes, bytes]]
    written: int
    duplicates: int
    filtered: int
    dlq: int

    @property
    def read(self) -> int:
        return len(self.messages)


def part(first: int, count: int) -> Part:
    """Ids `first`..`first+count-1`; every 10th re-sent (a duplicate); every 25th without n."""
    messages, written, filtered, dlq = [], 0, 0, 0
    for i in range(first, first + count):
        doc: dict[str, Any] = {"id": f"e{i}", "n": i, "ts": "2026-11-28T12:00:00Z"}
        if i % 25 == 0:
            doc["n"] = None
            dlq += 1
        elif i % 3 == 0:
            filtered += 1
        else:
            written += 1
        messages.append((doc["id"].encode(), json.dumps(doc).encode()))
    resent = messages[::10]
    return Part(messages + resent, written, len(resent), filtered, dlq)


def figures(stats: dict[str, Any]) -> dict[str, int]:
    return {k: stats[k] for k in ("read", "written", "duplicates", "filtered", "dlq")}


def expected(*parts: Part) -> dict[str, int]:
    return {
        k: sum(getattr(p, k) for p in parts)
        for k in ("read", "written", "duplicates", "filtered", "dlq")
    }


def filtered_metric(runner: PipelineRunner) -> float:
    """`streamsift_rows_filtered_total` as /metrics shows it from the run's report (the shape
    of a service worker's status.json)."""
    report = PipelineReport(runner.pipeline.name, "running", runner.report())
    (family,) = [f for f in pipeline_families([report]) if f.name.endswith("rows_filtered")]
    (sample,) = [s for s in family.samples if s.name.endswith("_total")]
    return sample.value


def test_filtered_counts_each_dropped_record_once_over_runs_stop_and_resume(
    broker, chdb_path, tmp_path, unique_name, produce_messages
):
    broker.create_topic(unique_name, 2)
    pipeline = parse_pipeline(
        pipeline_doc(
            topic=unique_name,
            fields=fields(("id", "string"), ("n", "int"), ("ts", "timestamp")),
            event_time="ts",
            dedup={"key": "id", "time_window": "1h"},
            filter=FILTER,
            bootstrap_servers=broker.bootstrap_servers,
            clickhouse={"path": str(chdb_path)},
            sink={"create_table": True, "order_by": ["id"]},
            mapping=mapping(("id", "id", "String"), ("n", "n", "Int64")),
            checkpoint_dir=tmp_path / "ck",
            runtime={"max_rows_per_batch": 90},  # several micro-batches per run
        )
    )
    first, second, third = part(0, 150), part(150, 120), part(270, 90)
    assert all(p.filtered and p.duplicates and p.dlq for p in (first, second, third))

    # a run that catches up and ends
    produce_messages(unique_name, first.messages)
    runner = PipelineRunner(pipeline, base_dir=tmp_path)
    result = runner.run(until_caught_up=True)
    assert figures(result.stats) == expected(first)
    assert result.stats["batches"] >= 2
    assert figures(runner.report()["totals"]) == expected(first)
    assert filtered_metric(runner) == first.filtered

    # a live run (idle reports between batches), ended by a stop request
    runner = PipelineRunner(pipeline, base_dir=tmp_path)
    outcome: dict[str, RunResult] = {}
    thread = threading.Thread(target=lambda: outcome.update(r=runner.run()), daemon=True)
    thread.start()
    try:
        produce_messages(unique_name, second.messages)
        deadline = time.monotonic() + WAIT_S
        while runner.stats.read < second.read and time.monotonic() < deadline:
            time.sleep(0.5)
        time.sleep(3)  # idle progress reports after the last batch
    finally:
        runner.stop()
        thread.join(WAIT_S)
    assert not thread.is_alive()
    assert figures(outcome["r"].stats) == expected(second)
    assert figures(runner.report()["totals"]) == expected(first, second)
    assert filtered_metric(runner) == first.filtered + second.filtered

    # a resume: the figures of this run, and of the pipeline's life
    produce_messages(unique_name, third.messages)
    runner = PipelineRunner(pipeline, base_dir=tmp_path)
    result = runner.run(until_caught_up=True)
    assert figures(result.stats) == expected(third)
    totals = runner.report()["totals"]
    assert figures(totals) == expected(first, second, third)
    assert filtered_metric(runner) == first.filtered + second.filtered + third.filtered

    # the table and the DLQ table hold what the figures say
    (written,) = runner.writer.query_rows(f"SELECT count() FROM {unique_name}")[0]
    (dlq,) = runner.writer.query_rows(f"SELECT count() FROM {pipeline.dlq_table}")[0]
    assert (written, dlq) == (totals["written"], totals["dlq"])
    assert totals["read"] == totals["written"] + totals["dlq"] + totals["duplicates"] + (
        totals["filtered"]
    )
