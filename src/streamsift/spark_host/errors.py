"""Errors of the Spark host, which the engine raises too for what a run cannot do here."""

from __future__ import annotations

from streamsift.errors import ConfigurationError


class RuntimeConfigError(ConfigurationError):
    """This machine or this run's settings lack something the pipeline needs (Java, a local
    master for embedded ClickHouse, a known fault hook)."""
