"""The `filtered` figure counts each record the filter dropped once, over a pipeline's life.

A dedup pipeline with a filter reads messages of which some are re-sends (dropped by dedup),
some fail the filter (dropped, counted as filtered) and some make the filter NULL (dead
letters, not filtered). Its figures are checked per run (the CLI's stats) and over its life
(the ledger's totals, which the service's status and /metrics show), after a run caught up, a
live run stopped by a stop request, and a resume; then in the service, in its pipeline host
with driver inserts and in a process of its own with executor inserts, across a stop and
resume.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from streamsift.config import parse_pipeline
from streamsift.config.models import Pipeline
from streamsift.embedded.broker import Broker
from streamsift.engine import runner as runner_module
from streamsift.engine.progress_feed import ProgressFeed
from streamsift.engine.runner import PipelineRunner, RunResult
from streamsift.service.core import PipelineService
from streamsift.service.lifecycle import State
from streamsift.service.metrics import PipelineReport, ServiceCollector, pipeline_families
from support.clickhouse import count
from support.pipeline_docs import fields, mapping, pipeline_doc
from support.service_pipeline import START_TIMEOUT_S, running_service
from support.waiting import wait_for

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


def filtered_metrics(metrics: Any) -> dict[str, float]:
    """`streamsift_rows_filtered_total` by pipeline, from /metrics' families."""
    (family,) = [f for f in metrics if f.name.endswith("rows_filtered")]
    return {s.labels["pipeline"]: s.value for s in family.samples if s.name.endswith("_total")}


def filtered_metric(runner: PipelineRunner) -> float:
    """`streamsift_rows_filtered_total` as /metrics shows it from the run's report (the shape
    of a service worker's status.json)."""
    report = PipelineReport(runner.pipeline.name, "running", runner.report())
    return filtered_metrics(pipeline_families([report]))[runner.pipeline.name]


def filter_doc(
    topic: str, bootstrap_servers: str, clickhouse: dict[str, Any], **more: Any
) -> dict[str, Any]:
    """The dedup pipeline with a filter, from `topic` into the table of that name."""
    return pipeline_doc(
        topic=topic,
        fields=fields(("id", "string"), ("n", "int"), ("ts", "timestamp")),
        event_time="ts",
        dedup={"key": "id", "time_window": "1h"},
        filter=FILTER,
        bootstrap_servers=bootstrap_servers,
        clickhouse=clickhouse,
        sink={"create_table": True, "order_by": ["id"]},
        mapping=mapping(("id", "id", "String"), ("n", "n", "Int64")),
        **more,
    )


def local_pipeline(broker: Broker, chdb_path: Path, tmp_path: Path, topic: str) -> Pipeline:
    """`filter_doc` for `streamsift run`: a new topic of 2 partitions into the embedded
    ClickHouse, several micro-batches per run."""
    broker.create_topic(topic, 2)
    return parse_pipeline(
        filter_doc(
            topic,
            broker.bootstrap_servers,
            {"path": str(chdb_path)},
            checkpoint_dir=tmp_path / "ck",
            runtime={"max_rows_per_batch": 90},
        )
    )


def test_filtered_counts_each_dropped_record_once_over_runs_stop_and_resume(
    broker, chdb_path, tmp_path, unique_name, produce_messages
):
    pipeline = local_pipeline(broker, chdb_path, tmp_path, unique_name)
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
    dropped = totals["duplicates"] + totals["filtered"]
    assert totals["read"] == totals["written"] + totals["dlq"] + dropped


def test_a_run_whose_end_the_listener_bus_is_late_to_tell_counts_its_batches_once(
    broker, chdb_path, tmp_path, unique_name, produce_messages, monkeypatch
):
    """When the bus has not told a run's end in time (a loaded host), the run reads the
    query's recent reports itself, which restate the batches it already counted."""
    monkeypatch.setattr(ProgressFeed, "ended", lambda self, run_id: None)  # the bus is late
    monkeypatch.setattr(runner_module, "ACTIVE_CHECK_S", 1.0)  # the run sees its query end
    monkeypatch.setattr(runner_module, "PROGRESS_DRAIN_S", 1.0)
    pipeline = local_pipeline(broker, chdb_path, tmp_path, unique_name)
    first, second = part(0, 150), part(150, 120)
    produce_messages(unique_name, first.messages)
    runner = PipelineRunner(pipeline, base_dir=tmp_path)
    result = runner.run(until_caught_up=True)
    assert figures(result.stats) == expected(first)
    assert figures(runner.report()["totals"]) == expected(first)

    produce_messages(unique_name, second.messages)
    runner = PipelineRunner(pipeline, base_dir=tmp_path)
    result = runner.run(until_caught_up=True)
    assert figures(result.stats) == expected(second)
    assert figures(runner.report()["totals"]) == expected(first, second)
    assert filtered_metric(runner) == first.filtered + second.filtered


def test_the_service_counts_filtered_once_in_its_host_and_in_a_process_of_its_own(
    broker, clickhouse, tmp_path, produce_messages
):
    """Two pipelines: in the pipeline host into the embedded ClickHouse (driver inserts), in
    a worker process into a server (executor inserts); status and /metrics after a stop and
    a resume."""
    data_dir = tmp_path / "data"
    chdb = data_dir / "clickhouse"
    docs = {
        "filtered-host": filter_doc("filtered_host", broker.bootstrap_servers, {"path": str(chdb)}),
        "filtered-process": filter_doc(
            "filtered_process",
            broker.bootstrap_servers,
            {"host": "127.0.0.1", "port": clickhouse},
            runtime={"isolation": "process"},
        ),
    }
    first, second = part(0, 150), part(150, 120)
    with running_service(data_dir) as service:
        for doc in docs.values():
            broker.create_topic(doc["source"]["topic"], 2)
            produce_messages(doc["source"]["topic"], first.messages)
            service.create(doc)
        for name in docs:
            counted(service, name, expected(first))
        for name in docs:
            service.stop(name)
        for name in docs:
            wait_for(lambda n=name: service.get(n).state is State.STOPPED, START_TIMEOUT_S)
            assert figures(vars(service.status(name))) == expected(first)
            produce_messages(docs[name]["source"]["topic"], second.messages)
            service.resume(name)
        for name in docs:
            counted(service, name, expected(first, second))
        metrics = filtered_metrics(ServiceCollector(service).collect())
        assert metrics == dict.fromkeys(docs, first.filtered + second.filtered)
        host, port = service.endpoints.address(chdb)
        assert count(port, "filtered_host", host=host) == first.written + second.written
    assert count(clickhouse, "filtered_process") == first.written + second.written


def counted(service: PipelineService, name: str, want: dict[str, int]) -> None:
    """Wait until the pipeline's status counts all of `want`'s reads, then check each figure
    (once Spark has reported the last batch: till then its filtered rows are not known)."""
    wait_for(
        lambda: (
            service.get(name).state is State.RUNNING and service.status(name).read >= want["read"]
        ),
        START_TIMEOUT_S,
        what=f"{name} to read {want['read']}",
    )
    wait_for(lambda: figures(vars(service.status(name))) == want, 30, what=f"{name}: {want}")
    time.sleep(3)  # a figure counted twice would show by now
    assert figures(vars(service.status(name))) == want, name
