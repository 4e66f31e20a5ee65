"""The Avro example: its hand-listed fields are exactly what its .avsc gives, and the same
file with `schema.from_registry` validates against a registry holding that schema, with
`streamsift validate` printing the derived fields."""

from __future__ import annotations

import json

import yaml
from confluent_kafka.schema_registry import Schema, SchemaRegistryClient

from streamsift.cli.main import main
from streamsift.config import load_pipeline
from streamsift.config.registry_schemas import avro_fields
from streamsift.sources.schema_registry import clear_cache
from support.paths import EXAMPLES


def test_example_fields_are_the_avsc_fields() -> None:
    pipeline = load_pipeline(EXAMPLES / "orders-avro.yaml")
    avsc = json.loads((EXAMPLES / "orders-avro.avsc").read_text())
    listed = [(f.name, f.type) for f in pipeline.primary_source.schema_.fields]
    assert listed == avro_fields(avsc)
    assert pipeline.primary_source.format.value == "avro"


def test_example_with_fields_from_the_registry_validates(schema_registry, tmp_path, capsys):
    clear_cache()
    avsc = (EXAMPLES / "orders-avro.avsc").read_text()
    SchemaRegistryClient({"url": schema_registry.url}).register_schema(
        "example-orders-value", Schema(avsc, "AVRO")
    )
    doc = yaml.safe_load((EXAMPLES / "orders-avro.yaml").read_text())
    doc["source"]["schema_registry"]["url"] = schema_registry.url
    doc["source"]["schema"].pop("fields")
    doc["source"]["schema"]["from_registry"] = {"subject": "example-orders-value"}
    path = tmp_path / "orders.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "ok: orders-avro: orders -> orders, dedup on order_id within 1h"
    assert out[1] == "orders: avro fields from registry subject example-orders-value (latest):"
    assert out[2:] == [f"  {n}: {t.value}" for n, t in avro_fields(json.loads(avsc))]


def test_unknown_subject_is_a_configuration_error_naming_the_field(schema_registry, tmp_path):
    doc = yaml.safe_load((EXAMPLES / "orders-avro.yaml").read_text())
    doc["source"]["schema_registry"]["url"] = schema_registry.url
    doc["source"]["schema"] = {"from_registry": {"subject": "no-such-subject"}}
    path = tmp_path / "orders.yaml"
    path.write_text(yaml.safe_dump(doc))
    assert main(["validate", str(path)]) == 2
