"""The GlassFlow import as a whole: example files, versions, YAML output, notes, the name."""

from __future__ import annotations

from datetime import timedelta

import pytest
import yaml

from streamsift.config import ConfigError, Pipeline, load_pipeline, parse_pipeline
from streamsift.config.glassflow import (
    convert_glassflow,
    glassflow_to_yaml,
    glassflow_version,
    import_glassflow,
)
from streamsift.config.loader import is_glassflow

from .documents import (
    DELETE,
    EXAMPLES,
    MAPPING,
    VERSIONS,
    changed,
    example,
    names_the_field,
    problems,
)


@pytest.mark.parametrize("version", VERSIONS)
def test_example_converts_field_by_field(version: str) -> None:
    doc = convert_glassflow(example(version))
    source = doc["source"]
    assert doc["version"] == 1
    assert doc["name"] == "users-dedup-demo"
    assert source["bootstrap_servers"] == "127.0.0.1:9092"
    assert source["topic"] == "users"
    assert source["start_from"] == "earliest"
    assert "security" not in source  # PLAINTEXT with NO_AUTH: our defaults
    assert source["schema"] == {
        "fields": [
            {"name": "event_id", "type": "string"},
            {"name": "user.id", "type": "string"},
            {"name": "user.name", "type": "string"},
            {"name": "user.email", "type": "string"},
            {"name": "created_at", "type": "string"},
            {"name": "tags", "type": "array"},
        ]
    }
    assert "event_time" not in source["schema"]  # GlassFlow dedups on processing time
    assert doc["dedup"] == {"key": "event_id", "time_window": "1h"}
    assert doc["sink"] == {
        "clickhouse": {
            "host": "127.0.0.1",
            "port": 8123,
            "database": "default",
            "username": "default",
            "password": "secret",  # base64 "c2VjcmV0" in v1/v2, plain in v3
        },
        "table": "users_dedup",
        "create_table": False,
        "mapping": MAPPING,
        "max_batch_size": 1000,
        "max_delay_time": "10s",
    }


@pytest.mark.parametrize("version", VERSIONS)
def test_example_validates_as_a_pipeline(version: str) -> None:
    pipeline = load_pipeline(EXAMPLES / f"glassflow-dedup-{version}.json")
    assert isinstance(pipeline, Pipeline)
    assert pipeline.dedup is not None
    assert pipeline.dedup.key == ("event_id",)
    assert pipeline.dedup.time_window == timedelta(hours=1)
    assert pipeline.primary_source.schema_.event_time is None
    assert pipeline.sink.clickhouse.password.get_secret_value() == "secret"
    assert pipeline.sink.clickhouse.port == 8123
    assert not pipeline.sink.clickhouse.embedded
    assert pipeline.sink.create_table is False
    assert [(m.field, m.column, m.type) for m in pipeline.sink.mapping] == [
        (m["field"], m["column"], m["type"]) for m in MAPPING
    ]


def test_all_versions_give_the_same_pipeline_apart_from_the_source_name() -> None:
    v3 = convert_glassflow(example("v3"))
    assert v3["source"].pop("name") == "users"  # v3 source_id
    assert convert_glassflow(example("v1")) == convert_glassflow(example("v2")) == v3


@pytest.mark.parametrize(("version", "expected"), [("v1", "v1"), ("v2", "v2"), ("v3", "v3")])
def test_version_detection(version: str, expected: str) -> None:
    doc = example(version)
    assert is_glassflow(doc)
    assert glassflow_version(doc) == expected


@pytest.mark.parametrize(
    ("version", "detected"),
    [("2.0.0", "v2"), ("v2", "v2"), ("v3", "v3"), (" V3 ", "v3"), ("", "v3"), (None, "v3")],
)
def test_version_values(version: object, detected: str) -> None:
    doc = example("v3") if detected == "v3" else example("v2")
    if version is None:
        del doc["version"]
    else:
        doc["version"] = version
    assert glassflow_version(doc) == detected
    assert convert_glassflow(doc)["dedup"] == {"key": "event_id", "time_window": "1h"}


def test_unknown_version_is_refused() -> None:
    assert problems(changed(example("v3"), "version", "v4")) == [
        "version: unsupported GlassFlow pipeline version 'v4'; "
        'expected "v3", "v2" or "2.0.0" (v1 files have no version)'
    ]


def test_create_table_is_off_by_default_and_overridable() -> None:
    assert convert_glassflow(example("v3"))["sink"]["create_table"] is False
    assert convert_glassflow(example("v3"), create_table=True)["sink"]["create_table"] is True


def test_yaml_round_trips_with_notes_as_comments() -> None:
    text = glassflow_to_yaml(example("v1"))
    assert text.startswith(
        "# streamsift pipeline imported from GlassFlow pipeline 'users-dedup-demo' (format v1)."
    )
    assert "# Field reference: docs/configuration.md" in text
    assert "processing time" in text
    assert yaml.safe_load(text) == convert_glassflow(example("v1"))
    assert "password: secret" in text  # the user's own file: secrets as given (decoded)
    assert parse_pipeline(yaml.safe_load(text)).name == "users-dedup-demo"


def test_import_notes() -> None:
    result = import_glassflow(example("v3"))
    assert result.version == "v3"
    assert result.pipeline_id == "users-dedup-demo"
    notes = "\n".join(result.notes)
    assert "GlassFlow deduplicates on processing time" in notes
    assert "Kafka timestamp" in notes
    assert "GlassFlow's port 9000 is the native protocol port" in notes
    assert "create_table is false" in notes
    assert "'metadata' has no streamsift equivalent" in notes


def test_loader_converts_glassflow_documents() -> None:
    pipeline = parse_pipeline(example("v2"))
    assert pipeline.name == "users-dedup-demo"
    assert pipeline.sink.max_batch_size == 1000
    assert pipeline.sink.max_delay_time == timedelta(seconds=10)


def test_pipeline_id_is_sanitised_into_a_name() -> None:
    result = import_glassflow(changed(example("v3"), "pipeline_id", " users dedup (prod) "))
    assert result.document["name"] == "users-dedup-prod"
    assert any("became the name 'users-dedup-prod'" in n for n in result.notes)


def test_problems_from_our_model_are_reported_in_glassflow_paths() -> None:
    doc = changed(example("v3"), "sources[0].schema_fields[1].name", "@user")
    doc = changed(doc, "sink.mapping[1].name", "@user")
    assert problems(doc) == [
        "sources[0].schema_fields[1].name: '@user' is not a field path: use names of letters, digits "
        "and _ joined by dots, e.g. user.id"
    ]


def test_several_problems_are_reported_together() -> None:
    doc = changed(example("v3"), "transforms[0].config.key", "id")
    doc = changed(doc, "sink.connection_params.host", "")
    doc = changed(doc, "sources[0].consumer_group_initial_offset", "middle")
    assert problems(doc) == [
        "sources[0].consumer_group_initial_offset: invalid consumer_group_initial_offset; allowed values: earliest or latest",
        "transforms[0].config.key: dedup key 'id' not found in schema_fields for source 'users'",
        "sink.connection_params.host: clickhouse host cannot be empty",
    ]


def test_not_an_object() -> None:
    with pytest.raises(ConfigError, match="a GlassFlow pipeline must be a JSON object"):
        convert_glassflow([])  # type: ignore[arg-type]


# (format, path, value, the problem reported) on the pipeline id, each on the version's example.
INVALID = [
    ("v3", "pipeline_id", "abc", "pipeline_id: pipeline ID must be at least 5 characters"),
    ("v3", "pipeline_id", DELETE, "pipeline_id: required field is missing"),
]


test_invalid_glassflow_document_names_the_glassflow_field = names_the_field(INVALID)
