"""Pure pieces of the service core: what an edit may change, secrets kept through an edit,
secrets found in a join document, and the worker's lag per partition."""

from __future__ import annotations

import copy
from typing import Any

from streamsift.config import parse_pipeline
from streamsift.config.secrets import secret_paths
from streamsift.engine.progress import lag_by_partition
from streamsift.service.edits import keep_masked_secrets, state_changes
from streamsift.service.endpoints import served_document

FIELDS = [{"name": "id", "type": "string"}, {"name": "user", "type": "string"}]


def single(**overrides: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "name": "p",
        "source": {
            "bootstrap_servers": "k:9092",
            "topic": "events",
            "schema": {"fields": FIELDS},
        },
        "dedup": {"key": "id", "time_window": "1h"},
        "sink": {
            "clickhouse": {"path": "/tmp/ch", "password": "pw-1"},
            "table": "t",
            "mapping": [{"field": "id", "column": "id", "type": "String"}],
        },
    }
    doc.update(overrides)
    return doc


def test_a_change_of_topic_or_dedup_touches_the_state_a_table_change_does_not() -> None:
    base = parse_pipeline(single())
    other_table = single()
    other_table["sink"] = {**other_table["sink"], "table": "t2"}
    assert state_changes(base, parse_pipeline(other_table)) == []
    moved = single()
    moved["source"] = {**moved["source"], "topic": "events2"}
    assert state_changes(base, parse_pipeline(moved)) == ["source topics ['events'] -> ['events2']"]
    rekeyed = single(dedup={"key": "user", "time_window": "1h"})
    assert state_changes(base, parse_pipeline(rekeyed)) == [
        "dedup first on id within 1h -> first on user within 1h"
    ]
    assert state_changes(base, parse_pipeline(single(dedup=None))) == [
        "dedup first on id within 1h -> none"
    ]


def test_a_secret_sent_back_as_stars_keeps_its_stored_value() -> None:
    current = single()
    sent = copy.deepcopy(current)
    sent["sink"]["clickhouse"]["password"] = "***"
    kept = keep_masked_secrets(sent, parse_pipeline(sent), current, parse_pipeline(current))
    assert kept["sink"]["clickhouse"]["password"] == "pw-1"
    sent["sink"]["clickhouse"]["password"] = "new"
    kept = keep_masked_secrets(sent, parse_pipeline(sent), current, parse_pipeline(current))
    assert kept["sink"]["clickhouse"]["password"] == "new"


def test_secrets_of_both_sources_of_a_join_are_found() -> None:
    security = {
        "protocol": "SASL_SSL",
        "mechanism": "SCRAM-SHA-256",
        "username": "u",
        "password": "kp",
    }
    source = {"bootstrap_servers": "k:9092", "schema": {"fields": FIELDS}, "security": security}
    doc = {
        "name": "j",
        "sources": [{**source, "topic": "a"}, {**source, "topic": "b"}],
        "join": {
            "left": {"source": "a", "key": "user", "time_window": "1h"},
            "right": {"source": "b", "key": "user", "time_window": "1h"},
            "output": [{"from": "left", "field": "id"}],
        },
        "sink": {
            "clickhouse": {"host": "h", "port": 8123, "password": "cp"},
            "table": "t",
            "mapping": [{"field": "id", "column": "id", "type": "String"}],
        },
    }
    assert sorted(secret_paths(parse_pipeline(doc), doc), key=str) == sorted(
        [
            ("sink", "clickhouse", "password"),
            ("sources", 0, "security", "password"),
            ("sources", 1, "security", "password"),
        ],
        key=str,
    )


def test_an_embedded_sink_is_served_by_host_and_port() -> None:
    served = served_document(single(), "127.0.0.1", 9000)
    conn = served["sink"]["clickhouse"]
    assert conn == {"host": "127.0.0.1", "port": 9000, "secure": False, "password": "pw-1"}
    assert parse_pipeline(served).sink.clickhouse.embedded is False


def test_lag_per_partition_from_a_progress_report() -> None:
    progress = {
        "sources": [
            {
                "endOffset": '{"events/0": 10, "events/1": 7}',
                "latestOffset": {"events/0": 12, "events/1": 7, "events/2": 3},
            }
        ]
    }
    assert lag_by_partition(progress) == {"events/0": 2, "events/1": 0, "events/2": 0}
    assert lag_by_partition({}) == {}


def _join(mode: str, **right: Any) -> Any:
    from support.pipeline_docs import fields, join_doc, join_source, mapping

    orders = join_source("orders", "orders", fields(("order_id", "string"), ("user_id", "string")))
    users = join_source("users", "users", fields(("id", "string"), ("name", "string")))
    sides: dict[str, Any] = {
        "left": {"source": "orders", "key": "user_id", "time_window": "5m"},
        "right": {"source": "users", "key": "id", **right},
    }
    return parse_pipeline(
        join_doc(
            name="j",
            sources=[orders, users],
            join={"mode": mode, **sides, "output": [{"from": "left", "field": "order_id"}]},
            table="t",
            mapping=mapping(("order_id", "order_id", "String")),
        )
    )


def test_a_join_edit_names_its_mode_and_a_table_sides_ttl_and_a_new_mode_needs_a_reset() -> None:
    table = _join("table", ttl="1h")
    assert state_changes(table, table) == []
    longer = state_changes(table, _join("table", ttl="2h"))
    assert longer == [
        "join keys or windows table: user_id within 5m = id within no window, "
        "ttl 1h -> table: user_id within 5m = id within no window, ttl 2h"
    ]
    latest = _join("latest", time_window="1h")
    (change,) = state_changes(latest, _join("interval", time_window="1h"))
    assert change.startswith("join keys or windows latest: ") and "-> interval: " in change
