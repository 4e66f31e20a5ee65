"""Property-based tests: bad configuration and bad payloads only ever give clean errors,
parsing paths agree, and dedup decides the same whether a range runs once or is replayed."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streamsift.config import ConfigError, parse_pipeline
from streamsift.config.types import FieldType
from streamsift.transforms.dedup.partition import PartitionDedup
from streamsift.transforms.parse import FieldSpec, JsonParser
from support.pipeline_docs import fields, mapping, pipeline_doc

VALID = pipeline_doc(
    name="props",
    topic="t",
    fields=fields(("id", "string"), ("user.id", "int"), ("ts", "timestamp")),
    event_time="ts",
    dedup={"key": "id", "time_window": "1h"},
    clickhouse={"path": "/tmp/x"},
    mapping=mapping(("id", "id", "String"), ("user.id", "uid", "Int64")),
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(node, prefix=()):
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            yield from _paths(v, (*prefix, i))


ALL_PATHS = [p for p in _paths(VALID) if p]


@st.composite
def mutated_docs(draw):
    doc = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 3))):
        path = draw(st.sampled_from(ALL_PATHS))
        parent = doc
        try:
            for part in path[:-1]:
                parent = parent[part]
            action = draw(st.sampled_from(["delete", "replace", "extra"]))
            if action == "delete" and isinstance(parent, dict):
                parent.pop(path[-1], None)
            elif action == "extra" and isinstance(parent, dict):
                parent[draw(st.text(min_size=1, max_size=8))] = draw(json_values)
            else:
                parent[path[-1]] = draw(json_values)
        except (KeyError, IndexError, TypeError):
            continue
    return doc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_docs())
def test_any_mangled_pipeline_gives_a_pipeline_or_a_clean_config_error(doc):
    try:
        parse_pipeline(doc)
    except ConfigError as exc:
        assert exc.problems and all(isinstance(p, str) and p for p in exc.problems)
        assert all("Traceback" not in p for p in exc.problems)


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_any_yaml_text_gives_a_clean_error(text):
    from streamsift.config import load_pipeline

    path = Path("/tmp/streamsift-prop.yaml")
    path.write_text(text)
    try:
        load_pipeline(path)
    except ConfigError as exc:
        assert exc.problems


FIELDS = [
    FieldSpec("s", "s", FieldType.STRING),
    FieldSpec("n", "n", FieldType.INT),
    FieldSpec("f", "f", FieldType.FLOAT),
    FieldSpec("b", "b", FieldType.BOOL),
    FieldSpec("t", "t", FieldType.TIMESTAMP),
    FieldSpec("a", "a", FieldType.ARRAY),
    FieldSpec("u.id", "u__id", FieldType.STRING),
]
value_for = {
    "s": st.text(max_size=5) | st.integers(),
    "n": st.integers(-(2**64), 2**64) | st.floats(allow_nan=False) | st.text(max_size=3),
    "f": st.floats(allow_nan=False, allow_infinity=False)
    | st.integers(-1000, 1000)
    | st.booleans(),
    "b": st.booleans() | st.integers(0, 1),
    "t": st.sampled_from(
        [
            "2024-01-01T00:00:00Z",
            "2024-01-01 10:00:00",
            "2024-02-30T00:00:00",
            "x",
            "2024-05-05T01:02:03.5+02:00",
        ]
    )
    | st.integers(0, 2_000_000_000),
    "a": st.lists(st.text(max_size=3), max_size=3) | st.lists(st.integers(), max_size=2),
    "u": st.fixed_dictionaries({"id": st.text(max_size=4)}) | st.text(max_size=3) | st.none(),
}
records = st.fixed_dictionaries({}, optional={k: v for k, v in value_for.items()})
payloads = st.one_of(
    records.map(lambda r: json.dumps(r).encode()),
    st.binary(max_size=30),
    st.none(),
    json_values.map(lambda v: json.dumps(v).encode()),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(payloads, min_size=1, max_size=12))
def test_parsing_never_raises_and_flags_each_bad_record(values):
    result = JsonParser(FIELDS).parse(values)
    assert result.table.num_rows == len(values) == len(result.errors)
    for raw, err in zip(values, result.errors, strict=True):
        if raw is None:
            assert err is not None
        if err is not None:
            assert isinstance(err, str) and err


@settings(max_examples=300, deadline=None)
@given(st.lists(records, min_size=1, max_size=12))
def test_fast_path_agrees_with_the_reference_parser(rows):
    parser = JsonParser(FIELDS)
    values = [json.dumps(r).encode() for r in rows]
    fast = parser._parse_fast(values)
    slow = parser._parse_slow(values)
    if fast is not None:  # the fast path may decline; when it answers it must agree
        assert all(e is None for e in slow.errors)
        assert fast.to_pylist() == slow.table.to_pylist()


def _reference(events, window):
    """First-wins dedup with the documented window rule, no lateness (all in order)."""
    ref: dict[str, int] = {}
    keep = []
    for key, t in events:
        if key in ref and abs(t - ref[key]) < window:
            keep.append(False)
        else:
            ref[key] = t
            keep.append(True)
    return keep


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    st.lists(st.tuples(st.sampled_from("abcd"), st.integers(0, 50)), min_size=1, max_size=40),
    st.lists(st.integers(1, 10), min_size=1, max_size=6),
    st.integers(0, 5),
)
def test_dedup_replays_decide_like_a_single_run(tmp_path_factory, steps, cuts, replay_at):
    # Non-decreasing event times, so no record is late and the reference applies as is.
    times = []
    t = 0
    for key, delta in steps:
        t += delta
        times.append((key, t))
    window = 30
    dedup = PartitionDedup(tmp_path_factory.mktemp("dd") / "p0", window)
    keep: list[bool] = []
    start = 0
    ranges = []
    for c in cuts:
        if start >= len(times):
            break
        ranges.append((start, min(len(times), start + c)))
        start += c
    if start < len(times):
        ranges.append((start, len(times)))
    for i, (lo, hi) in enumerate(ranges):
        keys = [k.encode() for k, _ in times[lo:hi]]
        ts = [t for _, t in times[lo:hi]]
        offsets = list(range(lo, hi))
        if i == replay_at:  # a crashed attempt, then the replay of the same range
            dedup.decide(keys, ts, offsets, lo)
        keep += dedup.decide(keys, ts, offsets, lo).keep
    assert keep == _reference(times, window)
