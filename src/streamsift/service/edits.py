"""What an edit of a pipeline's document may change without losing its state.

A pipeline's checkpoint holds its Kafka offsets and its dedup and join state; that state is
keyed by the dedup key and window, the join keys and windows, and the topics read. A new
document that changes one of those cannot resume from the old checkpoint meaningfully, so the
service refuses it unless the caller asks for a reset (a fresh checkpoint). Secrets shown as
"***" in a document read back from the service keep their stored value when it is sent back.
"""

from __future__ import annotations

import copy
from typing import Any

from streamsift.config.durations import format_duration
from streamsift.config.models import Dedup, Join, JoinSource, Pipeline
from streamsift.config.secrets import MASK, get_path, secret_paths, set_path


def state_changes(old: Pipeline, new: Pipeline) -> list[str]:
    """One line per change that invalidates the checkpoint's state (empty: none)."""
    changes: list[str] = []
    old_topics = [s.topic for s in old.inputs]
    new_topics = [s.topic for s in new.inputs]
    if old_topics != new_topics:
        changes.append(f"source topics {old_topics} -> {new_topics}")
    if _dedups(old) != _dedups(new):
        changes.append(f"dedup {_describe(_dedups(old))} -> {_describe(_dedups(new))}")
    if _join_keys(old) != _join_keys(new):
        changes.append(f"join keys or windows {_join(old)} -> {_join(new)}")
    return changes


def _dedups(p: Pipeline) -> list[tuple[Any, ...] | None]:
    if p.sources is None:
        return [_dedup(p.dedup)]
    return [_dedup(s.dedup) for s in p.sources if isinstance(s, JoinSource)]


def _dedup(d: Dedup | None) -> tuple[Any, ...] | None:
    return None if d is None else (d.mode.value, d.key, d.time_window, d.version_field)


def _describe(dedups: list[tuple[Any, ...] | None]) -> str:
    parts = []
    for d in dedups:
        parts.append(
            "none" if d is None else f"{d[0]} on {'+'.join(d[1])} within {format_duration(d[2])}"
        )
    return ", ".join(parts)


def _join(p: Pipeline) -> str:
    """The join's steps as text: `none`, one step, or `step; step; ...` for a chain."""
    if not p.joins:
        return "none"
    return "; ".join(_step(j) for j in p.joins)


def _step(j: Join) -> str:
    ttl = j.right.ttl
    return (
        f"{j.mode.value}: {'+'.join(j.left.key)} within {_window(j.left.time_window)} = "
        f"{'+'.join(j.right.key)} within {_window(j.right.time_window)}"
        + ("" if ttl is None else f", ttl {format_duration(ttl)}")
    )


def _window(window: Any) -> str:
    """A side's window; a table side (join.mode table) has none."""
    return "no window" if window is None else format_duration(window)


def _join_keys(p: Pipeline) -> tuple[Any, ...] | None:
    """What a join's state is built on, step by step: each step's mode (each keeps its own
    state), sources, keys, windows and the table side's ttl. Adding, removing or reordering
    steps changes it too. One step is described as before the chain existed."""
    if not p.joins:
        return None
    steps = tuple(
        (
            j.mode,
            j.left.key,
            j.left.time_window,
            j.right.key,
            j.right.time_window,
            j.right.ttl,
        )
        + ((j.right.source,) if len(p.joins) > 1 else ())
        for j in p.joins
    )
    return steps[0] if len(steps) == 1 else steps


def keep_masked_secrets(
    new_doc: dict[str, Any], new: Pipeline, current_doc: dict[str, Any], current: Pipeline
) -> dict[str, Any]:
    """`new_doc` with each secret given as "***" replaced by the current document's value at
    the same place (a document read back from the service and sent again keeps its secrets)."""
    kept = copy.deepcopy(new_doc)
    current_paths = set(secret_paths(current, current_doc))
    for path in secret_paths(new, kept):
        if get_path(kept, path) == MASK and path in current_paths:
            set_path(kept, path, get_path(current_doc, path))
    return kept
