"""Big and hostile pipeline documents: linear validation, a size limit, Kafka's topic rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamsift.config import ConfigError, load_pipeline, parse_pipeline
from streamsift.config.loader import MAX_DOCUMENT_BYTES
from support.pipeline_docs import pipeline_doc


def wide_doc(n_fields: int, topic: str = "events") -> dict:
    fields = [{"name": "id", "type": "string"}]
    fields += [{"name": f"group{i % 100}.f{i}", "type": "int"} for i in range(n_fields)]
    return pipeline_doc(
        name="wide",
        topic=topic,
        fields=fields,
        dedup={"key": "id", "time_window": "1h"},
        table="wide",
        mapping=[
            {"field": f["name"], "column": f["name"].replace(".", "_"), "type": "Int64"}
            for f in fields[1:]
        ]
        + [{"field": "id", "column": "id", "type": "String"}],
    )


@pytest.mark.timeout(120)
def test_fifty_thousand_fields_validate(tmp_path: Path) -> None:
    # validation is linear in the number of fields: the quadratic checks of before took
    # minutes here (8,000 fields 7 s, 75,000 fields 9 min), so this guard fails on them
    pipeline = parse_pipeline(wide_doc(50_000))
    assert len(pipeline.primary_source.schema_.fields) == 50_001
    assert pipeline.primary_source.schema_.field("group7.f49907") is not None


def test_repeated_field_and_nested_clash_still_found_in_wide_documents() -> None:
    doc = wide_doc(5_000)
    doc["source"]["schema"]["fields"].append({"name": "group3", "type": "string"})
    with pytest.raises(ConfigError, match="field 'group3' is an object holding field 'group3.f3'"):
        parse_pipeline(doc)
    doc = wide_doc(5_000)
    doc["source"]["schema"]["fields"].append({"name": "group3.f3", "type": "int"})
    with pytest.raises(ConfigError, match="repeated: group3.f3"):
        parse_pipeline(doc)


def test_oversized_document_is_refused_with_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    doc = wide_doc(10)
    doc["description"] = "x" * (MAX_DOCUMENT_BYTES + 10)
    path.write_text(json.dumps(doc))
    with pytest.raises(ConfigError) as err:
        load_pipeline(path)
    assert err.value.problems == [
        "the file is larger than 4 MiB, the limit for a pipeline document"
    ]


def test_document_that_is_not_utf8_says_so(tmp_path: Path) -> None:
    path = tmp_path / "latin1.yaml"
    path.write_bytes("name: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8 text: byte 9 cannot be decoded"):
        load_pipeline(path)


@pytest.mark.parametrize(
    ("topic", "message"),
    [
        ("t" * 250, "is longer than Kafka's 249 characters"),
        ("orders/eu", "has characters Kafka does not allow ('/')"),
        ("my topic!", "has characters Kafka does not allow (' !')"),
        ("..", "'..' is not a valid Kafka topic name"),
        ("ünïcode", "has characters Kafka does not allow ('ïü')"),
    ],
)
def test_topic_names_follow_kafkas_rules(topic: str, message: str) -> None:
    with pytest.raises(ConfigError) as err:
        parse_pipeline(wide_doc(1, topic=topic))
    [problem] = err.value.problems
    assert problem.startswith("source.topic: ")
    assert message in problem


def test_a_huge_topic_name_is_not_echoed_whole() -> None:
    with pytest.raises(ConfigError) as err:
        parse_pipeline(wide_doc(1, topic="a" * 5_000_000))
    [problem] = err.value.problems
    assert len(problem) < 200
    assert "(5,000,000 characters)" in problem


def test_legal_topic_names_pass() -> None:
    for topic in ("orders", "orders.v2", "orders_eu-1", "t" * 249):
        assert parse_pipeline(wide_doc(1, topic=topic)).primary_source.topic == topic
