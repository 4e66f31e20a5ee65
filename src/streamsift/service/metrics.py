"""Prometheus metrics of pipelines, for `GET /metrics` of the server and `run --metrics-port`.

Nothing here counts: the numbers are those the run itself keeps: the pipeline's counts over
its life (engine/ledger.py: rows read, written, filtered, dead letters, late, duplicates, kept
beside its checkpoint per micro-batch), and the run's own (engine/progress.RunStats: how long
batches and rows took, which ClickHouse actions it retried). A worker of
the service writes them into its status.json each second; `streamsift run` holds them in its
runner. A collector turns such a *report* into metric families at each scrape, so a scrape
costs reading one small file per pipeline and never touches Spark or ClickHouse.

The row counters count over the pipeline's life (`_created`: its first counted batch), so a
resume or restart does not reset them; the retry counters and histograms count from the
run's start, which Prometheus' rate() and increase() take as a counter reset.
Every name, type and label is listed in docs/operations.md ("Metrics").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from prometheus_client.core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.exposition import choose_encoder
from prometheus_client.registry import Collector, CollectorRegistry
from prometheus_client.utils import floatToGoString

from streamsift.engine.progress import BATCH_SECONDS, LATENCY_SECONDS, Buckets
from streamsift.service.lifecycle import State

if TYPE_CHECKING:
    from streamsift.engine.runner import PipelineRunner
    from streamsift.service.core import PipelineService

PREFIX = "streamsift_"


@dataclass(frozen=True)
class PipelineReport:
    """One pipeline as a scrape sees it: its name, lifecycle state and its run's report (the
    worker's status.json, or the same built from a runner; empty before its first run)."""

    pipeline: str
    state: str
    report: Mapping[str, Any]
    restarts: int = 0  # new worker processes the service started for it after one died


def pipeline_families(pipelines: Iterable[PipelineReport]) -> list[Metric]:
    """The metric families of these pipelines, each sample labelled by its pipeline."""
    p = ["pipeline"]
    read = CounterMetricFamily(
        PREFIX + "rows_read", "Kafka messages read (offsets consumed)", labels=p
    )
    written = CounterMetricFamily(
        PREFIX + "rows_written", "rows inserted into the ClickHouse table", labels=p
    )
    duplicates = CounterMetricFamily(
        PREFIX + "duplicates_dropped", "messages dropped as duplicates by dedup", labels=p
    )
    dlq = CounterMetricFamily(
        PREFIX + "dlq_records",
        "records written to the DLQ table, by stage and error class",
        labels=[*p, "stage", "error_class"],
    )
    late = CounterMetricFamily(
        PREFIX + "late_events",
        "late events: kept (older than the dedup window behind the newest event) or dropped "
        "(behind the join's watermark)",
        labels=[*p, "outcome"],
    )
    retries = CounterMetricFamily(
        PREFIX + "clickhouse_retries",
        "ClickHouse actions that failed transiently and were tried again, by operation",
        labels=[*p, "operation"],
    )
    filtered = CounterMetricFamily(
        PREFIX + "rows_filtered", "rows the pipeline's filter dropped", labels=p
    )
    pipeline_retries = CounterMetricFamily(
        PREFIX + "pipeline_retries",
        "transient faults retried: by the run restarting its query (query) or by the service "
        "starting a new worker after one died (worker)",
        labels=[*p, "level"],
    )
    retry_attempt = GaugeMetricFamily(
        PREFIX + "pipeline_retry_attempt",
        "the attempt of the retry under way (0 when the pipeline is not retrying)",
        labels=p,
    )
    lag = GaugeMetricFamily(
        PREFIX + "lag_messages",
        "messages in Kafka not yet read, per partition (at the last micro-batch)",
        labels=[*p, "topic", "partition"],
    )
    batch = HistogramMetricFamily(
        PREFIX + "micro_batch_duration_seconds", "duration of micro-batches", labels=p
    )
    latency = HistogramMetricFamily(
        PREFIX + "end_to_end_latency_seconds",
        "per row written: Kafka timestamp (produce time) to insert acknowledged by ClickHouse",
        labels=p,
    )
    last_batch = GaugeMetricFamily(
        PREFIX + "last_micro_batch_timestamp_seconds",
        "when the last micro-batch started (Unix time)",
        labels=p,
    )
    state_bytes = GaugeMetricFamily(
        PREFIX + "pipeline_state_bytes",
        "the size of the pipeline's state: its dedup RocksDB on disk (dedup_disk), Spark's "
        "state stores in memory (spark_memory)",
        labels=[*p, "kind"],
    )
    status = GaugeMetricFamily(
        PREFIX + "pipeline_status",
        "1 for the pipeline's current lifecycle state, 0 for the others",
        labels=[*p, "status"],
    )
    for item in pipelines:
        name = item.pipeline
        # counts over the pipeline's life when the run keeps them (engine/ledger.py), counted
        # from its first batch; else the run's own, from the run's start
        totals = item.report.get("totals")
        stats = totals or item.report.get("stats") or {}
        created = _epoch(totals.get("since") if totals else item.report.get("started_at"))
        for family, key in ((read, "read"), (written, "written"), (duplicates, "duplicates")):
            family.add_metric([name], _int(stats, key), created=created)
        for entry in stats.get("dlq_by_class") or []:
            dlq.add_metric(
                [name, entry["stage"], entry["error_class"]], entry["count"], created=created
            )
        filtered.add_metric([name], _int(stats, "filtered"), created=created)
        pipeline_retries.add_metric([name, "query"], _int(item.report, "retries_total"))
        pipeline_retries.add_metric([name, "worker"], item.restarts)
        retry = item.report.get("retry") if item.state == State.RETRYING.value else None
        retry_attempt.add_metric([name], int((retry or {}).get("attempt") or 0))
        late.add_metric([name, "kept"], _int(stats, "late"), created=created)
        late.add_metric([name, "dropped"], _int(stats, "late_dropped"), created=created)
        for operation, n in sorted((run_stats(item).get("retries") or {}).items()):
            retries.add_metric([name, operation], n, created=created)
        for key, n in sorted((item.report.get("lag_by_partition") or {}).items()):
            topic, _, partition = key.rpartition("/")
            lag.add_metric([name, topic, partition], n)
        run = run_stats(item)
        _add_histogram(batch, name, run.get("batch_seconds"), BATCH_SECONDS)
        _add_histogram(latency, name, run.get("latency_seconds"), LATENCY_SECONDS)
        if (at := _epoch(item.report.get("last_batch_at"))) is not None:
            last_batch.add_metric([name], at)
        size = item.report.get("state_size") or {}
        if size.get("dedup_disk_bytes") is not None:
            state_bytes.add_metric([name, "dedup_disk"], int(size["dedup_disk_bytes"]))
        if size:
            state_bytes.add_metric([name, "spark_memory"], _int(size, "spark_state_memory_bytes"))
        for state in State:
            status.add_metric([name, state.value], 1.0 if state.value == item.state else 0.0)
    return [
        read,
        written,
        duplicates,
        filtered,
        dlq,
        late,
        retries,
        pipeline_retries,
        retry_attempt,
        lag,
        batch,
        latency,
        last_batch,
        state_bytes,
        status,
    ]


class ServiceCollector(Collector):
    """The pipelines of a PipelineService, read at each scrape from their workers' reports."""

    def __init__(self, service: PipelineService) -> None:
        self.service = service

    def collect(self) -> Iterator[Metric]:
        reports = [
            PipelineReport(
                record.id,
                record.state.value,
                self.service.worker_report(record.id),
                self.service.relaunches.total(record.id),
            )
            for record in self.service.list()
        ]
        yield from pipeline_families(reports)


class RunnerCollector(Collector):
    """The one pipeline a `streamsift run` process runs."""

    def __init__(self, runner: PipelineRunner, started_at: str) -> None:
        self.runner = runner
        self.started_at = started_at

    def collect(self) -> Iterator[Metric]:
        runner = self.runner
        state = State.STOPPING if runner.stopping else State.RUNNING
        report = {"started_at": self.started_at, **runner.report()}
        yield from pipeline_families([PipelineReport(runner.pipeline.name, state.value, report)])


def registry_of(collector: Collector) -> CollectorRegistry:
    """A registry of its own (not the process-wide default, which holds Python's own)."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    return registry


def exposition(registry: CollectorRegistry, accept: str | None) -> tuple[bytes, str]:
    """The registry's metrics as text, in the format the `Accept` header asks for
    (Prometheus text by default, OpenMetrics when asked); and its content type."""
    encoder, content_type = choose_encoder(accept or "")
    return encoder(registry), content_type


def serve_metrics(collector: Collector, host: str, port: int) -> tuple[int, Callable[[], None]]:
    """prometheus_client's HTTP server for `collector` on host:port (0: any free port), in a
    daemon thread; returns the port it listens on and a function that stops it."""
    from prometheus_client import start_http_server

    server, thread = start_http_server(port, host, registry_of(collector))

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(5)

    return int(server.server_port), stop


def _add_histogram(
    family: HistogramMetricFamily,
    name: str,
    data: Mapping[str, Any] | None,
    bounds: tuple[float, ...],
) -> None:
    buckets = Buckets.from_dict(data) if data else Buckets(bounds)
    cumulative, points = 0, []
    for bound, n in zip((*buckets.bounds, float("inf")), buckets.counts, strict=True):
        cumulative += n
        points.append((floatToGoString(bound), cumulative))
    family.add_metric([name], points, sum_value=buckets.total)


def run_stats(item: PipelineReport) -> Mapping[str, Any]:
    """The current run's own counts (what only a run knows: retries, histograms)."""
    return item.report.get("stats") or {}


def _int(stats: Mapping[str, Any], key: str) -> int:
    return int(stats.get(key) or 0)


def _epoch(text: Any) -> float | None:
    """Unix time of an ISO 8601 text (Spark writes `...Z`), None when there is none."""
    if not isinstance(text, str) or not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
