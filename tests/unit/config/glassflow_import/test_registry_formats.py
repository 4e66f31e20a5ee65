"""GlassFlow v3 sources with `format: avro | protobuf` and `schema_registry` import: the
registry's login becomes ours (api_secret a secret), the fields come from the Avro seed or
(runtime, before the pure conversion) the registry's Protobuf schema; inline mode without a
registry is refused by name."""

from __future__ import annotations

import copy
import json

import pytest

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.glassflow import convert_glassflow
from streamsift.engine.registry_fields import glassflow_with_registry_fields, parse_resolved
from streamsift.sources.schema_registry import clear_cache
from support.registry_messages import (
    avro_order_schema,
    proto_order_class,
    proto_serializer,
    serialize,
)

from .documents import changed, example, problems


def with_format(fmt: str, registry: dict | None, schema: object = None) -> dict:
    doc = copy.deepcopy(example("v3"))
    src = doc["sources"][0]
    src.pop("schema_fields", None)
    src["format"] = fmt
    if registry is not None:
        src["schema_registry"] = registry
    if schema is not None:
        src["schema"] = schema
    doc["transforms"] = []
    doc["sink"]["mapping"] = [
        {"name": "id", "column_name": "id", "column_type": "UUID"},
        {"name": "customer.address.city", "column_name": "city", "column_type": "String"},
        {"name": "created", "column_name": "created", "column_type": "DateTime64(3)"},
    ]
    return doc


def test_avro_with_registry_and_seed_imports_with_its_fields() -> None:
    registry = {"url": "http://registry:8081", "api_key": "KEY", "api_secret": "SECRET"}
    doc = with_format("avro", registry, avro_order_schema())
    ours = convert_glassflow(doc)
    src = ours["source"]
    assert src["format"] == "avro"
    assert src["schema_registry"] == {
        "url": "http://registry:8081",
        "username": "KEY",
        "password": "SECRET",
    }
    names = [f["name"] for f in src["schema"]["fields"]]
    assert names[:4] == ["id", "qty", "price", "created"] and "customer.address.city" in names
    pipeline = parse_pipeline(doc)
    assert "SECRET" not in repr(pipeline) and "SECRET" not in str(pipeline.model_dump())


def test_protobuf_with_registry_takes_fields_from_the_registry(schema_registry) -> None:
    clear_cache()
    cls = proto_order_class()
    serialize(proto_serializer(schema_registry.url, cls), "gf-proto", cls(id="x"))
    doc = with_format("protobuf", {"url": schema_registry.url}, {"proto": "...", "name": "Order"})
    doc["sources"][0]["topic"] = "gf-proto"
    doc["sink"]["mapping"] = [
        {"name": "id", "column_name": "id", "column_type": "String"},
        {"name": "address.city", "column_name": "city", "column_type": "String"},
    ]
    with pytest.raises(ConfigError) as err:  # config alone does not ask the registry
        convert_glassflow(doc)
    assert err.value.problems[0].startswith("sources[0].schema_fields: list the fields, or give")
    ours = convert_glassflow(glassflow_with_registry_fields(doc))
    fields = {f["name"]: f["type"] for f in ours["source"]["schema"]["fields"]}
    assert fields["created"] == "timestamp" and fields["address.zip"] == "int"
    assert parse_resolved(doc).primary_source.format.value == "protobuf"


def test_inline_avro_without_registry_and_unknown_formats_are_refused() -> None:
    inline = with_format("avro", None, avro_order_schema())
    assert problems(inline)[0].startswith(
        "sources[0].schema_registry: streamsift reads avro messages with schemas from a "
        "Confluent-compatible schema registry"
    )
    odd = changed(example("v3"), "sources[0].format", "thrift")
    assert problems(odd)[0].startswith("sources[0].format: 'thrift' messages are not supported")
    json.dumps(inline)  # the documents stay plain JSON


def test_an_avro_pipeline_exports_back_with_its_format_and_registry() -> None:
    from streamsift.config.glassflow.export import export_v3

    registry = {"url": "http://registry:8081", "api_key": "KEY", "api_secret": "SECRET"}
    pipeline = parse_pipeline(with_format("avro", registry, avro_order_schema()))
    src = export_v3(pipeline).document["sources"][0]
    assert (src["format"], src["schema_registry"]) == ("avro", registry)
    again = parse_pipeline(export_v3(pipeline).document).primary_source
    assert (
        again.format.value == "avro"
        and again.schema_registry == pipeline.primary_source.schema_registry
    )
    # (timestamps export as strings: GlassFlow's v3 has no timestamp type, as for JSON sources)
    assert [f.name for f in again.schema_.fields] == [
        f.name for f in pipeline.primary_source.schema_.fields
    ]
