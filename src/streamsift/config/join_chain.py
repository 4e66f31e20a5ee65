"""Checks of a pipeline's `sources` + `join`: one join of two sources, or a chain of steps.

`join` is one mapping (two sources) or a list of steps: step 0 joins two sources, step k > 0
joins step k-1's output (its output fields, by their output names) with one more source.
Every source is used exactly once; each step may be `interval`, `latest` or `table`
(docs/semantics.md, "A chain of joins"). Errors name the field: `join.left.key`
for the single mapping, `join[1].left.key` for a step.
"""

from __future__ import annotations

from streamsift.config.stages import (
    DedupMode,
    FieldRef,
    Join,
    JoinMode,
    JoinSource,
    check_stage,
    source_scope,
)
from streamsift.config.types import SCALAR_TYPES, FieldType


def join_steps(join: Join | tuple[Join, ...] | None) -> tuple[Join, ...]:
    """The join as steps: none, the single mapping, or the list."""
    if join is None:
        return ()
    return join if isinstance(join, tuple) else (join,)


def step_path(join: Join | tuple[Join, ...] | None, k: int) -> str:
    """How errors name step `k`: `join` (the single mapping) or `join[k]`."""
    return f"join[{k}]" if isinstance(join, tuple) else "join"


def check_chain_shape(sources: tuple[JoinSource, ...], join: Join | tuple[Join, ...]) -> None:
    """Which source each step reads: step 0 two, later steps one (their left side is the
    previous step's output); every source exactly once."""
    _check_names(sources)
    steps = join_steps(join)
    if not steps:
        raise ValueError("join: give at least one join step")
    ids = [s.id for s in sources]
    used: dict[str, str] = {}
    for k, step in enumerate(steps):
        where = step_path(join, k)
        sides = (("left", step.left), ("right", step.right)) if k == 0 else (("right", step.right),)
        if k > 0 and step.left.source is not None:
            raise ValueError(
                f"{where}.left.source: a later step's left side is the previous step's output; "
                "leave source out"
            )
        for side_name, side in sides:
            if side.source is None:
                raise ValueError(f"{where}.{side_name}.source: required field is missing")
            if side.source not in ids:
                raise ValueError(
                    f"{where}.{side_name}.source: {side.source!r} is not a source "
                    f"(sources: {', '.join(ids)})"
                )
            if side.source in used:
                if k == 0:
                    raise ValueError(f"{where}.right.source: must differ from {where}.left.source")
                raise ValueError(
                    f"{where}.{side_name}.source: {side.source!r} is already joined by "
                    f"{used[side.source]}; each source is joined once"
                )
            used[side.source] = where
    for i, sid in enumerate(ids):
        if sid not in used:
            raise ValueError(
                f"sources[{i}]: {sid!r} is not used by any join step; add a step that joins it "
                "(join as a list: the first step joins two sources, each later step one more)"
            )


def _check_names(sources: tuple[JoinSource, ...]) -> None:
    ids = [s.id for s in sources]
    topics = [s.topic for s in sources]
    for i, src in enumerate(sources):
        where = f"sources[{i}]."
        if src.id in ids[:i]:
            which = "both sources are" if len(sources) == 2 else "two sources are"
            raise ValueError(f"{where}name: {which} called {src.id!r}; name them")
        if src.topic in topics[:i]:
            raise ValueError(
                f"{where}topic: the two sources must read different topics"
                if len(sources) == 2
                else f"{where}topic: {src.topic!r} is read by another source; topics must differ"
            )


def check_sources(sources: tuple[JoinSource, ...]) -> dict[str, dict[str, FieldRef]]:
    """Each source's names, topic, dedup and stages; the fields in scope after its stages."""
    scopes: dict[str, dict[str, FieldRef]] = {}
    for i, src in enumerate(sources):
        where = f"sources[{i}]."
        if src.dedup is not None:
            for key in src.dedup.key:
                if src.schema_.field(key) is None:
                    raise ValueError(
                        f"{where}dedup.key: {key!r} is not a field of sources[{i}].schema"
                    )
            if src.dedup.mode is DedupMode.LAST:
                raise ValueError(
                    f"{where}dedup.mode: mode last is not supported on joined sources "
                    "(a joined row has no single version); use first or exact"
                )
        scopes[src.id] = check_stage(source_scope(src), src.transform, src.filter, where)
    return scopes


def check_steps(
    sources: tuple[JoinSource, ...],
    join: Join | tuple[Join, ...],
    scopes: dict[str, dict[str, FieldRef]],
) -> dict[str, FieldRef]:
    """Keys, table sides and outputs of every step; the last step's output fields."""
    scope: dict[str, FieldRef] = {}
    for k, step in enumerate(join_steps(join)):
        where = step_path(join, k)
        right_source = step.right.source or ""
        if k == 0:
            left_scope, left_name = scopes[step.left.source or ""], f"source {step.left.source!r}"
        else:
            left_scope, left_name = scope, f"{step_path(join, k - 1)}'s output"
        sides = {
            "left": (left_scope, left_name),
            "right": (scopes[right_source], f"source {right_source!r}"),
        }
        if step.mode is JoinMode.TABLE:
            i = [s.id for s in sources].index(right_source)
            if sources[i].transform or sources[i].filter is not None:
                raise ValueError(
                    f"sources[{i}].{'filter' if sources[i].filter else 'transform'}: the table "
                    "side of join.mode table takes no computed fields or filter (a tombstone "
                    "has no fields to give them)"
                )
        _check_keys(step, where, sides, k)
        scope = _output_scope(step, where, sides)
    return scope


def _check_keys(
    step: Join, where: str, sides: dict[str, tuple[dict[str, FieldRef], str]], k: int
) -> None:
    if len(step.left.key) != len(step.right.key):
        raise ValueError(
            f"{where}.right.key: the left key has {len(step.left.key)} field(s), "
            f"the right key {len(step.right.key)}"
        )
    for i, (lk, rk) in enumerate(zip(step.left.key, step.right.key, strict=True)):
        for side_name, key in (("left", lk), ("right", rk)):
            side_scope, side_desc = sides[side_name]
            if key not in side_scope:
                hint = (
                    f"; add it to {where.replace(f'[{k}]', f'[{k - 1}]')}.output"
                    if side_name == "left" and k > 0
                    else ""
                )
                raise ValueError(
                    f"{where}.{side_name}.key: {key!r} is not a field of {side_desc}{hint}"
                )
        lt, rt = sides["left"][0][lk].type, sides["right"][0][rk].type
        if lt not in SCALAR_TYPES or rt not in SCALAR_TYPES:
            bad = lk if lt not in SCALAR_TYPES else rk
            raise ValueError(
                f"{where}.left.key: {bad!r} is of type "
                f"{(lt if lt not in SCALAR_TYPES else rt).value}; join keys are string, int, "
                "float, bool or timestamp fields"
            )
        numeric = {FieldType.INT, FieldType.FLOAT}
        if lt != rt and not (lt in numeric and rt in numeric):
            raise ValueError(
                f"{where}.right.key: {rk!r} is {rt.value} but the left key {lk!r} is {lt.value}; "
                "join keys must have compatible types"
                + (f" (key {i + 1})" if len(step.left.key) > 1 else "")
            )


def _output_scope(
    step: Join, where: str, sides: dict[str, tuple[dict[str, FieldRef], str]]
) -> dict[str, FieldRef]:
    scope: dict[str, FieldRef] = {}
    for i, out in enumerate(step.output):
        side_scope, side_desc = sides[out.from_]
        if out.field not in side_scope:
            raise ValueError(
                f"{where}.output[{i}].field: {out.field!r} is not a field of the {out.from_} "
                + (side_desc if side_desc.startswith("source") else f"side ({side_desc})")
            )
        if out.name in scope:
            raise ValueError(
                f"{where}.output[{i}].as: the output name {out.name!r} is used twice; "
                "rename one with as"
            )
        if out.column in {f.column for f in scope.values()}:
            raise ValueError(
                f"{where}.output[{i}].as: {out.name!r} collides with another output name "
                "once dots become '__'"
            )
        scope[out.name] = FieldRef(out.name, out.column, side_scope[out.field].type)
    return scope
