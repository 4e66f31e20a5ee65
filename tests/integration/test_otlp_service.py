"""`streamsift serve` with OTLP pipelines: the service's one receiver routes by pipeline id
into each pipeline's topic on the service's bundled broker, and the pipeline's worker (a real
Spark process) writes every span into the embedded ClickHouse, once."""

from __future__ import annotations

import time

import clickhouse_connect
import httpx
import pytest
import yaml
from clickhouse_connect.driver.exceptions import ClickHouseError

from streamsift.api.app import create_app
from streamsift.api.settings import ServiceSettings
from support.otlp import EXAMPLES, http_exporters, send_spans
from support.servers import ServerThread
from support.waiting import wait_for

pytestmark = pytest.mark.integration


def test_service_receives_otlp_for_its_pipelines_on_the_bundled_broker(tmp_path):
    settings = ServiceSettings(
        data_dir=tmp_path / "data",
        token="svc-token",
        otlp_http_port=0,
        otlp_grpc_port=0,
        allow_paths=(tmp_path,),
    )
    app = create_app(settings)
    auth = {"authorization": "Bearer svc-token"}
    with ServerThread(app) as server:
        service = app.state.service
        try:
            receiver = service.otlp.receiver
            assert not receiver.started  # no OTLP pipeline yet: no OTLP port
            doc = yaml.safe_load((EXAMPLES / "otel-traces.yaml").read_text())
            doc["name"] = "svc-traces"
            del doc["source"]["receiver"]  # the service's receiver; no Kafka named: bundled
            clickhouse = tmp_path / "clickhouse"
            doc["sink"]["clickhouse"] = {"path": str(clickhouse)}
            created = httpx.post(
                f"{server.url}/api/v1/pipelines", json=doc, headers=auth, timeout=60
            )
            assert created.status_code == 201, created.text
            assert receiver.started and receiver.http_port and receiver.grpc_port

            refused = httpx.post(
                f"http://127.0.0.1:{receiver.http_port}/v1/traces",
                content=b"",
                headers={
                    "content-type": "application/x-protobuf",
                    "x-glassflow-pipeline-id": "svc-traces",
                },
            )
            assert refused.status_code == 401  # the service's token guards its receiver
            exporter = http_exporters(receiver.http_port, "svc-traces", token="svc-token")
            spans = send_spans(exporter["traces"](), 12, "svc")

            host, port = service.endpoints.address(clickhouse)
            client = clickhouse_connect.get_client(host=host, port=port)
            deadline = time.monotonic() + 180
            while True:
                try:
                    got = client.query(f"SELECT TraceId, SpanId FROM {doc['sink']['table']}")
                    rows = got.result_rows
                except ClickHouseError:  # the table appears once the worker is up
                    rows = []
                if len(rows) >= len(spans) or time.monotonic() > deadline:
                    break
                time.sleep(1)
            assert sorted(rows) == sorted(spans)
            assert service.status("svc-traces").dlq == 0
        finally:  # the server leaves pipelines running for the next one: stop them
            # (rows may come before the run's status says running: a Created one can't stop)
            wait_for(
                lambda: all(r.state.value != "Created" for r in service.list()),
                120,
                what="every pipeline started",
            )
            for record in service.list():
                service.stop(record.id)
            wait_for(
                lambda: all(r.state.value == "Stopped" for r in service.list()),
                120,
                what="every pipeline stopped",
            )
