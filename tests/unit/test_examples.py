"""Every shipped example pipeline must load: examples are documentation that is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamsift.config import Pipeline, load_pipeline

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "pipelines"
FILES = sorted(p for p in EXAMPLES.iterdir() if p.suffix in (".yaml", ".yml", ".json"))


def test_examples_exist() -> None:
    names = {p.name for p in FILES}
    assert {
        "users-dedup.yaml",
        "glassflow-dedup-v1.json",
        "glassflow-dedup-v2.json",
        "glassflow-dedup-v3.json",
    } <= names


@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_example_validates(path: Path) -> None:
    assert isinstance(load_pipeline(path), Pipeline)


def test_users_dedup_example() -> None:
    p = load_pipeline(EXAMPLES / "users-dedup.yaml")
    assert p.source.bootstrap_servers == "127.0.0.1:9092"
    assert p.source.schema_.event_time == "created_at"
    assert p.dedup is not None and p.dedup.key == ("event_id",)
    assert p.sink.clickhouse.embedded
    assert p.sink.clickhouse.path == Path(".streamsift/clickhouse")
    assert p.sink.create_table is True
    assert {m.field for m in p.sink.mapping} >= {"user.id", "user.name", "user.email", "tags"}
