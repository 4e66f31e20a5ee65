"""`source.format`, `source.schema_registry` and `schema.from_registry` as config and runtime
check them: errors that name the field, the password kept secret, a masked document (the
service's) validated without the registry and never sent to it, and a registry that does
not answer told apart from a bad message."""

from __future__ import annotations

import pytest
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.secrets import secret_values
from streamsift.config.types import FieldType
from streamsift.embedded.broker import free_port
from streamsift.engine.registry_fields import parse_resolved, require_fields
from streamsift.sources.schema_registry import (
    RegistryClient,
    RegistryUnavailable,
    WriterSchemas,
    clear_cache,
)
from streamsift.transforms.parse import FieldSpec
from streamsift.transforms.registry_decode import RegistryParser
from support.pipeline_docs import fields, mapping, pipeline_doc
from support.schema_registry import build_registry_app
from support.servers import ServerThread

AVSC = '{"type":"record","name":"E","fields":[{"name":"id","type":"string"},{"name":"n","type":"long"}]}'
SECRET = "sr-Secret-Kk31"


def doc(source: dict, schema: dict | None = None) -> dict:
    d = pipeline_doc(
        topic="events",
        fields=fields(("id", "string")),
        mapping=mapping(("id", "id", "String")),
        source=source,
    )
    if schema is not None:
        d["source"]["schema"] = schema
    return d


def problem(d: dict) -> str:
    """The problems runtime finds (with the registry); config's alone come first."""
    with pytest.raises(ConfigError) as err:
        parse_pipeline(d)
        parse_resolved(d)
    return "; ".join(err.value.problems)


@pytest.mark.parametrize(
    "source, schema, expected",
    [
        ({"format": "avro"}, None, "source: schema_registry: required with format avro"),
        (
            {"schema_registry": {"url": "http://r:8081"}},
            None,
            "source: schema_registry: used only with format avro or protobuf",
        ),
        (
            {"format": "protobuf", "schema_registry": {"url": "ftp://r"}},
            None,
            "source.schema_registry.url: 'ftp://r' is not an http(s) URL",
        ),
        (
            {"format": "avro", "schema_registry": {"url": "http://u:p@r:8081"}},
            None,
            "source.schema_registry.url: put the credentials in username and password",
        ),
        (
            {"format": "avro", "schema_registry": {"url": "http://r", "password": "x"}},
            None,
            "source.schema_registry: username is required with a password",
        ),
        ({"format": "xml"}, None, "source.format: Input should be 'json', 'avro' or 'protobuf'"),
        (
            {},
            {"from_registry": {}},
            "source: schema.from_registry: needs format avro or protobuf",
        ),
        (
            {"format": "avro", "schema_registry": {"url": "http://r"}},
            {"from_registry": {}, "fields": fields(("id", "string"))},
            "source.schema: list the fields or take them from_registry, not both",
        ),
    ],
)
def test_bad_settings_name_the_field(source, schema, expected) -> None:
    assert problem(doc(source, schema)).startswith(expected)


def test_from_registry_with_auth_and_the_masked_document(tmp_path) -> None:
    clear_cache()
    with ServerThread(build_registry_app(username="svc", password=SECRET)) as server:
        SchemaRegistryClient(
            {"url": server.url, "basic.auth.user.info": f"svc:{SECRET}"}
        ).register_schema("events-value", Schema(AVSC, "AVRO"))
        registry = {"url": server.url, "username": "svc", "password": SECRET}
        d = doc({"format": "avro", "schema_registry": registry}, {"from_registry": True})
        pending = parse_pipeline(d)  # config alone: the fields are pending, nothing asked
        assert pending.fields_pending and pending.primary_source.schema_.fields == ()
        with pytest.raises(ConfigError, match="from_registry fields were not fetched"):
            require_fields(pending)  # never run so
        pipeline = parse_resolved(d)
        assert [(f.name, f.type) for f in pipeline.primary_source.schema_.fields] == [
            ("id", FieldType.STRING),
            ("n", FieldType.INT),
        ]
        assert SECRET in secret_values(pipeline)  # masked in every DLQ error text
        assert SECRET not in repr(pipeline)
        # the service shows documents with "***" for secrets: config reads them as written,
        # and runtime refuses to send the masked password to the registry
        masked = doc(
            {"format": "avro", "schema_registry": {**registry, "password": "***"}},
            {"from_registry": True},
        )
        assert parse_pipeline(masked).fields_pending
        text = problem(masked)
        assert text.startswith("source.schema_registry.password: masked (***)")
        wrong = doc(
            {"format": "avro", "schema_registry": {**registry, "password": "nope"}},
            {"from_registry": True},
        )
        text = problem(wrong)
        assert text.startswith("source.schema.from_registry: schema registry") and "401" in text
        assert SECRET not in text


def test_a_registry_that_does_not_answer_is_transient_not_a_dead_letter() -> None:
    clear_cache()
    url = f"http://127.0.0.1:{free_port()}"
    d = doc({"format": "avro", "schema_registry": {"url": url}}, {"from_registry": {}})
    with pytest.raises(RegistryUnavailable) as caught:  # not the document's fault: retried
        parse_resolved(d)
    assert caught.value.message.startswith("source.schema.from_registry: ")
    assert "did not answer GET /subjects/events-value/versions/latest" in caught.value.message
    parser = RegistryParser(
        [FieldSpec("id", "id", FieldType.STRING)], "avro", WriterSchemas(RegistryClient(url))
    )
    with pytest.raises(RegistryUnavailable):
        parser.parse([b"\x00\x00\x00\x00\x01\x02ab"])
