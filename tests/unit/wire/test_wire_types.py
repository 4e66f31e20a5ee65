"""One shape per wire type: the API's pydantic models (streamsift.wire) are the contract.

The SDK reads answers into those same classes; the web UI's types are generated from the
OpenAPI document the app makes of them (ui/openapi.json -> ui/src/api-schema.ts, by the
openapi-typescript pinned in ui/package-lock.json). These tests fail when a checked-in copy
is stale: run `bash scripts/build-ui.sh` (or `make ui`) and commit both files.
"""

from __future__ import annotations

import dataclasses
import inspect
import shutil
import subprocess
from pathlib import Path

import pytest
from pydantic import BaseModel

import streamsift.sdk.client
import streamsift.sdk.models
from streamsift.api.openapi_document import openapi_text
from streamsift.service import core, database, lifecycle
from streamsift.wire import pipelines
from support.paths import REPO

UI = REPO / "ui"
REGENERATE = (
    "regenerate with `bash scripts/build-ui.sh` and commit ui/openapi.json and ui/src/api-schema.ts"
)


def test_the_checked_in_openapi_document_is_the_apps() -> None:
    checked_in = (UI / "openapi.json").read_text(encoding="utf-8")
    assert openapi_text() == checked_in, f"ui/openapi.json is stale: {REGENERATE}"


def generator() -> Path:
    """The pinned openapi-typescript's command, where `npm ci` in ui/ put it."""
    for bin_dir in (UI / "openapi-types" / "node_modules" / ".bin", UI / "node_modules" / ".bin"):
        if (bin_dir / "openapi-typescript").exists():
            return bin_dir / "openapi-typescript"
    pytest.skip("ui/node_modules is missing (no `npm ci` in ui/): cannot run openapi-typescript")


def test_the_checked_in_ui_types_are_generated_from_the_document(tmp_path: Path) -> None:
    command = generator()
    if shutil.which("node") is None:
        pytest.skip("node is not installed: cannot run openapi-typescript")
    out = tmp_path / "api-schema.ts"
    done = subprocess.run(
        [str(command), str(UI / "openapi.json"), "--output", str(out)],
        cwd=UI,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert out.read_bytes() == (UI / "src" / "api-schema.ts").read_bytes(), (
        f"ui/src/api-schema.ts is not what openapi-typescript makes of ui/openapi.json: {REGENERATE}"
    )


def test_the_ui_writes_no_wire_shape_of_its_own() -> None:
    api_ts = (UI / "src" / "api.ts").read_text(encoding="utf-8")
    assert 'from "./api-schema"' in api_ts
    assert "interface " not in api_ts, "ui/src/api.ts: use the generated types (api-schema.ts)"


def test_the_sdk_reads_answers_into_the_apis_own_models() -> None:
    for module in (streamsift.sdk.models, streamsift.sdk.client):
        for name, value in vars(module).items():
            if inspect.isclass(value) and issubclass(value, BaseModel) and value is not BaseModel:
                assert value.__module__.startswith(("streamsift.wire.", "streamsift.config.")), (
                    f"{module.__name__}.{name} is a model of the SDK's own: use streamsift.wire's"
                )
    assert streamsift.sdk.models.PipelineStatus is pipelines.PipelineStatusModel


def test_the_lifecycle_uses_the_wire_states() -> None:
    assert lifecycle.State is pipelines.State
    assert lifecycle.DesiredState is pipelines.DesiredState


def test_the_services_records_have_the_wire_models_fields() -> None:
    """The API reads its answers off the service's dataclasses by attribute: same fields."""
    pairs = (
        (core.PipelineStatus, pipelines.PipelineStatusModel),
        (database.PipelineRecord, pipelines.PipelineModel),
        (database.StatusChange, pipelines.StatusChangeModel),
    )
    for record, model in pairs:
        assert [f.name for f in dataclasses.fields(record)] == list(model.model_fields), record
