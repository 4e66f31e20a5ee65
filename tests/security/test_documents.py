"""What a pipeline document may name through `streamsift serve` (service/document_policy.py):
no path outside the data dir, no Spark setting that loads code, no token provider by module.

Each case goes to a real server on loopback; documents are judged by the validate route (which
applies the same rules as create, without starting a pipeline) and by create itself, which
must refuse before anything starts: the pipeline count does not change.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from support.servers import Serve

pytestmark = pytest.mark.integration

MARKER_MODULE = """
from pathlib import Path


def write(args):
    Path(args["marker"]).write_text("ran")
    return "token", 4102444800.0
"""


def document(name: str = "sec-doc", **runtime: Any) -> dict[str, Any]:
    """A valid dedup pipeline into an embedded ClickHouse inside the data dir (a relative
    path in a document sent to the service is the data dir's)."""
    return {
        "name": name,
        "source": {
            "bootstrap_servers": "127.0.0.1:9",
            "topic": "events",
            "schema": {"fields": [{"name": "id", "type": "string"}]},
        },
        "dedup": {"key": "id", "time_window": "1h"},
        "sink": {
            "clickhouse": {"path": "clickhouse"},
            "table": "events",
            "create_table": True,
            "mapping": [{"field": "id", "column": "id", "type": "String"}],
        },
        "runtime": runtime,
    }


def inside(server: Serve, doc: dict[str, Any]) -> dict[str, Any]:
    """`doc` with its embedded ClickHouse inside `server`'s data dir."""
    doc = copy.deepcopy(doc)
    doc["sink"]["clickhouse"]["path"] = str(server.data_dir / "clickhouse")
    return doc


def problems(answer: httpx.Response) -> str:
    assert answer.status_code == 422, (answer.status_code, answer.text)
    return "\n".join(answer.json()["details"]["problems"])


def refused(server: Serve, doc: dict[str, Any], field: str) -> str:
    """Validate and create both answer 422 naming `field`; nothing is created."""
    with httpx.Client(base_url=server.url, timeout=60) as http:
        before = http.get("/api/v1/pipelines").json()
        text = problems(http.post("/api/v1/pipelines/validate", json=doc))
        assert field in text, text
        assert field in problems(http.post("/api/v1/pipelines", json=doc))
        assert http.get("/api/v1/pipelines").json() == before
    return text


def accepted(server: Serve, doc: dict[str, Any]) -> None:
    with httpx.Client(base_url=server.url, timeout=60) as http:
        answer = http.post("/api/v1/pipelines/validate", json=doc)
    assert answer.status_code == 200, answer.text


# ---------------------------------------------------------------------------- paths


@pytest.mark.parametrize(
    "where, value",
    [
        ("runtime.checkpoint_dir", "/"),
        ("runtime.checkpoint_dir", "/etc/streamsift-ckpt"),
        ("runtime.checkpoint_dir", "../../outside"),
        ("runtime.checkpoint_dir", "{data}/../outside"),
        ("runtime.checkpoint_dir", "{data}/pipelines/../../outside"),
        ("runtime.state_location", "/tmp/streamsift-state"),
        ("runtime.state_location", "file:///tmp/streamsift-state"),
        ("runtime.state_location", "file://{data}/../escape"),
        ("sink.clickhouse.path", "/tmp/streamsift-ch"),
        ("sink.clickhouse.path", "%2e%2e/%2e%2e/x"),
    ],
)
def test_paths_outside_the_data_dir_are_refused(open_server: Serve, where: str, value: str) -> None:
    doc = inside(open_server, document())
    section, _, key = where.rpartition(".")
    target = doc
    for part in section.split("."):
        target = target[part]
    target[key] = value.replace("{data}", str(open_server.data_dir))
    if value.startswith("%2e"):  # encoded dots are a name, not `..`: a folder of the data dir
        accepted(open_server, doc)
        return
    text = refused(open_server, doc, where)
    assert "--allow-path" in text


def test_a_symlink_out_of_the_data_dir_is_refused(open_server: Serve, tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    link = open_server.data_dir / "link-out"
    link.symlink_to(outside)
    doc = inside(open_server, document(checkpoint_dir=str(link / "ckpt")))
    refused(open_server, doc, "runtime.checkpoint_dir")


def test_paths_of_the_kafka_security_and_properties(open_server: Serve) -> None:
    base = inside(open_server, document())
    kerberos = copy.deepcopy(base)
    kerberos["source"]["security"] = {
        "protocol": "SASL_PLAINTEXT",
        "mechanism": "GSSAPI",
        "kerberos": {"principal": "svc@EXAMPLE", "keytab": "/etc/krb5.keytab"},
    }
    refused(open_server, kerberos, "source.security.kerberos.keytab")
    tls = copy.deepcopy(base)
    tls["source"]["security"] = {"protocol": "SSL", "ca_file": "/etc/ssl/certs/ca.pem"}
    refused(open_server, tls, "source.security.ca_file")
    prop = copy.deepcopy(base)
    prop["source"]["properties"] = {"ssl.keystore.location": "/root/keystore.p12"}
    refused(open_server, prop, "source.properties.ssl.keystore.location")
    for key in ("plugin.library.paths", "ssl.engine.location"):
        loading = copy.deepcopy(base)
        loading["source"]["properties"] = {key: str(open_server.data_dir / "lib.so")}
        assert "loads code" in refused(open_server, loading, f"source.properties.{key}")


def test_paths_inside_the_data_dir_and_remote_stores_are_accepted(open_server: Serve) -> None:
    data = open_server.data_dir
    accepted(open_server, inside(open_server, document(checkpoint_dir=str(data / "ck" / "a"))))
    accepted(open_server, inside(open_server, document(state_location="s3://bucket/state")))
    accepted(open_server, inside(open_server, document(state_location=f"file://{data}/state")))
    tls = inside(open_server, document())
    tls["source"]["security"] = {"protocol": "SSL", "ca_file": str(data / "ca.pem")}
    accepted(open_server, tls)


def test_allow_path_widens_the_roots(serve_factory: Callable[..., Serve], tmp_path: Path) -> None:
    shared = tmp_path / "shared-checkpoints"
    server = serve_factory("--allow-path", str(shared))
    accepted(server, inside(server, document(checkpoint_dir=str(shared / "p1"))))
    refused(server, inside(server, document(checkpoint_dir=str(tmp_path / "other"))), "runtime")


@pytest.mark.parametrize("owner", ["pipelines", "clickhouse"])
def test_reset_state_deletes_only_what_the_pipeline_owns(open_server: Serve, owner: str) -> None:
    """A checkpoint_dir at the data dir's pipelines folder, or at the pipeline's own embedded
    ClickHouse, validates (it is inside), but a reset must not delete every pipeline's
    directory or the table's data with it."""
    data = open_server.data_dir
    name = f"sec-reset-{owner}"
    # sink path: clickhouse; in a worker of its own, which terminate ends at once (no
    # pipeline host started for it, to stop with the server)
    doc = document(name, checkpoint_dir=str(data / owner), isolation="process")
    keep = data / owner / "someone-else" / "keep.txt"
    keep.parent.mkdir(parents=True, exist_ok=True)
    keep.write_text("x")
    with httpx.Client(base_url=open_server.url, timeout=120) as http:
        assert http.post("/api/v1/pipelines", json=doc).status_code == 201
        answer = http.post(f"/api/v1/pipelines/{name}/terminate")
        assert answer.status_code == 200, answer.text
        # the relative path was stored as the data dir's: the server and its worker agree
        stored = http.get(f"/api/v1/pipelines/{name}/document").json()
        assert stored["sink"]["clickhouse"]["path"] == str(data.resolve() / "clickhouse")
        edited = copy.deepcopy(doc)
        edited["dedup"]["time_window"] = "2h"
        answer = http.put(f"/api/v1/pipelines/{name}", params={"reset_state": "true"}, json=edited)
        assert answer.status_code == 422, answer.text
        assert "not a directory this pipeline owns" in answer.text
        assert keep.exists() and (data / "service.db").exists()
        assert http.delete(f"/api/v1/pipelines/{name}").status_code in (200, 204)


# ---------------------------------------------------------------------------- Spark


@pytest.mark.parametrize(
    "key",
    [
        "spark.driver.extraJavaOptions",
        "spark.executor.extraJavaOptions",
        "spark.jars",
        "spark.jars.packages",
        "spark.driver.extraClassPath",
        "spark.python.worker.reuse",
        "spark.pyspark.python",
        "spark.sql.streaming.stateStore.providerClass",
        "spark.sql.extensions",
        "spark.plugins",
        "spark.executorEnv.LD_PRELOAD",
        "spark.archives",
        "spark.hadoop.fs.s3a.impl",
        "spark.sql.streaming.stateStore.rocksdb.someLoaderClass",
    ],
)
def test_spark_settings_that_can_load_code_are_refused(open_server: Serve, key: str) -> None:
    doc = inside(open_server, document(spark_conf={key: "x"}))
    assert "--allow-spark-conf" in refused(open_server, doc, "runtime.spark_conf")


def test_tuning_settings_are_accepted_and_the_operator_widens_the_list(
    serve_factory: Callable[..., Serve], open_server: Serve
) -> None:
    tuning = {
        "spark.sql.shuffle.partitions": "4",
        "spark.executor.memory": "2g",
        "spark.sql.streaming.stateStore.rocksdb.blockCacheSizeMB": "64",
    }
    accepted(open_server, inside(open_server, document(spark_conf=tuning)))
    server = serve_factory("--allow-spark-conf", "spark.hadoop.fs.s3a.*")
    doc = inside(server, document(spark_conf={"spark.hadoop.fs.s3a.endpoint": "http://s3"}))
    accepted(server, doc)
    refused(server, inside(server, document(spark_conf={"spark.jars": "x"})), "spark.jars")


@pytest.mark.parametrize("master", ["spark://127.0.0.1:7077", "k8s://https://h:6443", "yarn"])
def test_a_master_other_than_the_servers_is_refused(open_server: Serve, master: str) -> None:
    doc = inside(open_server, document(master=master))
    assert "--master" in refused(open_server, doc, "runtime.master")


def test_local_masters_and_the_servers_own_are_accepted(
    serve_factory: Callable[..., Serve], open_server: Serve
) -> None:
    accepted(open_server, inside(open_server, document(master="local[1]")))
    server = serve_factory("--master", "spark://127.0.0.1:7077")
    accepted(server, inside(server, document(master="spark://127.0.0.1:7077")))


# ---------------------------------------------------------------------------- token providers


def oauth(provider: str, marker: Path) -> dict[str, Any]:
    return {
        "protocol": "SASL_PLAINTEXT",
        "mechanism": "OAUTHBEARER",
        "oauthbearer": {"token_provider": provider, "args": {"marker": str(marker)}},
    }


@pytest.fixture(scope="module")
def marker_module(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A module the servers can import: its function writes the file its args name."""
    folder = tmp_path_factory.mktemp("providers")
    (folder / "sec_marker_provider.py").write_text(MARKER_MODULE)
    return folder


@pytest.fixture(scope="module")
def importing_server(serve_factory: Callable[..., Serve], marker_module: Path) -> Serve:
    """A server that could import the marker module, one for every callable named below
    (each is refused before anything runs; each test has its own marker file)."""
    return serve_factory(
        env={"PYTHONPATH": f"{marker_module}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    )


@pytest.mark.parametrize(
    "provider", ["sec_marker_provider:write", "subprocess:run", "os:system", "builtins:exec"]
)
def test_a_document_cannot_name_a_callable(
    importing_server: Serve, tmp_path: Path, provider: str
) -> None:
    server = importing_server
    marker = tmp_path / "ran"
    doc = inside(server, document())
    doc["source"]["security"] = oauth(provider, marker)
    refused(server, doc, "source.security.oauthbearer.token_provider")
    with httpx.Client(base_url=server.url, timeout=60) as http:
        answer = http.post(
            "/api/v1/connections/kafka/test",
            json={"bootstrap_servers": "127.0.0.1:9", "security": oauth(provider, marker)},
        )
    assert answer.status_code == 422, answer.text
    assert "token_provider" in answer.text
    assert not marker.exists()


def test_a_registered_provider_is_named_by_its_name(
    serve_factory: Callable[..., Serve], marker_module: Path, tmp_path: Path
) -> None:
    server = serve_factory(
        "--token-provider",
        "corp=sec_marker_provider:write",
        env={"PYTHONPATH": str(marker_module)},
    )
    marker = tmp_path / "ran"
    doc = inside(server, document())
    doc["source"]["security"] = oauth("corp", marker)
    accepted(server, doc)
    doc["source"]["security"] = oauth("unknown-name", marker)
    assert "not a token provider this server knows" in refused(
        server, doc, "source.security.oauthbearer.token_provider"
    )


def test_the_probe_routes_name_no_path_outside_the_data_dir(
    open_server: Serve, tmp_path: Path
) -> None:
    target = tmp_path / "made-by-a-probe"
    with httpx.Client(base_url=open_server.url, timeout=60) as http:
        for route in (
            "/api/v1/connections/clickhouse/test",
            "/api/v1/connections/clickhouse/columns",
        ):
            body: dict[str, Any] = {"path": str(target)}
            if route.endswith("columns"):
                body["table"] = "events"
            assert "path:" in problems(http.post(route, json=body))
        kerberos = {
            "protocol": "SASL_PLAINTEXT",
            "mechanism": "GSSAPI",
            "kerberos": {"principal": "svc@EXAMPLE", "keytab": "/etc/krb5.keytab"},
        }
        for route in ("/api/v1/connections/kafka/test", "/api/v1/connections/kafka/topics"):
            answer = http.post(
                route, json={"bootstrap_servers": "127.0.0.1:9", "security": kerberos}
            )
            assert "security.kerberos.keytab" in problems(answer)
    assert not target.exists()
