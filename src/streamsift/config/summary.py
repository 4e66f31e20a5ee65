"""One line that says what a pipeline does: `streamsift validate` and the API print it."""

from __future__ import annotations

from streamsift.config.durations import format_duration
from streamsift.config.models import Dedup, JoinSource, Pipeline


def summary(pipeline: Pipeline) -> str:
    """What a pipeline reads, dedups and joins, and where it writes, in one line."""

    def dedup(d: Dedup) -> str:
        return f"dedup on {'+'.join(d.key)} within {format_duration(d.time_window)}"

    if not pipeline.joins:
        return f"{pipeline.primary_source.topic} -> {pipeline.sink.table}" + (
            f", {dedup(pipeline.dedup)}" if pipeline.dedup else ""
        )
    by_id = {s.id: s for s in pipeline.inputs}

    def side(source: str | None) -> str:
        s = by_id[source or ""]
        return s.topic + (f" ({dedup(s.dedup)})" if isinstance(s, JoinSource) and s.dedup else "")

    text = side(pipeline.joins[0].left.source)
    for join in pipeline.joins:
        text += (
            f" {join.type.value} join {side(join.right.source)} on "
            f"{'+'.join(join.left.key)} = {'+'.join(join.right.key)}"
        )
    return f"{text} -> {pipeline.sink.table}"


def registry_schemas(pipeline: Pipeline) -> list[str]:
    """For each source whose fields come from its registry subject: the subject and the
    derived fields, one `name: type` line each (what `streamsift validate` shows)."""
    lines = []
    for src in pipeline.inputs:
        sub = src.schema_.from_registry
        if sub is None:
            continue
        version = sub.version if sub.version == "latest" else f"version {sub.version}"
        lines.append(
            f"{src.id}: {src.format.value} fields from registry subject "
            f"{src.registry_subject} ({version}):"
        )
        lines += [f"  {f.name}: {f.type.value}" for f in src.schema_.fields]
    return lines
