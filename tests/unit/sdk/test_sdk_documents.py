"""The SDK's documents: a Pipeline built in Python, saved as YAML, loads back the same."""

from __future__ import annotations

from pathlib import Path

import yaml

from streamsift.config import load_pipeline, parse_pipeline
from streamsift.errors import ConfigurationError
from streamsift.sdk import save_yaml
from streamsift.sdk.errors import ValidationFailed, error_from_response
from support.paths import REPO


def test_a_pipeline_saved_as_yaml_loads_back_equal(tmp_path: Path) -> None:
    doc = yaml.safe_load((REPO / "examples/pipelines/users-dedup.yaml").read_text())
    doc["source"]["security"] = {
        "protocol": "SASL_SSL",
        "mechanism": "SCRAM-SHA-256",
        "username": "u",
        "password": "pa55",
    }
    doc["sink"]["clickhouse"] = {"host": "ch", "port": 8443, "password": "ch-pa55", "secure": True}
    pipeline = parse_pipeline(doc)
    path = save_yaml(pipeline, tmp_path / "p.yaml")
    assert load_pipeline(path) == pipeline
    text = path.read_text()
    assert "pa55" in text and "ch-pa55" in text  # secrets written as given
    assert "source:" in text and "schema:" in text  # the document's own names


def test_error_answers_become_typed_errors_of_the_hierarchy() -> None:
    error = error_from_response(
        422,
        {
            "status": 422,
            "code": "unprocessable_entity",
            "message": "m",
            "details": {"problems": ["a: b"], "hint": "h"},
        },
    )
    assert isinstance(error, ValidationFailed) and isinstance(error, ConfigurationError)
    assert (error.status, error.code, error.problems, error.hint) == (
        422,
        "unprocessable_entity",
        ["a: b"],
        "h",
    )
    odd = error_from_response(502, "<html>bad gateway</html>")
    assert odd.status == 502 and "bad gateway" in odd.server_message
