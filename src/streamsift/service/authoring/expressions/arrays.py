"""Array, map and higher-order functions for the expression preview's interpreter.

Part of its allow-list (functions.py holds the table by name). Higher-order
functions apply their lambda through the interpreter, which binds the lambda's parameters as
names; every element walked costs a step of the budget, and no array or map is made past the
size limit (see interpreter.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from sqlglot import exp

from streamsift.service.authoring.expressions.casts import compare
from streamsift.service.authoring.expressions.values import (
    DeadLetter,
    Evaluator,
    NotPreviewable,
    items_size,
    kind_of,
    number,
    truth,
)


def array_of(value: Any, fn: str) -> list[Any]:
    if not isinstance(value, list):
        raise NotPreviewable(f"{fn}() on {kind_of(value)}")
    return value


def map_of(value: Any, fn: str) -> dict[Any, Any]:
    if not isinstance(value, dict):
        raise NotPreviewable(f"{fn}() on {kind_of(value)}")
    return value


def _size(value: Any) -> int:
    if isinstance(value, (list, dict)):
        return len(value)
    raise NotPreviewable(f"size() on {kind_of(value)}")


def _distinct(values: list[Any]) -> list[Any]:
    seen: set[Any] = set()
    out: list[Any] = []
    for v in array_of(values, "array_distinct"):
        if isinstance(v, (list, dict)):
            raise NotPreviewable("array_distinct() of arrays or maps")
        key = (type(v) is bool, v)  # true is not 1
        if key not in seen:
            seen.add(key)
            out.append(v)
    return out


def _array_extreme(pick: int, fn: str) -> Callable[[Any], Any]:
    def run(values: Any) -> Any:
        best = None
        for v in array_of(values, fn):
            if v is not None and (best is None or (compare(v, best) or 0) * pick > 0):
                best = v
        return best

    return run


def _array_position(values: Any, item: Any) -> int:
    for i, v in enumerate(array_of(values, "array_position")):
        if compare(v, item) == 0:
            return i + 1
    return 0


def _array_contains(values: Any, item: Any) -> Any:
    unknown = False
    for v in array_of(values, "array_contains"):
        c = compare(v, item)
        if c == 0:
            return True
        unknown = unknown or c is None
    return None if unknown else False


def _sequence(start: Any, stop: Any, step: Any = None) -> list[int]:
    start, stop = number(start), number(stop)
    if not isinstance(start, int) or not isinstance(stop, int):
        raise NotPreviewable("sequence() of something else than integers")
    step = int(number(step)) if step is not None else (1 if stop >= start else -1)
    if step == 0 or (stop - start) * step < 0:
        raise DeadLetter("sequence(): the step does not lead from start to stop")
    items_size((stop - start) // step + 1)
    return list(range(start, stop + (1 if step > 0 else -1), step))


def _array_repeat(item: Any, times: Any) -> Any:
    if times is None:
        return None
    items_size(int(number(times)))
    return [item] * max(int(number(times)), 0)


def _flatten(values: Any) -> Any:
    outer = array_of(values, "flatten")
    if any(v is None for v in outer):
        return None
    inner = [array_of(v, "flatten") for v in outer]
    items_size(sum(len(v) for v in inner))
    return [x for v in inner for x in v]


def _element_at(ev: Evaluator, args: list[exp.Expression], env: Mapping[str, Any]) -> Any:
    (tree,) = args
    if len(tree.expressions) != 1:
        raise NotPreviewable("an index of this form")
    target, key = ev.value(tree.this, env), ev.value(tree.expressions[0], env)
    if target is None or key is None:
        return None
    safe = bool(tree.args.get("safe"))
    if isinstance(target, dict):
        if isinstance(key, (list, dict)):
            raise NotPreviewable("a map key that is an array or a map")
        return target.get(key)
    target, index = array_of(target, "element_at"), number(key)
    if not isinstance(index, int):
        raise NotPreviewable("an array index that is not an integer")
    offset = tree.args.get("offset") or 0
    if offset == 1 and index == 0:
        raise DeadLetter("element_at(): the index 0 is invalid (indexes start at 1)")
    position = index - offset if (offset == 0 or index > 0) else len(target) + index
    if 0 <= position < len(target):
        return target[position]
    if safe:
        return None
    raise DeadLetter(f"the index {index} is out of the array's range")


def _make_map(keys: Any, values: Any) -> dict[Any, Any]:
    keys, values = array_of(keys, "map"), array_of(values, "map")
    if any(k is None for k in keys):
        raise DeadLetter("a map key is null")
    if any(isinstance(k, (list, dict)) for k in keys):
        raise NotPreviewable("map() with arrays or maps as keys")
    return dict(zip(keys, values, strict=False))


# ---------------------------------------------------------------- higher-order functions


def _hofarray_of(ev: Evaluator, args: list[exp.Expression], env: Mapping[str, Any], fn: str):
    if len(args) < 2:
        raise NotPreviewable(f"{fn}() without a lambda")
    values = ev.value(args[0], env)
    return None if values is None else array_of(values, fn)


def _indexed(ev: Evaluator, lam: exp.Expression, values: list[Any], env: Mapping[str, Any]):
    for i, v in enumerate(values):
        ev.budget.spend()
        yield v, ev.apply(lam, [v, i], env)


def _transform(ev: Evaluator, args: list[exp.Expression], env: Mapping[str, Any]) -> Any:
    values = _hofarray_of(ev, args, env, "transform")
    return None if values is None else [r for _, r in _indexed(ev, args[1], values, env)]


def _filter(ev: Evaluator, args: list[exp.Expression], env: Mapping[str, Any]) -> Any:
    values = _hofarray_of(ev, args, env, "filter")
    if values is None:
        return None
    return [v for v, keep in _indexed(ev, args[1], values, env) if truth(keep) is True]


def _quantifier(decides: bool, fn: str) -> Callable[..., Any]:
    def run(ev: Evaluator, args: list[exp.Expression], env: Mapping[str, Any]) -> Any:
        values = _hofarray_of(ev, args, env, fn)
        if values is None:
            return None
        unknown = False
        for v in values:
            ev.budget.spend()
            hit = truth(ev.apply(args[1], [v], env))
            if hit is decides:
                return decides
            unknown = unknown or hit is None
        return None if unknown else not decides

    return run


def _aggregate(ev: Evaluator, args: list[exp.Expression], env: Mapping[str, Any]) -> Any:
    if len(args) < 3:
        raise NotPreviewable("aggregate() without a merge lambda")
    values = ev.value(args[0], env)
    acc = ev.value(args[1], env)
    if values is None:
        return None
    for v in array_of(values, "aggregate"):
        ev.budget.spend()
        acc = ev.apply(args[2], [acc, v], env)
    if len(args) > 3 and not isinstance(args[3], exp.Null):
        acc = ev.apply(args[3], [acc], env)
    return acc


def _zip_with(ev: Evaluator, args: list[exp.Expression], env: Mapping[str, Any]) -> Any:
    if len(args) != 3:
        raise NotPreviewable("zip_with() without two arrays and a lambda")
    left, right = ev.value(args[0], env), ev.value(args[1], env)
    if left is None or right is None:
        return None
    left, right = array_of(left, "zip_with"), array_of(right, "zip_with")
    out = []
    for i in range(max(len(left), len(right))):
        ev.budget.spend()
        a = left[i] if i < len(left) else None
        b = right[i] if i < len(right) else None
        out.append(ev.apply(args[2], [a, b], env))
    return out


def _map_hof(fn: str) -> Callable[..., Any]:
    def run(ev: Evaluator, args: list[exp.Expression], env: Mapping[str, Any]) -> Any:
        if len(args) != 2:
            raise NotPreviewable(f"{fn}() without a map and a lambda")
        target = ev.value(args[0], env)
        if target is None:
            return None
        out = {}
        for k, v in map_of(target, fn).items():
            ev.budget.spend()
            result = ev.apply(args[1], [k, v], env)
            if fn == "map_filter" and truth(result) is True:
                out[k] = v
            elif fn == "transform_values":
                out[k] = result
            elif fn == "transform_keys":
                if result is None or isinstance(result, (list, dict)):
                    raise DeadLetter("transform_keys(): a key is null or not plain")
                out[result] = v
        return out

    return run


ARRAY_LAZY: dict[str, Callable[[Evaluator, list[exp.Expression], Mapping[str, Any]], Any]] = {
    "element_at": _element_at,
    "transform": _transform,
    "filter": _filter,
    "exists": _quantifier(True, "exists"),
    "forall": _quantifier(False, "forall"),
    "aggregate": _aggregate,
    "reduce": _aggregate,
    "zip_with": _zip_with,
    "map_filter": _map_hof("map_filter"),
    "transform_values": _map_hof("transform_values"),
    "transform_keys": _map_hof("transform_keys"),
}

ARRAY_STRICT: dict[str, Callable[..., Any]] = {
    "map_keys": lambda m: list(map_of(m, "map_keys")),
    "map_values": lambda m: list(map_of(m, "map_values").values()),
    "size": _size,
    "cardinality": _size,
    "array_size": lambda a: len(array_of(a, "array_size")),
    "array": lambda *items: list(items),
    "array_contains": _array_contains,
    "array_distinct": _distinct,
    "array_max": _array_extreme(1, "array_max"),
    "array_min": _array_extreme(-1, "array_min"),
    "array_position": _array_position,
    "flatten": _flatten,
    "sequence": _sequence,
    "array_repeat": _array_repeat,
    "map": _make_map,
}
