"""Pipeline documents in the SDK: a `Pipeline` (or a mapping) as the API's JSON, and as YAML.

`pipeline_document` gives the mapping the server expects, with secrets written as given
(a `SecretStr` is revealed: the document is for the server or the user's own file).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import Enum
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, SecretStr

from streamsift.config.models import Pipeline


def pipeline_document(pipeline: Pipeline | Mapping[str, Any]) -> dict[str, Any]:
    """The JSON-ready mapping of a pipeline, with its fields' document names (`source`,
    `schema`) and secrets written out."""
    return plain(pipeline)


def plain(model: BaseModel | Mapping[str, Any]) -> dict[str, Any]:
    """A config model (or a mapping) as JSON-ready data, secrets written out."""
    if isinstance(model, Mapping):
        return _plain(dict(model))
    return _plain(model.model_dump(mode="python", by_alias=True, exclude_none=True))


def _plain(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, Enum):
        return value.value
    return value


def save_yaml(pipeline: Pipeline | Mapping[str, Any], path: str | Path) -> Path:
    """Write the pipeline as a YAML document `streamsift validate/run` read (secrets as given)."""
    path = Path(path)
    text = yaml.safe_dump(pipeline_document(pipeline), sort_keys=False, allow_unicode=True)
    path.write_text(text)
    return path
