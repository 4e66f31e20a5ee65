"""A pipeline of three sources (`join` as a list of steps) over real HTTP: the native API
validates it (and names the field of a bad step); GlassFlow's pipeline GET cannot show it
(GlassFlow joins two sources) and says why with a 422, not a 5xx."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from streamsift.api.app import create_app
from streamsift.api.settings import ServiceSettings
from streamsift.config import parse_pipeline
from streamsift.service.core import PipelineService
from streamsift.service.lifecycle import State
from support.join_events import CHAIN, products_step
from support.servers import ServerThread

pytestmark = pytest.mark.integration


@pytest.fixture
def served_chain(tmp_path: Path) -> Iterator[str]:
    """The API of a service holding one stopped three-source pipeline, `chain`."""
    service = PipelineService(tmp_path / "data")
    service.database.add("chain", CHAIN, parse_pipeline(CHAIN))
    service.database.set_state("chain", State.STOPPED)
    try:
        with ServerThread(create_app(ServiceSettings(), service=service)) as server:
            yield server.url
    finally:
        service.close()


def test_glassflow_get_of_a_chain_is_a_configuration_error(served_chain: str) -> None:
    answer = httpx.get(f"{served_chain}/api/v1/pipeline/chain")
    assert answer.status_code == 422, answer.text
    problems = answer.json()["details"]["problems"]
    assert problems and "GlassFlow's pipelines join two sources" in problems[0]
    listed = httpx.get(f"{served_chain}/api/v1/pipeline")
    assert listed.status_code == 200
    assert [p["pipeline_id"] for p in listed.json()] == ["chain"]


def test_the_native_api_validates_a_chain_and_names_a_bad_step(served_chain: str) -> None:
    doc = {**CHAIN, "name": "chain-2", "sink": {**CHAIN["sink"], "clickhouse": {"path": "ch"}}}
    ok = httpx.post(f"{served_chain}/api/v1/pipelines/validate", json=doc)
    assert ok.status_code == 200, ok.text
    assert " left join chain_products on product_id = id" in ok.json()["summary"]
    step = products_step("interval", time_window="1h")
    bad_step = {**step, "left": {**step["left"], "key": "sku"}}
    bad = {**doc, "join": [CHAIN["join"][0], bad_step]}
    refused = httpx.post(f"{served_chain}/api/v1/pipelines/validate", json=bad)
    assert refused.status_code == 422
    (problem,) = refused.json()["details"]["problems"]
    assert problem.startswith("join[1].left.key: 'sku' is not a field of"), problem
