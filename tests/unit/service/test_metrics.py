"""The metrics' pure parts: histograms that add up and travel as JSON, the sink's counts by
class and latency, and the Prometheus families built from a run's report (parsed back with
prometheus_client's own parser)."""

from __future__ import annotations

from datetime import datetime, timezone

import pyarrow as pa
import pytest
from prometheus_client.parser import text_string_to_metric_families

from streamsift.engine.batch_writer import dead_letters_by_class, latency_since
from streamsift.engine.progress import LATENCY_SECONDS, Buckets, RunStats, SinkCounts
from streamsift.service.metrics import PipelineReport, pipeline_families, registry_of


def test_buckets_put_a_value_on_its_bound_in_that_bucket_and_add_up() -> None:
    a = Buckets((1.0, 2.0))
    a.observe_all([0.5, 1.0, 1.5, 9.0])
    assert (a.counts, a.total, a.count) == ([2, 1, 1], 12.0, 4)
    b = Buckets.from_dict(a.as_dict())
    b.add(a)
    assert (b.counts, b.total) == ([4, 2, 2], 24.0)
    with pytest.raises(ValueError):
        b.add(Buckets((1.0,)))


def test_sink_counts_add_up_and_survive_an_executors_json() -> None:
    latency = Buckets(LATENCY_SECONDS)
    latency.observe(0.3)
    one = SinkCounts(5, 2, 1, {("parse", "malformed_json"): 2}, latency, retries=1)
    two = SinkCounts.of(3, 1, 0, SinkCounts(dlq_by_class={("sink", "clickhouse_6"): 1}).as_json())
    total = one + two
    assert (total.written, total.dlq, total.late, total.retries) == (8, 3, 1, 1)
    assert total.dlq_by_class == {("parse", "malformed_json"): 2, ("sink", "clickhouse_6"): 1}
    assert total.latency is not None and total.latency.count == 1
    again = SinkCounts.of(8, 3, 1, total.as_json())
    assert again == total


def test_latency_runs_from_the_kafka_timestamp_to_now_and_skips_rows_without_one() -> None:
    now = datetime(2026, 1, 1, 0, 0, 10, tzinfo=timezone.utc)
    stamps = pa.chunked_array(
        [[datetime(2026, 1, 1, 0, 0, 9, 800000), datetime(2026, 1, 1, 0, 0, 7), None]],
        pa.timestamp("us", "UTC"),
    )
    buckets = latency_since(stamps, now.timestamp())
    assert buckets.count == 2
    assert buckets.total == pytest.approx(3.2)
    assert buckets.counts[0] == 1  # 0.2 s <= 0.25
    assert buckets.counts[LATENCY_SECONDS.index(5.0)] == 1  # 3 s in (2, 5]


def test_dead_letters_are_counted_by_stage_and_class() -> None:
    dead = pa.table(
        {
            "stage": ["parse", "parse", "sink"],
            "error_class": ["malformed_json", "malformed_json", "clickhouse_6"],
        }
    )
    assert dead_letters_by_class(dead) == {
        ("parse", "malformed_json"): 2,
        ("sink", "clickhouse_6"): 1,
    }
    assert dead_letters_by_class(dead.slice(0, 0)) == {}


def test_a_runs_report_becomes_families_prometheus_parses() -> None:
    stats = RunStats()
    stats.ingest(
        {
            "batchId": 0,
            "numInputRows": 8,
            "batchDuration": 1500,
            "sources": [
                {"startOffset": {"t/0": 0}, "endOffset": {"t/0": 10}, "latestOffset": {"t/0": 13}}
            ],
        }
    )
    latency = Buckets(LATENCY_SECONDS)
    latency.observe_all([0.1, 0.7])
    stats.add_counts(SinkCounts(6, 2, 1, {("parse", "malformed_json"): 2}, latency), batch=0)
    stats.add_retry("insert")
    report = {
        "started_at": "2026-01-01T00:00:00+00:00",
        "stats": stats.as_dict(),
        "lag_by_partition": {"my.topic/0": 3},
        "last_batch_at": "2026-01-01T00:00:05.000Z",
    }
    registry = registry_of(_Fixed([PipelineReport("p1", "Running", report)]))
    from prometheus_client import generate_latest

    families = {
        f.name: f for f in text_string_to_metric_families(generate_latest(registry).decode())
    }
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in families.values()
        for s in f.samples
    }
    p = (("pipeline", "p1"),)
    assert samples[("streamsift_rows_read_total", p)] == 10
    assert samples[("streamsift_rows_written_total", p)] == 6
    assert samples[("streamsift_duplicates_dropped_total", p)] == 2
    assert (
        samples[("streamsift_rows_written_created", p)]
        == datetime(2026, 1, 1, tzinfo=timezone.utc).timestamp()
    )
    key = (("error_class", "malformed_json"), ("pipeline", "p1"), ("stage", "parse"))
    assert samples[("streamsift_dlq_records_total", key)] == 2
    assert samples[("streamsift_late_events_total", (("outcome", "kept"), *p))] == 1
    assert samples[("streamsift_clickhouse_retries_total", (("operation", "insert"), *p))] == 1
    lag = (("partition", "0"), ("pipeline", "p1"), ("topic", "my.topic"))
    assert samples[("streamsift_lag_messages", lag)] == 3
    assert families["streamsift_micro_batch_duration_seconds"].type == "histogram"
    assert samples[("streamsift_micro_batch_duration_seconds_count", p)] == 1
    assert samples[("streamsift_micro_batch_duration_seconds_sum", p)] == 1.5
    le = (("le", "2.5"), *p)
    assert samples[("streamsift_micro_batch_duration_seconds_bucket", le)] == 1
    assert samples[("streamsift_micro_batch_duration_seconds_bucket", (("le", "1.0"), *p))] == 0
    assert samples[("streamsift_end_to_end_latency_seconds_count", p)] == 2
    assert samples[("streamsift_end_to_end_latency_seconds_sum", p)] == pytest.approx(0.8)
    assert (
        samples[("streamsift_last_micro_batch_timestamp_seconds", p)]
        == datetime(2026, 1, 1, 0, 0, 5, tzinfo=timezone.utc).timestamp()
    )
    status = {
        dict(k)["status"]: v for (n, k), v in samples.items() if n == "streamsift_pipeline_status"
    }
    assert status["Running"] == 1 and sum(status.values()) == 1


def test_a_pipeline_that_never_ran_shows_zeros_and_its_state() -> None:
    families = pipeline_families([PipelineReport("new", "Created", {})])
    by_name = {f.name: f for f in families}
    assert [s.value for s in by_name["streamsift_rows_written"].samples] == [0]
    assert by_name["streamsift_lag_messages"].samples == []
    counts = [s for s in by_name["streamsift_end_to_end_latency_seconds"].samples]
    assert all(s.value == 0 for s in counts)


class _Fixed:
    def __init__(self, reports: list[PipelineReport]) -> None:
        self.reports = reports

    def collect(self):  # noqa: ANN201 - prometheus_client's Collector protocol
        return pipeline_families(self.reports)


def test_a_retrying_pipeline_shows_its_attempt_retries_and_filtered_rows() -> None:
    report = {
        "started_at": "2026-01-01T00:00:00Z",
        "stats": {"read": 10, "written": 6, "filtered": 3},
        "retries_total": 4,
        "retry": {"attempt": 2, "reason": "Kafka did not answer"},
    }
    text = registry_of_families(
        [
            PipelineReport("p", "Retrying", report, restarts=1),
            PipelineReport("q", "Running", {"retry": {"attempt": 7}}),
        ]
    )
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }
    assert samples[("streamsift_rows_filtered_total", (("pipeline", "p"),))] == 3
    query, worker = (
        (("level", "query"), ("pipeline", "p")),
        (("level", "worker"), ("pipeline", "p")),
    )
    assert samples[("streamsift_pipeline_retries_total", query)] == 4
    assert samples[("streamsift_pipeline_retries_total", worker)] == 1
    assert samples[("streamsift_pipeline_retry_attempt", (("pipeline", "p"),))] == 2
    # a retry report left from an earlier episode counts for nothing once it runs
    assert samples[("streamsift_pipeline_retry_attempt", (("pipeline", "q"),))] == 0
    state = (("pipeline", "p"), ("status", "Retrying"))
    assert samples[("streamsift_pipeline_status", state)] == 1


def registry_of_families(reports: list[PipelineReport]) -> str:
    from prometheus_client import generate_latest

    return generate_latest(registry_of(_Fixed(reports))).decode()
