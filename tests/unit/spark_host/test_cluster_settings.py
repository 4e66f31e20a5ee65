"""Cluster settings: the master, `spark.*` settings, where dedup state is shared, and the
refusal of embedded ClickHouse on a cluster."""

from __future__ import annotations

import pytest

from streamsift.config import parse_pipeline
from streamsift.config.errors import ConfigError
from streamsift.engine.runner import PipelineRunner
from streamsift.spark_host.errors import RuntimeConfigError
from streamsift.spark_host.session import MASTER_ENV, resolve_master
from streamsift.transforms.dedup.carry_over import state_location
from support.pipeline_docs import fields, mapping, pipeline_doc


def doc(runtime: dict | None = None, clickhouse: dict | None = None) -> dict:
    return pipeline_doc(
        fields=fields(("id", "string")),
        mapping=mapping(("id", "id", "String")),
        dedup={"key": ["id"], "time_window": "1h"},
        runtime=runtime,
        clickhouse=clickhouse,
    )


def test_runtime_takes_master_spark_settings_and_state_location():
    p = parse_pipeline(
        doc(
            {
                "master": "spark://10.0.0.1:7077",
                "spark_conf": {"spark.sql.shuffle.partitions": 8, "spark.executor.cores": "1"},
                "state_location": "s3://bucket/state",
            }
        )
    )
    assert p.runtime.master == "spark://10.0.0.1:7077"
    assert p.runtime.spark_conf == {
        "spark.sql.shuffle.partitions": "8",
        "spark.executor.cores": "1",
    }
    assert p.runtime.state_location == "s3://bucket/state"
    assert parse_pipeline(doc()).runtime.master is None  # default: local


@pytest.mark.parametrize(
    ("runtime", "message"),
    [
        ({"master": "spark:/oops"}, "runtime.master"),
        ({"spark_conf": {"executor.memory": "2g"}}, "keys start with spark."),
        ({"spark_conf": {"spark.x": {"a": 1}}}, "single value"),
        ({"state_location": " "}, "runtime.state_location"),
    ],
)
def test_bad_runtime_settings_name_the_field(runtime, message):
    with pytest.raises(ConfigError, match=message):
        parse_pipeline(doc(runtime))


def test_master_precedence_flag_then_environment_then_file(monkeypatch):
    monkeypatch.delenv(MASTER_ENV, raising=False)
    assert resolve_master(None) == "local[2]"
    assert resolve_master("spark://f:1") == "spark://f:1"
    monkeypatch.setenv(MASTER_ENV, "spark://env:1")
    assert resolve_master("spark://f:1") == "spark://env:1"
    assert resolve_master("spark://f:1", "spark://flag:1") == "spark://flag:1"


def test_embedded_clickhouse_is_refused_on_a_cluster(monkeypatch):
    monkeypatch.delenv(MASTER_ENV, raising=False)
    pipeline = parse_pipeline(doc())
    with pytest.raises(RuntimeConfigError, match="use a ClickHouse server"):
        PipelineRunner(pipeline, master="spark://127.0.0.1:7077")


def test_dedup_state_is_shared_on_a_cluster_and_local_runs_keep_theirs(tmp_path):
    p = parse_pipeline(doc(clickhouse={"host": "127.0.0.1"}))
    assert state_location(p, "local[2]", tmp_path) is None
    assert state_location(p, "spark://h:7077", tmp_path) == str(tmp_path / "state")
    s3 = parse_pipeline(doc({"state_location": "s3://b/x"}, clickhouse={"host": "127.0.0.1"}))
    assert state_location(s3, "local[2]", tmp_path) == "s3://b/x"


def test_run_and_serve_take_a_master_and_package_env_an_output():
    from streamsift.cli.main import build_parser

    parser = build_parser()
    assert parser.parse_args(["run", "p.yaml", "--master", "spark://h:7077"]).master == (
        "spark://h:7077"
    )
    assert parser.parse_args(["serve", "--master", "spark://h:7077"]).master == "spark://h:7077"
    assert str(parser.parse_args(["package-env", "-o", "env.tar.gz"]).output) == "env.tar.gz"
