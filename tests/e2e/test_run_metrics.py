"""`streamsift run --metrics-port 0`: a Prometheus endpoint for a pipeline run from the CLI,
whose counters are the table's rows (counted after the run, by chdb)."""

from __future__ import annotations

import os
import re
import signal
import socket
from pathlib import Path

import httpx
import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from streamsift.sample_data.generator import EventSpec, Truth, generate, produce
from support.cli import start_streamsift, streamsift
from support.clickhouse import embedded_count
from support.paths import EXAMPLES
from support.waiting import wait_for

pytestmark = pytest.mark.e2e
EVENTS = 300


@pytest.fixture
def pipeline(broker, tmp_path, unique_name) -> tuple[Path, Truth]:
    """The example dedup pipeline over a topic of its own with EVENTS events (20% re-sends)."""
    broker.create_topic(unique_name, 2)
    truth = Truth()
    events = generate(EventSpec(EVENTS, 0.2, 30, seed=11), truth)
    produce(broker.bootstrap_servers, unique_name, events)
    doc = yaml.safe_load((EXAMPLES / "users-dedup.yaml").read_text())
    doc["name"] = unique_name.replace("_", "-")[:60]
    doc["source"]["bootstrap_servers"] = broker.bootstrap_servers
    doc["source"]["topic"] = unique_name
    doc["sink"]["clickhouse"]["path"] = str(tmp_path / "ch")
    doc["runtime"] = {"checkpoint_dir": str(tmp_path / "checkpoint")}
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path, truth


def scrape(url: str) -> dict[str, float]:
    """The pipeline's samples by name (and status label), parsed by prometheus_client."""
    text = httpx.get(url, timeout=10).text
    samples = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            samples[s.name + (f":{s.labels['status']}" if "status" in s.labels else "")] = s.value
    return samples


def test_run_serves_metrics_that_count_the_tables_rows(pipeline, tmp_path) -> None:
    path, truth = pipeline
    proc = start_streamsift("run", str(path), "--metrics-port", "0", out=tmp_path)
    try:
        said = re.compile(r"metrics on (http://127\.0\.0\.1:\d+/metrics)")
        wait_for(
            lambda: said.search((tmp_path / "stderr").read_text()),
            240,
            what="the metrics line",
            proc=proc,
            interval=0.2,
        )
        url = said.search((tmp_path / "stderr").read_text()).group(1)
        # the row counters are counted as the sink writes (engine/ledger.py), the run's
        # histograms once Spark reports the batch: wait for both
        wait_for(
            lambda: (
                (s := scrape(url)).get("streamsift_rows_written_total") == truth.expected_unique
                and s.get("streamsift_end_to_end_latency_seconds_count") == truth.expected_unique
            ),
            240,
            what="every row counted",
            proc=proc,
            interval=0.2,
        )
        samples = scrape(url)
        assert samples["streamsift_rows_read_total"] == EVENTS
        assert samples["streamsift_duplicates_dropped_total"] == EVENTS - truth.expected_unique
        assert samples["streamsift_pipeline_status:Running"] == 1
        assert samples["streamsift_micro_batch_duration_seconds_count"] >= 1
        assert samples["streamsift_end_to_end_latency_seconds_count"] == truth.expected_unique
        os.kill(proc.pid, signal.SIGTERM)
        assert proc.wait(120) == 0, (tmp_path / "stderr").read_text()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert embedded_count(tmp_path / "ch", "users_dedup") == truth.expected_unique
    with pytest.raises(httpx.TransportError):  # the endpoint ends with the run
        httpx.get(url, timeout=5)


def test_a_metrics_port_in_use_is_a_clear_error(pipeline) -> None:
    path, _ = pipeline
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        result = streamsift("run", str(path), "--metrics-port", str(port), timeout=120)
    assert result.returncode == 2, result.stderr
    assert f"cannot serve metrics on 127.0.0.1:{port}" in result.stderr
    assert "Traceback" not in result.stderr
