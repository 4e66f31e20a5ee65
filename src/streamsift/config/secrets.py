"""Where a pipeline's secrets are, found once for every use.

A secret is the value of a `SecretStr` field (the ClickHouse password, a SASL password, a
registry password, the OTLP receiver's token) or a Kafka property that holds one
(`is_secret_property`). Both walks below go over the validated model, so a new `SecretStr`
field is sealed at rest (service/secret_box.py), kept through edits (service/edits.py) and
masked in dead letters (engine/batch_writer.py) without a change anywhere else.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, SecretStr

from streamsift.config.kafka_security import is_secret_property

MASK = "***"
DocPath = tuple[str | int, ...]


def secret_paths(model: BaseModel, raw: Any, path: DocPath = ()) -> Iterator[DocPath]:
    """Where the secrets of a validated model sit in the raw mapping it was validated from."""
    if not isinstance(raw, dict):
        return
    for name, field in type(model).model_fields.items():
        key = field.alias if field.alias and field.alias in raw else name
        if key not in raw:
            continue
        value, sub = getattr(model, name), raw[key]
        if isinstance(value, SecretStr):
            yield (*path, key)
        elif isinstance(value, BaseModel):
            yield from secret_paths(value, sub, (*path, key))
        elif isinstance(value, (tuple, list)) and isinstance(sub, list):
            for i, (item, sub_item) in enumerate(zip(value, sub, strict=False)):
                if isinstance(item, BaseModel):
                    yield from secret_paths(item, sub_item, (*path, key, i))
        elif name == "properties" and isinstance(sub, dict):
            for prop in sub:
                if is_secret_property(prop):
                    yield (*path, key, prop)


def secret_values(model: BaseModel) -> list[str]:
    """The secrets of a validated model, in clear and non-empty: what must never be shown."""
    found: list[str] = []
    for name in type(model).model_fields:
        value = getattr(model, name)
        if isinstance(value, SecretStr):
            found.append(value.get_secret_value())
        elif isinstance(value, BaseModel):
            found += secret_values(value)
        elif isinstance(value, (tuple, list)):
            for item in value:
                if isinstance(item, BaseModel):
                    found += secret_values(item)
        elif name == "properties" and isinstance(value, dict):
            found += [str(v) for k, v in value.items() if is_secret_property(k)]
    return [s for s in found if s]


def get_path(doc: Any, path: DocPath) -> Any:
    for step in path:
        doc = doc[step]
    return doc


def set_path(doc: Any, path: DocPath, value: Any) -> None:
    for step in path[:-1]:
        doc = doc[step]
    doc[path[-1]] = value
