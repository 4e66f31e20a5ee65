"""Schema inference from sample messages: dot paths, types, event-time and key candidates."""

from __future__ import annotations

from streamsift.config.types import FieldType
from streamsift.service.authoring.schema_inference import infer_schema


def by_name(samples: list) -> dict:
    return {f.name: f for f in infer_schema(samples).fields}


def test_nested_objects_become_dot_paths_with_their_types() -> None:
    fields = by_name(
        [
            {"id": "a1", "user": {"id": 7, "geo": {"lat": 1.5}}, "tags": ["x"], "ok": True},
            {"id": "a2", "user": {"id": 8, "geo": {"lat": 2}}, "tags": [], "ok": False},
        ]
    )
    assert {n: f.type for n, f in fields.items()} == {
        "id": FieldType.STRING,
        "user.id": FieldType.INT,
        "user.geo.lat": FieldType.FLOAT,  # an int among floats: float
        "tags": FieldType.ARRAY,
        "ok": FieldType.BOOL,
    }
    assert fields["user.id"].examples == (7, 8)


def test_missing_or_null_values_make_a_field_nullable() -> None:
    fields = by_name([{"a": 1, "b": None}, {"a": 2}, {"a": 3, "b": "x", "c": 1}])
    assert not fields["a"].nullable
    assert fields["b"].nullable and fields["b"].type is FieldType.STRING
    assert fields["c"].nullable


def test_timestamps_and_mixed_values() -> None:
    fields = by_name(
        [
            {"ts": "2026-01-02T03:04:05Z", "code": "20260102", "mixed": 1, "when": "2026-01-02"},
            {"ts": "2026-01-02 03:04:06", "code": "20260103", "mixed": "one", "when": "soon"},
        ]
    )
    assert fields["ts"].type is FieldType.TIMESTAMP
    assert fields["code"].type is FieldType.STRING  # digits are ids, not times
    assert fields["mixed"].type is FieldType.JSON
    assert fields["when"].type is FieldType.STRING  # not every value is a time


def test_objects_with_keys_that_are_not_field_names_stay_whole() -> None:
    fields = by_name([{"headers": {"content type": "x"}}, {"headers": {"a b": "y"}}])
    assert fields["headers"].type is FieldType.MAP


def test_a_path_that_is_sometimes_an_object_keeps_its_fields() -> None:
    fields = by_name([{"a": {"b": 1}}, {"a": 5}])
    assert list(fields) == ["a.b"]
    assert fields["a.b"].nullable


def test_event_time_candidates_timestamps_first_then_epoch_numbers() -> None:
    result = infer_schema(
        [
            {
                "created_ms": 1_767_000_000_000,
                "sent": 1_767_000_000,
                "at": "2026-01-01T00:00:00Z",
                "n": 5,
            },
            {
                "created_ms": 1_767_000_001_000,
                "sent": 1_767_000_001,
                "at": "2026-01-01T00:00:01Z",
                "n": 6,
            },
        ]
    )
    kinds = [(c.name, c.kind) for c in result.event_time_candidates]
    assert kinds == [("at", "timestamp"), ("sent", "epoch_seconds"), ("created_ms", "epoch_millis")]
    assert "/ 1000" in result.event_time_candidates[2].note


def test_dedup_key_candidates_are_present_everywhere_and_unique() -> None:
    result = infer_schema(
        [
            {"event_id": "e1", "user": 1, "n": 1, "maybe": "m1"},
            {"event_id": "e2", "user": 1, "n": 2},
            {"event_id": "e3", "user": 2, "n": 3, "maybe": "m3"},
        ]
    )
    assert result.dedup_key_candidates == ("event_id", "n")


def test_non_objects_are_skipped_and_counted() -> None:
    result = infer_schema([{"a": 1}, [1, 2], "text", None])
    assert (result.samples, result.skipped) == (1, 3)
    assert result.dedup_key_candidates == ()  # one sample proves nothing
