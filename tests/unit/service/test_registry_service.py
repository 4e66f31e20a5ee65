"""A pipeline with `schema.from_registry` behind a password-protected registry, through the
service's HTTP API and a restart of the service: reading it back never needs the registry
(the stored document shows `from_registry` as written and its password as ***), and the
worker takes the fields from the registry with the real password, before and after the
restart and after an edit that sent the masked document back.

No Spark: the pipeline runs in a worker process of its own (`runtime.isolation: process`,
not in the pipeline host, a Spark application), its sink is a ClickHouse server that is not
there, and it allows no retry (`runtime.retry.max_attempts: 0`), so each worker ends right
after it has loaded its pipeline, failing on ClickHouse: an error that is not the
registry's shows that the worker's own fetch of the fields, with the stored password,
succeeded.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from streamsift.api.app import create_app
from streamsift.api.settings import ServiceSettings
from streamsift.embedded.broker import free_port
from streamsift.service.pipeline_process import STATUS_FILE
from streamsift.sources.schema_registry import clear_cache
from support.pipeline_docs import mapping, pipeline_doc
from support.schema_registry import RegistryState, build_registry_app
from support.servers import ServerThread
from support.waiting import wait_for

AVSC = (
    '{"type":"record","name":"Order","fields":[{"name":"id","type":"string"},'
    '{"name":"qty","type":"long"}]}'
)
USER, SECRET = "svc", "sr-Secret-Restart-81"
NAME = "avro-secured"
WORKER_TIMEOUT_S = 120


def secured_doc(registry_url: str) -> dict[str, Any]:
    doc = pipeline_doc(
        topic="orders-secured",
        fields=[],
        mapping=mapping(("id", "id", "String"), ("qty", "qty", "Int64")),
        name=NAME,
        table="orders",
        clickhouse={"host": "127.0.0.1", "port": free_port()},  # nobody answers there
        source={
            "format": "avro",
            "schema_registry": {"url": registry_url, "username": USER, "password": SECRET},
        },
        sink={"connect_timeout": "1s"},
        # fail at once (no retry of ClickHouse), in a worker of its own (no Spark started)
        runtime={"retry": {"max_attempts": 0}, "isolation": "process"},
    )
    doc["source"]["schema"] = {"from_registry": True}  # subject orders-secured-value
    return doc


def wait_failed(http: httpx.Client) -> dict[str, Any]:
    """The pipeline's record once its worker has ended (Failed, with its error)."""
    deadline = time.monotonic() + WORKER_TIMEOUT_S
    while True:
        record = http.get(f"/api/v1/pipelines/{NAME}").json()
        if record["state"] == "Failed":
            return record
        assert time.monotonic() < deadline, f"the worker did not end: {record}"
        time.sleep(0.3)


def asked_for_fields(state: RegistryState) -> int:
    return sum(r.endswith("/subjects/orders-secured-value/versions/latest") for r in state.requests)


def test_secured_from_registry_pipeline_across_a_service_restart(tmp_path: Path) -> None:
    clear_cache()
    state = RegistryState()
    settings = ServiceSettings(data_dir=tmp_path / "data")
    with ServerThread(build_registry_app(state, username=USER, password=SECRET)) as registry:
        SchemaRegistryClient(
            {"url": registry.url, "basic.auth.user.info": f"{USER}:{SECRET}"}
        ).register_schema("orders-secured-value", Schema(AVSC, "AVRO"))
        doc = secured_doc(registry.url)

        # first server: create; the service validates with the fields, the worker fetches them
        with (
            ServerThread(create_app(settings)) as server,
            httpx.Client(base_url=server.url, timeout=60) as http,
        ):
            created = http.post("/api/v1/pipelines", json=doc)
            assert created.status_code == 201, created.text
            first = wait_failed(http)
            assert "ClickHouse" in first["error"] or "127.0.0.1" in first["error"]
            assert "registry" not in first["error"] and SECRET not in first["error"]
        asked = asked_for_fields(state)
        assert asked >= 2  # the service's create, then the worker

        # second server on the same data directory: reads need no registry
        with (
            ServerThread(create_app(settings)) as server,
            httpx.Client(base_url=server.url, timeout=60) as http,
        ):
            shown = http.get(f"/api/v1/pipelines/{NAME}/document")
            assert shown.status_code == 200, shown.text
            source = shown.json()["source"]
            assert source["schema"] == {"from_registry": True}  # as written, no fields
            assert source["schema_registry"] == {
                "url": registry.url,
                "username": USER,
                "password": "***",
            }
            for path in ("/api/v1/pipeline", f"/api/v1/pipeline/{NAME}", "/api/v1/pipelines"):
                answer = http.get(path)
                assert answer.status_code == 200, (path, answer.text)
                assert SECRET not in answer.text
            exported = http.get(f"/api/v1/pipeline/{NAME}").json()["sources"][0]
            assert exported["format"] == "avro" and "schema_fields" not in exported
            assert exported["schema_registry"]["api_secret"] == "***"
            assert asked_for_fields(state) == asked  # nothing of the above asked the registry

            # the masked document sent back (a new sink table): its password is kept,
            # and the fields are taken with it (not from this process's cache)
            clear_cache()
            edited = dict(shown.json(), sink={**shown.json()["sink"], "table": "orders_v2"})
            answer = http.put(f"/api/v1/pipelines/{NAME}", json=edited)
            assert answer.status_code == 200, answer.text
            assert answer.json()["version"] == 2
            after_edit = http.get(f"/api/v1/pipelines/{NAME}/document").json()["source"]
            assert after_edit["schema_registry"]["password"] == "***"
            assert asked_for_fields(state) == asked + 1  # the edit, with the real password

            # resumed after the restart: the worker fetches the fields with the stored password
            assert http.post(f"/api/v1/pipelines/{NAME}/resume").status_code == 200
            time.sleep(0.5)
            again = wait_failed(http)
            assert again["error_at"] != first["error_at"]
            assert "registry" not in again["error"] and "401" not in again["error"]
            assert asked_for_fields(state) == asked + 2


def test_a_registry_that_does_not_answer_at_start_is_retried_not_failed(tmp_path: Path) -> None:
    """The worker of a `from_registry` pipeline whose registry is down retries (Retrying,
    the registry named) and goes on once the registry is back at its address: here to the
    next fault, the ClickHouse that is not there, which its retry limit then ends."""
    clear_cache()
    port = free_port()
    doc = secured_doc(f"http://127.0.0.1:{port}")
    doc["runtime"] = {"retry": {"max_attempts": 4, "first_backoff": "1s", "max_backoff": "1s"}}
    worker = subprocess.Popen(
        [sys.executable, "-m", "streamsift.service.pipeline_process", "--dir", str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert worker.stdin is not None
    worker.stdin.write(json.dumps(doc).encode())
    worker.stdin.close()

    def status() -> dict[str, Any]:
        try:
            return json.loads((tmp_path / STATUS_FILE).read_text())
        except (OSError, ValueError):
            return {}

    try:
        retrying = wait_for(
            lambda: (s := status()).get("state") == "retrying" and s,
            WORKER_TIMEOUT_S,
            what="the worker retrying the registry",
            proc=worker,
        )
        assert retrying["retry"]["kind"] == "RegistryUnavailable"
        assert "schema.from_registry" in retrying["retry"]["reason"]
        assert SECRET not in json.dumps(retrying)
        state = RegistryState()
        with ServerThread(build_registry_app(state, username=USER, password=SECRET), port):
            SchemaRegistryClient(
                {"url": f"http://127.0.0.1:{port}", "basic.auth.user.info": f"{USER}:{SECRET}"}
            ).register_schema("orders-secured-value", Schema(AVSC, "AVRO"))
            assert worker.wait(WORKER_TIMEOUT_S) == 1  # the ClickHouse fault outlasted its retries
            assert asked_for_fields(state) >= 1  # the fields were fetched once it answered
    finally:
        worker.kill()
    final = status()
    assert final["state"] == "failed"
    assert final["error"].startswith("gave up after 4 retries") and "ClickHouse" in final["error"]
