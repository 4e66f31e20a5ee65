"""Errors of the configuration layer: a pipeline document that cannot be run as written."""

from __future__ import annotations


class ConfigError(ValueError):
    """A pipeline document is invalid. `problems` holds one `field.path: message` line each."""

    def __init__(self, problems: list[str] | str, source: str | None = None) -> None:
        self.problems = [problems] if isinstance(problems, str) else list(problems)
        self.source = source
        where = f"{source}: " if source else ""
        super().__init__(where + "; ".join(self.problems))
