"""expr-lang forms of GlassFlow's OTLP demos (`??`, map indexing, toFloat) translated to Spark
SQL, and what those translations give on sample records (the pure expression preview)."""

from __future__ import annotations

import pytest

from streamsift.config.glassflow.exprlang import ExprLangError, translate
from streamsift.config.otlp import OTLP_FIELDS, OtlpSignal
from streamsift.config.types import FieldType
from streamsift.service.authoring.expression_preview import evaluate

CELL = (
    "resource_attributes['cell.id'] ?? resource_attributes['ran.cell.id'] ?? "
    "resource_attributes['network.element.id']"
)
LATITUDE = "toFloat(resource_attributes['location.latitude'] ?? '0')"


@pytest.mark.parametrize(
    ("expr_lang", "spark"),
    [
        (
            CELL,
            "COALESCE(try_element_at(`resource_attributes`, 'cell.id'), "
            "try_element_at(`resource_attributes`, 'ran.cell.id'), "
            "try_element_at(`resource_attributes`, 'network.element.id'))",
        ),
        (
            LATITUDE,
            "CAST(COALESCE(try_element_at(`resource_attributes`, 'location.latitude'), '0') "
            "AS DOUBLE)",
        ),
        ("toInt(count) * 2", "(CAST(`count` AS BIGINT) * 2)"),
        ('attributes["k"] == "v"', "(try_element_at(`attributes`, 'k') = 'v')"),
        # `??` binds tighter than every other binary operator and than unary minus (expr-lang)
        ("a + b ?? 1", "(`a` + COALESCE(`b`, 1))"),
        ("-a ?? 2", "(-COALESCE(`a`, 2))"),
        ("(a ?? b) > 1 || c", "(((COALESCE(`a`, `b`)) > 1) OR `c`)"),
        # map literals (the observability-v2 traces demo's PII redaction): string values
        (
            "{'service.name': resource_attributes['service.name'], 'user_email': '[REDACTED]'}",
            "map_from_arrays(array('service.name', 'user_email'), "
            "array(CAST(try_element_at(`resource_attributes`, 'service.name') AS STRING), "
            "'[REDACTED]'))",
        ),
        ('{"n": 1}', "map_from_arrays(array('n'), array(CAST(1 AS STRING)))"),
        ("{}", "CAST(map_from_arrays(array(), array()) AS MAP<STRING, STRING>)"),
        # GlassFlow's string functions and expr-lang's string operators
        ("upper(name) == 'A'", "(upper(`name`) = 'A')"),
        ("lower(trim(name))", "lower(trim(`name`))"),
        (
            "hasPrefix(path, '/g/') && !hasSuffix(path, '.js')",
            ("(startswith(`path`, '/g/') AND (NOT endswith(`path`, '.js')))"),
        ),
        ("containsStr(path, '/api/')", "contains(`path`, '/api/')"),
        (
            "path contains 'x' || name startsWith 'a'",
            ("(contains(`path`, 'x') OR startswith(`name`, 'a'))"),
        ),
        ("name endsWith 'z'", "endswith(`name`, 'z')"),
    ],
)
def test_demo_forms_are_translated(expr_lang: str, spark: str) -> None:
    assert translate(expr_lang) == spark


@pytest.mark.parametrize(
    ("expr_lang", "why"),
    [
        ("tags[0]", "only a string key is translated in [...] (map['key'])"),
        ("toFloat(a, b)", "toFloat() takes 1 argument"),
        ("split(name, ',')", "function calls (split(...)) are not translated"),
        ("upper(a, b)", "upper() takes 1 argument"),
        ("hasPrefix(a)", "hasPrefix() takes 2 arguments"),
        ("{a: 1, 2: 3}", "a map literal's keys are strings"),
        ("a ?? ", "it ends too early"),
    ],
)
def test_other_forms_are_refused_by_name(expr_lang: str, why: str) -> None:
    with pytest.raises(ExprLangError, match=r"cannot translate GlassFlow expression") as err:
        translate(expr_lang)
    assert why in str(err.value)


METRIC_FIELDS = OTLP_FIELDS[OtlpSignal.METRICS]
RECORDS = [
    ({"cell.id": "c-1", "ran.cell.id": "r-1", "location.latitude": "52.52"}, "c-1", 52.52),
    ({"ran.cell.id": "r-2", "network.element.id": "ne-2"}, "r-2", 0.0),
    ({"network.element.id": "ne-3", "location.latitude": "-33.9"}, "ne-3", -33.9),
    ({}, None, 0.0),
]


@pytest.mark.parametrize(("resource", "cell", "latitude"), RECORDS)
def test_the_5g_computed_fields_on_sample_records(
    resource: dict[str, str], cell: str | None, latitude: float
) -> None:
    record = {"metric_name": "ran.rsrp", "resource_attributes": resource}
    got = evaluate(translate(CELL), METRIC_FIELDS, record, FieldType.STRING)
    assert got.value == cell
    mode = evaluate(
        translate("resource_attributes['network.mode'] ?? ''"),
        METRIC_FIELDS,
        record,
        FieldType.STRING,
    )
    assert mode.value == ""
    assert evaluate(translate(LATITUDE), METRIC_FIELDS, record, FieldType.FLOAT).value == latitude


def test_the_5g_filter_drops_healthchecks_only() -> None:
    keep = translate("metric_name != 'ran.healthcheck'")
    for name, passes in (("ran.healthcheck", False), ("ran.rsrp", True)):
        assert evaluate(keep, METRIC_FIELDS, {"metric_name": name}).passes is passes


def test_a_latitude_that_is_not_a_number_would_be_a_dead_letter() -> None:
    record = {"resource_attributes": {"location.latitude": "north"}}
    got = evaluate(translate(LATITUDE), METRIC_FIELDS, record, FieldType.FLOAT)
    assert got.value is None and "DLQ" in (got.note or "")
