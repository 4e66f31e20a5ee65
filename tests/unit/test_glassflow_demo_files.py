"""Every GlassFlow demo pipeline with a Kafka source (tests/data/glassflow_demos, from
glassflow/clickhouse-etl `demos/`) imports and validates as a streamsift pipeline."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from streamsift.config import parse_pipeline
from streamsift.config.glassflow.importer import import_glassflow

DEMOS = Path(__file__).parents[1] / "data" / "glassflow_demos"
FILES = sorted(DEMOS.glob("*.json"))


def test_the_demo_folder_holds_every_kafka_demo() -> None:
    assert len(FILES) == 15  # 11 as first collected, 4 newer versions (head__*)
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
