"""The two kinds of body: answers the server sends and requests it reads."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Answer(BaseModel):
    """What the server answers. Frozen; read from the service's objects by attribute (the
    API) or from JSON (the SDK). Fields a newer server adds are ignored, so an older SDK
    still reads its answers."""

    model_config = ConfigDict(frozen=True, from_attributes=True)


class Request(BaseModel):
    """What the server reads: frozen, and unknown fields are refused."""

    model_config = ConfigDict(frozen=True, extra="forbid")
