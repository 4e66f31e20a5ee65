"""Import GlassFlow for ClickHouse pipeline JSON (v1, v2 and v3) as a streamsift pipeline.

GlassFlow documents come in three shapes (see docs/configuration.md, "Importing GlassFlow
pipelines"): v1 (no `version` key, `source.topics[]`, `sink.table_mapping`), v2 (`"version":
"2.0.0"` or `"v2"`, top-level `schema.fields`) and v3 (`"version": "v3"`, `sources[]`,
`transforms[]`, `sink.connection_params`, `sink.mapping`). `convert_glassflow` turns any of
them into OUR document (a plain dict that `Pipeline.model_validate` accepts).

Joins (v3 `join.left_source/right_source`, v1/v2 `join.sources[]` by orientation), filters
and stateless transforms (expr-lang translated to Spark SQL, see exprlang.py), OTLP sources
(otlp.py), Avro and Protobuf with a Schema Registry (v3 files, formats.py), and Kafka's SASL
PLAIN/SCRAM, Kerberos, AWS MSK IAM and mutual TLS (kafka.py) are imported. What we cannot run
(another source type, several sources without a join, filters or stateless transforms with a
join, a registry or a non-JSON format in a v1/v2 file) is refused with a `ConfigError` naming
the GlassFlow field, never dropped silently. Problems are reported with GlassFlow's field
paths (`transforms[0].config.key: ...`) so users can find them in their own file.

The package, one module a job: `importer` (versions, the conversion, YAML), `reader` (typed
access that names GlassFlow's fields in problems), `values` (durations, base64, PEM, type
names), `kafka`, `formats`, `otlp`, `schema`, `dedup`, `transforms` (with `exprlang`),
`clickhouse`, `joins`, `document`, `v3`, `legacy` and `legacy_join` (v1/v2) with
`legacy_common`; `export` turns a streamsift document back into GlassFlow's v3 shape.
"""

from __future__ import annotations

from streamsift.config.glassflow.importer import (
    GlassFlowImport,
    convert_glassflow,
    glassflow_to_yaml,
    glassflow_version,
    import_glassflow,
)
from streamsift.config.glassflow.values import parse_go_duration

__all__ = [
    "GlassFlowImport",
    "convert_glassflow",
    "glassflow_to_yaml",
    "glassflow_version",
    "import_glassflow",
    "parse_go_duration",
]
