"""What every module of the interpreter shares: its two outcomes besides a value
(`NotPreviewable`, `DeadLetter`), its bounds (`Budget`, the size limits, 64-bit integers), the
checks on plain values, and `Evaluator`, what the functions call back on the interpreter. The
bottom of the package: it imports none of the others, so they import it without a circle.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from datetime import date, datetime
from typing import Any, Protocol

from sqlglot import exp

MAX_STEPS = 200_000
MAX_SECONDS = 2.0
MAX_TEXT = 1_000_000  # characters of a string the interpreter makes
MAX_ITEMS = 100_000  # elements of an array or map the interpreter makes
INT64 = (-(2**63), 2**63 - 1)


class NotPreviewable(Exception):
    """The interpreter does not know this node or function, or the preview would cost too much."""


class DeadLetter(Exception):
    """What makes Spark fail the record: in a running pipeline it goes to the DLQ."""


class Budget:
    """Steps and time one evaluation may take."""

    def __init__(self, steps: int = MAX_STEPS, seconds: float = MAX_SECONDS) -> None:
        self.left = steps
        self.deadline = time.monotonic() + seconds

    def spend(self, steps: int = 1) -> None:
        self.left -= steps
        if self.left < 0:
            raise NotPreviewable("the preview stops at a bounded amount of work")
        if time.monotonic() > self.deadline:
            raise NotPreviewable("the preview stops after a bounded time")


class Evaluator(Protocol):
    """The interpreter as the functions see it: they evaluate their arguments and apply their
    lambdas through it, and spend its budget per element walked."""

    budget: Budget

    def value(self, tree: exp.Expression | None, env: Mapping[str, Any]) -> Any: ...

    def apply(self, fn: exp.Expression, args: list[Any], env: Mapping[str, Any]) -> Any: ...


def text_size(size: int) -> None:
    if size > MAX_TEXT:
        raise NotPreviewable(f"a value longer than {MAX_TEXT} characters")


def items_size(size: int) -> None:
    if size > MAX_ITEMS:
        raise NotPreviewable(f"an array or map of more than {MAX_ITEMS} elements")


def int64(value: int) -> int:
    if not INT64[0] <= value <= INT64[1]:
        raise DeadLetter("integer overflow")
    return value


def kind_of(value: Any) -> str:
    return {
        bool: "true/false",
        int: "a number",
        float: "a number",
        str: "text",
        list: "an array",
        dict: "a map",
        datetime: "a timestamp",
        date: "a date",
    }.get(type(value), "a value")


def truth(value: Any) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    raise NotPreviewable(f"{kind_of(value)} where true/false is expected")


def number(value: Any) -> int | float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise NotPreviewable(f"arithmetic on {kind_of(value)}")
    return value
