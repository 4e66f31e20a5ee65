"""`streamsift run` of an OTLP pipeline as a user runs it: the receiver beside the Spark query
in one process. Spans the SDK's exporters got acknowledged are in Kafka, so a kill -9 after
their receipt and before their insert loses nothing: the restart writes every one, once."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import pytest
import yaml

from streamsift.embedded.broker import free_port
from support.cli import STREAMSIFT
from support.clickhouse import embedded_count
from support.otlp import EXAMPLES, grpc_exporters, http_exporters, send_spans
from support.paths import REPO

pytestmark = pytest.mark.e2e


def test_kill_9_between_receipt_and_insert_loses_nothing(broker, tmp_path):
    http_port, grpc_port = free_port(), free_port()
    doc = yaml.safe_load((EXAMPLES / "otel-traces.yaml").read_text())
    doc["source"]["bootstrap_servers"] = broker.bootstrap_servers
    doc["source"]["topic"] = "otlp-kill-9-spans"
    doc["source"]["receiver"] = {"http_port": http_port, "grpc_port": grpc_port}
    clickhouse = tmp_path / "clickhouse"
    doc["sink"]["clickhouse"] = {"path": str(clickhouse)}
    # No micro-batch for an hour after the first: what arrives now waits in Kafka.
    doc["sink"]["max_delay_time"] = "1h"
    path = tmp_path / "otel-traces.yaml"
    path.write_text(yaml.safe_dump(doc))
    data = tmp_path / "data"
    run = [*STREAMSIFT, "run", str(path), "--data-dir", str(data)]
    proc = subprocess.Popen(
        run, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True
    )
    try:
        metadata = data / "checkpoints" / doc["name"] / "spark" / "metadata"
        deadline = time.monotonic() + 120
        while not metadata.exists():  # the query has started (and found the topic empty)
            assert proc.poll() is None, proc.communicate()[1].decode()
            assert time.monotonic() < deadline, "the pipeline did not start"
            time.sleep(0.2)
        time.sleep(2)
        spans = send_spans(http_exporters(http_port, doc["name"])["traces"](), 25, "svc-a")
        spans += send_spans(grpc_exporters(grpc_port, doc["name"])["traces"](), 15, "svc-b")
        os.kill(proc.pid, signal.SIGKILL)  # every span was acknowledged: they are in Kafka
        proc.wait(30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
    assert len(set(spans)) == 40
    assert embedded_count(clickhouse, doc["sink"]["table"]) == 0  # killed before any insert

    again = subprocess.run(
        [*run, "--until-caught-up"], cwd=REPO, capture_output=True, text=True, timeout=300
    )
    assert again.returncode == 0, again.stderr
    assert "OTLP receiver for otlp.traces" in again.stderr
    assert "written 40," in again.stdout, again.stdout
    assert embedded_count(clickhouse, doc["sink"]["table"]) == 40
