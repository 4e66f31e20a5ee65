"""Where the service runs a pipeline (the pipeline host or a process of its own), the host's
heap by the number of pipelines, the idle DLQ count rule and the state size of a checkpoint:
pure pieces of the pipeline host (service/host_link.py, service/dlq_pending.py,
engine/state_size.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.models import Isolation
from streamsift.engine.state_size import StateSize
from streamsift.service import dlq_pending
from streamsift.service.dlq_pending import PendingCounts
from streamsift.service.host_link import host_memory, placement
from streamsift.spark_host.session import MASTER_ENV
from support.pipeline_docs import fields, mapping, pipeline_doc


def doc(**runtime: Any) -> dict[str, Any]:
    document = pipeline_doc(
        fields=fields(("id", "string")), mapping=mapping(("id", "id", "String"))
    )
    document["runtime"] = runtime
    return document


def test_a_pipeline_runs_in_the_host_unless_it_needs_an_application_of_its_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(MASTER_ENV, raising=False)
    assert placement(parse_pipeline(doc()))[0] is Isolation.HOST
    sql_only = doc(spark_conf={"spark.sql.shuffle.partitions": 4}, weight=3)
    assert placement(parse_pipeline(sql_only))[0] is Isolation.HOST
    where, why = placement(parse_pipeline(doc(isolation="process")))
    assert (where, why) == (Isolation.PROCESS, "runtime.isolation: process")
    where, why = placement(parse_pipeline(doc(master="spark://m:7077")))
    assert where is Isolation.PROCESS and "spark://m:7077" in why
    executor = doc(spark_conf={"spark.executor.memory": "4g", "spark.sql.adaptive.enabled": 1})
    where, why = placement(parse_pipeline(executor))
    assert where is Isolation.PROCESS and "spark.executor.memory" in why
    assert "spark.sql.adaptive" not in why
    monkeypatch.setenv(MASTER_ENV, "spark://cluster:7077")  # serve --master
    assert placement(parse_pipeline(doc()))[0] is Isolation.PROCESS


def test_isolation_and_weight_are_checked_and_named() -> None:
    with pytest.raises(ConfigError, match=r"runtime\.isolation"):
        parse_pipeline(doc(isolation="thread"))
    with pytest.raises(ConfigError, match=r"runtime\.weight"):
        parse_pipeline(doc(weight=0))


def test_the_hosts_heap_grows_with_the_pipelines_beyond_four() -> None:
    assert host_memory(0) == host_memory(4) == "2048m"
    assert host_memory(10) == "3584m"
    assert host_memory(20) == "6144m"


def test_dlq_pending_is_counted_again_only_when_it_can_have_changed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[str] = []
    counts = PendingCounts(lambda pipeline_id: asked.append(pipeline_id) or 7)
    counts._refresh("p", written=3)  # the first count, as a refresh thread takes it
    assert counts.get("p", written=3)[0] == 7
    monkeypatch.setattr(dlq_pending, "REFRESH_S", -1.0)  # every count is old enough
    assert not counts._due("p", written=3)  # nothing written since, nobody worked on it
    assert counts._due("p", written=4)  # the run wrote dead letters
    counts.stale("p")  # consumed, purged or replayed through the API
    assert counts._due("p", written=3)
    counts._refresh("p", written=3)
    assert not counts._due("p", written=3)
    monkeypatch.setattr(dlq_pending, "MAX_AGE_S", -1.0)
    assert counts._due("p", written=3)  # and after a while in any case
    assert asked == ["p", "p"]


def test_state_size_sums_the_dedup_partitions_on_disk_and_spark_state(tmp_path: Path) -> None:
    size = StateSize(tmp_path)
    assert size.report(None) == {
        "dedup_disk_bytes": None,
        "spark_state_rows": 0,
        "spark_state_memory_bytes": 0,
    }
    for partition, data in (("p0", b"x" * 100), ("p1", b"y" * 50)):
        directory = tmp_path / "dedup" / "events" / partition
        directory.mkdir(parents=True)
        (directory / "000001.sst").write_bytes(data)
    progress = {"stateOperators": [{"numRowsTotal": 5, "memoryUsedBytes": 900}, {}]}
    assert size.report(progress) == {
        "dedup_disk_bytes": 150,
        "spark_state_rows": 5,
        "spark_state_memory_bytes": 900,
    }
