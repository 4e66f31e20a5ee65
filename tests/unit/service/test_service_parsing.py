"""PipelineService parses a document once where it comes in (service/core.py) and hands the
model down: an edit parses the stored version and the new document once each, and the new one
again only when the edit restores secrets sent back masked (the model then carries them)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from streamsift.config import parse_pipeline
from streamsift.config.secrets import MASK
from streamsift.service import core
from streamsift.service.core import PipelineService
from streamsift.service.lifecycle import State
from streamsift.service.secret_box import KEY_ENV

PASSWORD = "kafka-pass-Qe57"


def document(client_id: str = "x") -> dict[str, Any]:
    return {
        "name": "orders",
        "source": {
            "bootstrap_servers": "127.0.0.1:9092",
            "topic": "orders",
            "security": {
                "protocol": "SASL_PLAINTEXT",
                "mechanism": "PLAIN",
                "username": "u",
                "password": PASSWORD,
            },
            "properties": {"client.id": client_id},
            "schema": {"fields": [{"name": "id", "type": "string"}]},
        },
        "sink": {
            "clickhouse": {"host": "localhost", "port": 8123},
            "table": "orders",
            "mapping": [{"field": "id", "column": "id", "type": "String"}],
        },
    }


@pytest.fixture
def service(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[PipelineService]:
    monkeypatch.delenv(KEY_ENV, raising=False)
    svc = PipelineService(tmp_path)
    doc = document()
    svc.database.add("orders", doc, parse_pipeline(doc))
    svc.database.set_state("orders", State.STOPPED)
    yield svc
    svc.close()


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> Counter[str]:
    """How often the service calls each parser."""
    counts: Counter[str] = Counter()

    def counted(name: str, parse: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            counts[name] += 1
            return parse(*args, **kwargs)

        return wrapper

    for name in ("parse_pipeline", "parse_resolved"):
        monkeypatch.setattr(core, name, counted(name, getattr(core, name)))
    return counts


def test_an_edit_in_clear_parses_each_document_once(
    service: PipelineService, parses: Counter[str]
) -> None:
    service.edit("orders", document(client_id="y"))
    assert parses == Counter({"parse_pipeline": 2})  # the stored version, the new document
    stored = service.document("orders", reveal_secrets=True)
    assert stored["source"]["properties"]["client.id"] == "y"
    assert service.get("orders").version == 2


def test_an_edit_that_restores_masked_secrets_parses_the_result_again(
    service: PipelineService, parses: Counter[str]
) -> None:
    doc = service.document("orders")
    assert doc["source"]["security"]["password"] == MASK
    doc["source"]["properties"]["client.id"] = "y"
    service.edit("orders", doc)
    assert parses == Counter({"parse_pipeline": 2, "parse_resolved": 1})
    stored = service.document("orders", reveal_secrets=True)
    assert stored["source"]["security"]["password"] == PASSWORD
    assert stored["source"]["properties"]["client.id"] == "y"
