"""Shared pieces of the pipeline models: the strict base model, durations and windows,
the name rules, and how long values are cut in messages."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Annotated

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    PlainSerializer,
)

from streamsift.config.durations import format_duration, parse_duration

MAX_DEDUP_WINDOW = timedelta(days=7)

Duration = Annotated[
    timedelta,
    BeforeValidator(parse_duration),
    PlainSerializer(format_duration, return_type=str),
]


def _check_window(v: timedelta) -> timedelta:
    if v <= timedelta(0):
        raise ValueError("must be greater than zero")
    if v > MAX_DEDUP_WINDOW:
        raise ValueError(f"{format_duration(v)} exceeds the 7d maximum")
    return v


# A dedup or join window: a positive duration of at most 7 days (GlassFlow's limit).
Window = Annotated[Duration, AfterValidator(_check_window)]
IDENTIFIER = re.compile(r"\A[A-Za-z_][A-Za-z0-9_]*\Z")
# Kafka's own rule for topic names (kafka.common.internals.Topic).
TOPIC_NAME = re.compile(r"\A[A-Za-z0-9._-]+\Z")
MAX_TOPIC_LENGTH = 249
FIELD_PATH = re.compile(r"\A[A-Za-z_][A-Za-z0-9_\-]*(\.[A-Za-z_][A-Za-z0-9_\-]*)*\Z")


class ConfigModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


def shorten(text: str, limit: int = 60) -> str:
    """`text` for an error message: a long value is cut, with its length said."""
    if len(text) <= limit:
        return repr(text)
    return f"{text[:limit]!r}... ({len(text):,} characters)"
