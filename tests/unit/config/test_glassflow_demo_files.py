"""Every GlassFlow demo pipeline (tests/data/glassflow_demos, from glassflow/clickhouse-etl
`demos/`; Kafka and OTLP sources) imports and validates as a streamsift pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamsift.config import parse_pipeline
from streamsift.config.glassflow.importer import import_glassflow
from support.paths import DEMOS

FILES = sorted(DEMOS.glob("*.json"))


def test_the_demo_folder_holds_every_demo() -> None:
    # 11 Kafka demos as first collected, 5 newer versions (head__*, v3__*), 6 OTLP demos
    assert len(FILES) == 22
    listed = (DEMOS / "README.md").read_text()
    assert all(f.name in listed for f in FILES)


@pytest.mark.parametrize("path", FILES, ids=[f.stem for f in FILES])
def test_each_glassflow_demo_validates(path: Path) -> None:
    imported = import_glassflow(json.loads(path.read_text()))
    pipeline = parse_pipeline(imported.document)
    source = json.loads(path.read_text())
    mapped = (
        source["sink"].get("table_mapping")
        or source["sink"].get("mapping")
        or [f for f in source.get("schema", {}).get("fields", []) if f.get("column_name")]
    )
    # nothing of the mapping is dropped: one column per GlassFlow mapping entry, same types
    assert [m.column for m in pipeline.sink.mapping] == [m["column_name"] for m in mapped]
    assert len(pipeline.sink.mapping) == len(mapped)


def test_the_5g_demo_reads_what_otlp_metric_records_have() -> None:
    """Filter, dedup on one attribute, the computed fields and the mapping's types, as meant."""
    doc = json.loads((DEMOS / "5g-telemetry__5g-metrics-pipeline.json").read_text())
    pipeline = parse_pipeline(import_glassflow(doc).document)
    assert pipeline.filter == "(`metric_name` != 'ran.healthcheck')"
    assert pipeline.dedup is not None
    assert pipeline.dedup.key == ("attributes.measurement_id",)
    assert pipeline.dedup.time_window.total_seconds() == 30
    fields = {f.name: f.type.value for f in pipeline.source_.schema_.fields}
    assert fields["attributes.measurement_id"] == "string"
    assert fields["resource_attributes"] == "map" and fields["value_double"] == "float"
    computed = {t.name: (t.expression, t.type.value) for t in pipeline.transform}
    assert computed["latitude"] == (
        "CAST(COALESCE(try_element_at(`resource_attributes`, 'location.latitude'), '0') AS DOUBLE)",
        "float",
    )
    assert set(computed) == {"canonical_cell_id", "network_mode", "latitude", "longitude"}
    columns = {m.column: (m.field, m.type) for m in pipeline.sink.mapping}
    assert columns["TimeUnix"] == ("timestamp", "DateTime64(9)")
    assert columns["ResourceAttributes"][0] == "resource_attributes"


@pytest.mark.parametrize(
    ("file", "signal", "dedup"),
    [
        ("observability-v2__logs-pipeline.json", "otlp.logs", None),  # `enabled: false`
        ("observability-v2__metrics-pipeline.json", "otlp.metrics", None),
        ("observability-v2__traces-pipeline.json", "otlp.traces", (("span_id",), 3600)),
        ("5g-telemetry__5g-metrics-pipeline-no-dedup.json", "otlp.metrics", None),
    ],
)
def test_the_other_otlp_demos_read_their_signal(
    file: str, signal: str, dedup: tuple[tuple[str, ...], int] | None
) -> None:
    pipeline = parse_pipeline(import_glassflow(json.loads((DEMOS / file).read_text())).document)
    assert pipeline.source_.type.value == signal
    got = pipeline.dedup and (pipeline.dedup.key, pipeline.dedup.time_window.total_seconds())
    assert got == dedup


def test_the_redacting_traces_demo_replaces_its_maps() -> None:
    """HEAD's observability-v2 traces demo: a composite dedup key, and stateless outputs
    named like the OTLP fields they replace, built with expr-lang map literals."""
    doc = json.loads((DEMOS / "head__observability-v2__traces-pipeline.json").read_text())
    pipeline = parse_pipeline(import_glassflow(doc).document)
    assert pipeline.dedup is not None and pipeline.dedup.key == ("trace_id", "span_id")
    computed = {t.name: (t.expression, t.type.value) for t in pipeline.transform}
    assert computed["attributes_out"] == (
        "map_from_arrays(array('user_email', 'demo_ssn'), array('[REDACTED]', '[REDACTED]'))",
        "map",
    )
    assert computed["resource_attributes_out"][0].startswith(
        "map_from_arrays(array('service.name', 'user_email', 'demo_ssn'), "
        "array(CAST(try_element_at(`resource_attributes`, 'service.name') AS STRING)"
    )
    columns = {m.column: m.field for m in pipeline.sink.mapping}
    assert columns["SpanAttributes"] == "attributes_out"
    assert columns["ResourceAttributes"] == "resource_attributes_out"


JOIN_FILES = [f for f in FILES if (json.loads(f.read_text()).get("join") or {}).get("enabled")]


@pytest.mark.parametrize("path", JOIN_FILES, ids=[f.stem for f in JOIN_FILES])
def test_every_glassflow_join_imports_as_a_latest_join(path: Path) -> None:
    pipeline = parse_pipeline(import_glassflow(json.loads(path.read_text())).document)
    assert pipeline.join is not None
    assert (pipeline.join.mode.value, pipeline.join.type.value) == ("latest", "inner")


def test_the_join_files_are_all_there() -> None:
    assert len(JOIN_FILES) == 5
