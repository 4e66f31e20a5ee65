"""Reading one GlassFlow document: typed access that reports problems under GlassFlow's paths.

A `Reader` goes with one conversion. It collects every problem (so the user sees them all at
once), the notes on what changed in meaning, and where each of our fields came from, so that
problems our own model finds later are reported in the user's GlassFlow paths too.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import timedelta
from typing import Any, TypeVar

from pydantic import ValidationError

from streamsift.config.errors import ConfigError, format_validation_error
from streamsift.config.glassflow.values import parse_go_duration
from streamsift.config.models import Pipeline

T = TypeVar("T")


def blank(value: object) -> bool:
    """Missing, or a string of spaces only."""
    return value is None or (isinstance(value, str) and not value.strip())


class Reader:
    """One conversion's problems, notes and field origins, and typed access to the document."""

    def __init__(self, doc: dict[str, Any], version: str) -> None:
        self.doc = doc
        self.version = version
        self.problems: list[str] = []
        self.notes: list[str] = []
        self.origins: dict[str, str] = {}

    # -- bookkeeping

    def problem(self, path: str, message: str) -> None:
        self.problems.append(f"{path}: {message}" if path else message)

    def origin(self, ours: str, theirs: str) -> None:
        """Our field `ours` came from GlassFlow's `theirs`."""
        self.origins[ours] = theirs

    def fail_if_problems(self) -> None:
        if self.problems:
            raise ConfigError(self.problems)

    def validate(self, document: dict[str, Any]) -> None:
        """Run our own model over the result and report its problems in GlassFlow's paths."""
        try:
            Pipeline.model_validate(document)
        except ValidationError as exc:
            raise ConfigError(
                [self.glassflow_path(line) for line in format_validation_error(exc)]
            ) from None

    def glassflow_path(self, line: str) -> str:
        """A problem line of our model with its leading path replaced by the GlassFlow one."""
        best = ""
        for ours in self.origins:
            if (
                len(ours) > len(best)
                and line.startswith(ours)
                and line[len(ours) : len(ours) + 1] in (".", "[", ":")
            ):
                best = ours
        return self.origins[best] + line[len(best) :] if best else line

    # -- typed access

    def obj(
        self, parent: dict[str, Any], key: str, path: str, *, required: bool
    ) -> dict[str, Any] | None:
        return self._typed(parent, key, path, dict, "an object", required)

    def array(
        self, parent: dict[str, Any], key: str, path: str, *, required: bool
    ) -> list[Any] | None:
        return self._typed(parent, key, path, list, "a list", required)

    def _typed(
        self, parent: dict[str, Any], key: str, path: str, kind: type, label: str, required: bool
    ) -> Any:
        """`parent[key]` if it is of `kind`; else None, with a problem recorded where due."""
        value = parent.get(key)
        if value is None:
            if required:
                self.problem(path, "required field is missing")
            return None
        if not isinstance(value, kind):
            self.problem(path, f"must be {label}, got {type(value).__name__}")
            return None
        return value

    def objects(
        self, items: list[Any], container: str, shape: str = ""
    ) -> Iterator[tuple[int, str, dict[str, Any]]]:
        """(index, path, entry) for the objects of a list; any other entry is a problem.

        `shape` names the keys expected, for the message: "{name, type}".
        """
        for i, entry in enumerate(items):
            path = f"{container}[{i}]"
            if isinstance(entry, dict):
                yield i, path, entry
            else:
                self.problem(path, f"must be an object {shape}".rstrip())

    def text(
        self, parent: dict[str, Any], key: str, path: str, *, empty: str | None = None
    ) -> str | None:
        """A string field; `empty` is the message for a missing or blank value (None: optional)."""
        value = parent.get(key)
        if blank(value):
            if empty is not None:
                self.problem(path, empty)
            return None
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            self.problem(path, f"must be a string, got {type(value).__name__}")
            return None
        return str(value).strip()

    def flag(self, parent: dict[str, Any], key: str, path: str) -> bool:
        value = parent.get(key, False)
        if value is None:
            return False
        if not isinstance(value, bool):
            self.problem(path, f"must be true or false, got {value!r}")
            return False
        return value

    def duration(self, parent: dict[str, Any], key: str, path: str) -> timedelta | None:
        """A Go duration string; None if absent or not a duration (then with a problem)."""
        if parent.get(key) is None:
            return None
        return self.parsed(parent[key], path, parse_go_duration)

    def parsed(self, value: object, path: str, parse: Callable[[object], T]) -> T | None:
        """`parse(value)`, or None with its ValueError recorded as the problem at `path`."""
        try:
            return parse(value)
        except ValueError as exc:
            self.problem(path, str(exc))
            return None
