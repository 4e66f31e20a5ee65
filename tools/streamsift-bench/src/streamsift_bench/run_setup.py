"""What a bench run is set up with: the pipeline document the streamsift runs (and the
no-Spark run) use, and the ClickHouse HTTP endpoint of server mode (the streamsift runs and
raw_vec_server write to one of their own, so both pay for it)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from streamsift.sample_data.schema import JOIN_FIELDS, LOAD_FIELDS, LOAD_MAPPING
from streamsift.spark_host import processes
from streamsift_bench.common import JOIN_MAPPING, JOIN_OUTPUT, JOIN_TABLE

TABLE = "events"


def pipeline_doc(spec: dict[str, Any], server_port: int | None = None) -> dict[str, Any]:
    """The pipeline a scenario runs: the load generator's events, into embedded ClickHouse
    or, given `server_port`, the ClickHouse HTTP endpoint listening there."""
    work = Path(spec["work_dir"])
    clickhouse: dict[str, Any] = {"path": str(work / "clickhouse")}
    if server_port is not None:
        clickhouse = {"host": "127.0.0.1", "port": server_port}
    doc: dict[str, Any] = {
        "name": spec["name"],
        "source": {
            "bootstrap_servers": spec["bootstrap_servers"],
            "topic": spec["topic"],
            "schema": {"fields": LOAD_FIELDS, "event_time": "created_at"},
        },
        "sink": {
            "clickhouse": clickhouse,
            "table": TABLE,
            "create_table": True,
            "order_by": ["event_id"],
            "mapping": LOAD_MAPPING,
            "max_delay_time": spec.get("max_delay", "1s"),
        },
        "runtime": {
            "checkpoint_dir": str(work / "checkpoint"),
            "max_rows_per_batch": spec.get("max_rows_per_batch"),
            "state_store": spec.get("state_store", "rocksdb"),
            "spark_conf": spec.get("spark_conf") or {},
        },
    }
    if spec.get("master"):  # bench --master: a cluster run
        doc["runtime"]["master"] = spec["master"]
    if spec.get("consumer_group"):
        doc["source"]["consumer_group"] = spec["consumer_group"]
    if spec["dedup"]:
        doc["dedup"] = {"key": "event_id", "time_window": spec.get("window", "1h")}
    if spec.get("join"):
        return join_pipeline_doc(doc, spec)
    return doc


def join_pipeline_doc(doc: dict[str, Any], spec: dict[str, Any]) -> dict[str, Any]:
    """The dedup-join scenario: the events (left) and the profile events (right), each
    deduplicated on its event id, inner-joined on the user id into `JOIN_TABLE`."""
    join = spec["join"]
    dedup = {"key": "event_id", "time_window": spec.get("window", "1h")}
    left = {**doc.pop("source"), "name": "events", "dedup": dedup}
    right = {
        **left,
        "name": "profiles",
        "topic": join["topic"],
        "schema": {"fields": JOIN_FIELDS, "event_time": "updated_at"},
    }
    doc.pop("dedup", None)
    doc["sources"] = [left, right]
    doc["join"] = {
        "type": "inner",
        "mode": join.get("mode", "interval"),
        "left": {"source": "events", "key": "user.id", "time_window": join["left_window"]},
        "right": {"source": "profiles", "key": "user.id", "time_window": join["right_window"]},
        "output": [{"from": side, "field": field, "as": name} for side, field, name in JOIN_OUTPUT],
    }
    doc["sink"].update(
        table=JOIN_TABLE, order_by=["event_id", "profile_event_id"], mapping=JOIN_MAPPING
    )
    return doc


@contextmanager
def clickhouse_endpoint(spec: dict[str, Any]) -> Iterator[int | None]:
    """With `spec["clickhouse"]` "server": the port of a chdb-backed ClickHouse HTTP endpoint
    on the run's ClickHouse directory, stopped afterwards; else None (embedded chdb).

    A separate process, as a ClickHouse server would be; a child of this one, so the
    runner's process-tree measurements count it (role `clickhouse`).
    """
    if spec.get("clickhouse") != "server":
        yield None
        return
    from streamsift.embedded.clickhouse_server import spawn_server

    server, port = spawn_server(Path(spec["work_dir"]) / "clickhouse")
    try:
        yield port
    finally:
        processes.stop(server, 30)
