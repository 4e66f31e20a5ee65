"""Every shipped example pipeline must load: examples are documentation that is checked."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamsift.config import Pipeline, load_pipeline
from support.paths import EXAMPLES, REPO

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
    assert p.primary_source.bootstrap_servers == "127.0.0.1:9092"
    assert p.primary_source.schema_.event_time == "created_at"
    assert p.dedup is not None and p.dedup.key == ("event_id",)
    assert p.sink.clickhouse.embedded
    assert p.sink.clickhouse.path == Path(".streamsift/clickhouse")
    assert p.sink.create_table is True
    assert {m.field for m in p.sink.mapping} >= {"user.id", "user.name", "user.email", "tags"}


def test_configuration_doc_shows_the_example_as_it_is() -> None:
    doc = (REPO / "docs" / "configuration.md").read_text()
    marker = "`examples/pipelines/users-dedup.yaml`:\n\n```yaml\n"
    shown = doc[doc.index(marker) + len(marker) :].split("```\n", 1)[0]
    assert shown == (EXAMPLES / "users-dedup.yaml").read_text()


def test_readme_demo_output_is_what_the_default_demo_prints() -> None:
    from streamsift.cli.main import build_parser

    readme = (REPO / "README.md").read_text()
    demo = build_parser().parse_args(["demo"])
    events, duplicates = demo.events, round(demo.events * demo.duplicates)
    assert (
        f"produces {events:,} events, {demo.duplicates:.0%} of them re-sends of {demo.keys:,}"
        in readme
    )
    assert f"  produced {events:>24,}" in readme
    assert f"  expected unique {events - duplicates:>17,}" in readme
    assert f"  duplicates dropped {duplicates:>14,}" in readme


@pytest.mark.parametrize(
    ("name", "signal", "attribute"),
    [
        ("otel-logs.yaml", "otlp.logs", "resource_attributes.service.name"),
        ("otel-traces.yaml", "otlp.traces", "resource_attributes.service.name"),
        ("otel-metrics.yaml", "otlp.metrics", "resource.service.name"),
        ("glassflow-otlp-traces-v3.json", "otlp.traces", "resource_attributes.service.name"),
        ("glassflow-otlp-logs-v3.json", "otlp.logs", None),
    ],
)
def test_otlp_examples_are_otlp_pipelines_on_the_bundled_broker(
    name: str, signal: str, attribute: str | None
) -> None:
    """The OTLP examples (run end to end by tests/integration/test_otlp.py) read their
    signal's records, and name no Kafka: the bundled broker keeps what the receiver takes."""
    p = load_pipeline(EXAMPLES / name)
    assert p.primary_source.type.value == signal
    assert p.primary_source.bundled
    if attribute is not None:  # one attribute of a map, read by the mapping
        assert p.primary_source.schema_.field(attribute) is not None
