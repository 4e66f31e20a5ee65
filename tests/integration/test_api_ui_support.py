"""The web UI's helper routes (/api/v1/ui, api/routers/ui_support.py) on a real server with no
pipelines: the wizard's defaults, the name check, the ClickHouse check (a directory deploy
creates is fine), the upload check (a topic the broker does not have), the CREATE TABLE plan
and the series of a pipeline that does not exist. A caller's mistake is a 4xx, never a 5xx."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from streamsift.api.app import create_app
from streamsift.api.settings import ServiceSettings
from streamsift.embedded.broker import Broker
from support.ports import closed_port
from support.servers import ServerThread

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("ui-api") / "data"


@pytest.fixture(scope="module")
def http(data_dir: Path) -> Iterator[httpx.Client]:
    settings = ServiceSettings(data_dir=data_dir, probe_timeout_s=3)
    with (
        ServerThread(create_app(settings)) as server,
        httpx.Client(base_url=server.url, timeout=60) as client,
    ):
        yield client


def doc(topic: str, servers: str) -> dict:
    return {
        "name": "ui-check",
        "source": {
            "bootstrap_servers": servers,
            "topic": topic,
            "schema": {"fields": [{"name": "id", "type": "string"}]},
        },
        "dedup": {"key": "id", "time_window": "1h"},
        "sink": {
            "clickhouse": {"path": "clickhouse"},
            "table": "t",
            "create_table": True,
            "mapping": [{"field": "id", "column": "id", "type": "String"}],
        },
    }


def test_defaults_point_under_the_data_dir(http: httpx.Client, data_dir: Path) -> None:
    answer = http.get("/api/v1/ui/defaults")
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["clickhouse_path"] == str(data_dir.resolve() / "clickhouse")
    assert body["bootstrap_servers"] == [] and body["pipelines"] == []


def test_names_are_checked(http: httpx.Client) -> None:
    assert http.get("/api/v1/ui/names/free-name").json() == {
        "name": "free-name",
        "valid": True,
        "taken": False,
        "message": None,
    }
    bad = http.get("/api/v1/ui/names/-bad").json()
    assert bad["valid"] is False and "letters, digits" in bad["message"]


def test_a_directory_deploy_creates_is_no_failure(http: httpx.Client) -> None:
    answer = http.post("/api/v1/ui/clickhouse/check", json={"path": "clickhouse"})
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["ok"] and body["will_create"]
    assert "deploy creates it" in body["message"]
    outside = http.post("/api/v1/ui/clickhouse/check", json={"path": "/etc/elsewhere"})
    assert outside.status_code == 422, outside.text


def test_the_upload_check_names_a_missing_topic(http: httpx.Client, broker: Broker) -> None:
    answer = http.post(
        "/api/v1/ui/upload/check", json=doc("no_such_topic_ui", broker.bootstrap_servers)
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["missing_topics"] == [f"no_such_topic_ui on {broker.bootstrap_servers}"]
    assert "does not exist" in body["problems"][0] and body["name_taken"] is False
    broken = http.post(
        "/api/v1/ui/upload/check",
        content=b"name: [unclosed\n",
        headers={"Content-Type": "application/yaml"},
    )
    assert 400 <= broken.status_code < 500, broken.text


def test_an_unreachable_broker_is_a_note_not_a_problem(http: httpx.Client) -> None:
    answer = http.post("/api/v1/ui/upload/check", json=doc("t", f"127.0.0.1:{closed_port()}"))
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["problems"] == [] and body["missing_topics"] == []
    assert "could not be checked" in body["notes"][0]


def test_table_plan_and_series(http: httpx.Client) -> None:
    plan = http.post("/api/v1/ui/table-plan", json=doc("t", "127.0.0.1:9092"))
    assert plan.status_code == 200, plan.text
    assert plan.json()["sql"].startswith("CREATE TABLE IF NOT EXISTS `default`.`t`")
    assert "ORDER BY (`id`)" in plan.json()["sql"]
    missing = http.get("/api/v1/ui/series/no-such-pipeline")
    assert missing.status_code == 404, missing.text
    assert http.get("/api/v1/ui/rates").json() == []
