"""The one error answer of the API (the shape GlassFlow's API uses too)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field


class ErrorBody(BaseModel):
    """Every error answer of the API (the shape GlassFlow's API uses too)."""

    status: int
    code: str
    message: str
    details: dict[str, Any] = Field(default_factory=dict)
