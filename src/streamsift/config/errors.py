"""Errors of the configuration layer: a pipeline document that cannot be run as written."""

from __future__ import annotations

from typing import TYPE_CHECKING

from streamsift.errors import ConfigurationError

if TYPE_CHECKING:  # executors import this module for RegistryError: no pydantic there
    from pydantic import ValidationError


class ConfigError(ConfigurationError, ValueError):
    """A pipeline document is invalid. `problems` holds one `field.path: message` line each."""

    def __init__(self, problems: list[str] | str, source: str | None = None) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(where + "; ".join(self.problems))


def format_validation_error(exc: ValidationError) -> list[str]:
    """One `field.path: message` line per problem, in the document's own words."""
    lines = []
    for err in exc.errors(include_url=False):
        loc = ".".join(
            f"[{p}]" if isinstance(p, int) else ("schema" if p == "schema_" else str(p))
            for p in err["loc"]
            if not (isinstance(p, str) and p.startswith("<"))  # a union's tag, e.g. <otlp>
        ).replace(".[", "[")
        msg = err["msg"]
        for prefix in ("Value error, ", "Assertion failed, "):
            if msg.startswith(prefix):
                msg = msg[len(prefix) :]
        if err["type"] == "extra_forbidden":
            msg = "unknown field (check its spelling and docs/configuration.md)"
        elif err["type"] == "missing":
            msg = "required field is missing"
        base = loc.rsplit("[", 1)[0]
        if loc.endswith("]") and msg.startswith(base + "."):
            # a list item's own check names its path without the index: join[1] + join.left.x
            loc, msg = loc + msg[len(base) :].split(":", 1)[0], msg.split(":", 1)[1].strip()
        lines.append(f"{loc}: {msg}" if loc else msg)
    return lines


class RegistryError(ConfigurationError):
    """A schema that cannot be used: the registry refused the request for good (unknown id or
    subject, bad credentials: `status` and `code` say which) or its text does not load."""

    def __init__(self, message: str, status: int = 0, code: int = 0) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
