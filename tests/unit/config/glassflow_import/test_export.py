"""Export of our pipelines as GlassFlow v3 JSON: round trips through the importer, GlassFlow's
own SDK model accepts every export, and what v3 cannot express is named in the notes."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest
import yaml

from streamsift.config import parse_pipeline
from streamsift.config.glassflow import convert_glassflow
from streamsift.config.glassflow.export import export_v3, v3_column_type
from support.paths import EXAMPLES


@pytest.fixture(scope="module")
def sdk_model(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """GlassFlow's SDK v3 model (its import writes ~/.glassflow: HOME is a temp dir then)."""
    home = os.environ.get("HOME")
    os.environ["HOME"] = str(tmp_path_factory.mktemp("home"))
    os.environ["GF_USAGESTATS_ENABLED"] = "false"
    try:
        from glassflow.etl.models import PipelineConfig
    finally:
        if home is not None:
            os.environ["HOME"] = home
    return PipelineConfig


def glassflow_example(name: str) -> dict[str, Any]:
    return json.loads((EXAMPLES / name).read_text())


@pytest.mark.parametrize("name", ["glassflow-dedup-v3.json", "glassflow-join-v3.json"])
def test_a_glassflow_pipeline_exports_to_what_imports_the_same(name: str, sdk_model: Any) -> None:
    ours = convert_glassflow(glassflow_example(name))
    exported = export_v3(parse_pipeline(ours))
    sdk_model.model_validate(exported.document)
    again = convert_glassflow(exported.document)
    assert parse_pipeline(again) == parse_pipeline(ours)
    assert exported.document["pipeline_id"] == ours["name"]


def test_the_join_keeps_its_sides_output_and_per_source_dedup(sdk_model: Any) -> None:
    ours = convert_glassflow(glassflow_example("glassflow-join-v3.json"))
    doc = export_v3(parse_pipeline(ours)).document
    assert doc["join"]["left_source"] == {
        "source_id": "orders",
        "key": "user_id",
        "time_window": "1h",
    }
    assert doc["join"]["output_fields"][2] == {
        "source_id": "users",
        "name": "user.name",
        "output_name": "user_name",
    }
    assert doc["transforms"] == [
        {"type": "dedup", "source_id": "orders", "config": {"key": "order_id", "time_window": "1h"}}
    ]
    assert [s["source_id"] for s in doc["sources"]] == ["orders", "users"]


def test_a_native_pipeline_exports_what_v3_can_say_and_names_the_rest(sdk_model: Any) -> None:
    doc = yaml.safe_load((EXAMPLES / "users-dedup.yaml").read_text())
    doc["dedup"] = {"mode": "exact", "time_window": "10m"}
    doc["filter"] = "tags IS NOT NULL"
    result = export_v3(parse_pipeline(doc), display_name="Users")
    sdk_config = sdk_model.model_validate(result.document)
    assert sdk_config.name == "Users"
    assert "transforms" not in result.document
    notes = "\n".join(result.notes)
    for lost in ("event_time", "mode: exact", "filter", "DateTime64", "embedded", "dlq.table"):
        assert lost in notes, lost
    created_at = result.document["sink"]["mapping"][-1]
    assert created_at == {
        "name": "created_at",
        "column_name": "created_at",
        "column_type": "DateTime64",
    }
    fields = {f["name"]: f["type"] for f in result.document["sources"][0]["schema_fields"]}
    assert fields["created_at"] == "string" and fields["tags"] == "array"
    assert result.document["sink"]["connection_params"]["host"] == "embedded"


def test_a_left_join_and_a_composite_key_are_named_as_losses() -> None:
    ours = convert_glassflow(glassflow_example("glassflow-join-v3.json"))
    ours["join"]["type"] = "left"
    notes = "\n".join(export_v3(parse_pipeline(ours)).notes)
    assert "left join" in notes


def test_a_latest_join_exports_losslessly_and_an_interval_join_is_named_as_a_loss() -> None:
    ours = convert_glassflow(glassflow_example("glassflow-join-v3.json"))
    assert ours["join"]["mode"] == "latest"
    exported = export_v3(parse_pipeline(ours))
    assert not [n for n in exported.notes if n.startswith("join")]
    again = parse_pipeline(convert_glassflow(exported.document))
    assert again.join == parse_pipeline(ours).join
    ours["join"]["mode"] = "interval"
    notes = "\n".join(export_v3(parse_pipeline(ours)).notes)
    assert "join.mode: GlassFlow joins each left record once" in notes


def test_a_table_join_is_named_as_not_expressible(sdk_model: Any) -> None:
    ours = convert_glassflow(glassflow_example("glassflow-join-v3.json"))
    ours["join"]["mode"] = "table"
    ours["join"]["right"].pop("time_window")
    ours["join"]["right"]["ttl"] = "1d"
    exported = export_v3(parse_pipeline(ours))
    assert "join.mode: table has no GlassFlow v3 form" in "\n".join(exported.notes)
    assert exported.document["join"]["right_source"]["time_window"] == "1d"
    sdk_model.model_validate(exported.document)


@pytest.mark.parametrize(
    ("ours", "v3", "lost"),
    [
        ("String", "String", False),
        ("Array(String)", "Array(String)", False),
        ("LowCardinality(String)", "LowCardinality(String)", False),
        ("Nullable(String)", "String", True),
        ("DateTime64(3, 'UTC')", "DateTime64", True),
        ("FixedString(16)", "FixedString", True),
        ("Decimal(18, 4)", "String", True),
        ("Map(String, String)", "Map(String, String)", False),
    ],
)
def test_column_types(ours: str, v3: str, lost: bool) -> None:
    column_type, loss = v3_column_type(ours)
    assert column_type == v3
    assert (loss is not None) == lost
