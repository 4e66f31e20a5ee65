"""The one-line error of a row ClickHouse refused, as a DLQ row shows it."""

from __future__ import annotations

import pytest

from streamsift.config import parse_pipeline
from streamsift.config.secrets import secret_values
from streamsift.engine.batch_writer import sink_error_class
from streamsift.sinks.clickhouse.error_text import row_error
from support.pipeline_docs import fields, mapping, pipeline_doc

CHDB_UUID = (
    "insert into t: Code: 376. DB::Exception: Code: 376. DB::Exception: Cannot parse uuid nope: "
    "Cannot parse UUID from String: while converting column `id` from type String to type UUID: "
    "(in file/uri /tmp/tmpzz1dizn9.raw): While executing ArrowIPCBlockInputFormat: While "
    "executing File: data for INSERT was parsed from file. (CANNOT_PARSE_UUID) (version "
    "26.9.2.1). (CANNOT_PARSE_UUID)"
)
HTTP_UUID = (
    "insert into t: Received ClickHouse exception, code: 376, server response: Code: 376. "
    "DB::Exception: Cannot parse uuid nope: Cannot parse UUID from String. (CANNOT_PARSE_UUID) "
    "(version 25.3.1.1 (official build))\nStack trace:\n0. DB::Exception::Exception() @ 0x1 "
    "(for url http://ch.example:8123)"
)
UUID_LINE = (
    "ClickHouse error 376: Cannot parse uuid nope: Cannot parse UUID from String: while "
    "converting column `id` from type String to type UUID (CANNOT_PARSE_UUID)"
)


@pytest.mark.parametrize(
    ("message", "line"),
    [
        (CHDB_UUID, UUID_LINE),
        (
            HTTP_UUID,
            "ClickHouse error 376: Cannot parse uuid nope: Cannot parse UUID from String. "
            "(CANNOT_PARSE_UUID)",
        ),
        (
            "insert into t2: Code: 469. DB::Exception: Constraint `c` for table default.t2 is "
            "violated at row 1. Expression: (length(id) < 3). Column values: id = 'nope'. "
            "(VIOLATED_CONSTRAINT)",
            "ClickHouse error 469: Constraint `c` for table default.t2 is violated at row 1. "
            "Expression: (length(id) < 3). Column values: id = 'nope'. (VIOLATED_CONSTRAINT)",
        ),
        ("insert into t: something odd", "ClickHouse error 6: something odd"),
    ],
)
def test_one_clean_line(message, line):
    code = int(line.split()[2].rstrip(":"))
    assert row_error(code, message) == line
    assert sink_error_class(line) == f"clickhouse_{code}"


def test_secrets_are_masked_and_the_line_is_bounded():
    line = row_error(6, "insert into t: Code: 6. DB::Exception: s3cret! " + "x" * 5000, ["s3cret"])
    assert "s3cret" not in line and "***" in line and len(line) <= 1000


def test_the_pipeline_passwords_are_the_secrets_masked():
    pipeline = parse_pipeline(
        pipeline_doc(
            name="orders",
            topic="orders",
            source={
                "security": {
                    "protocol": "SASL_PLAINTEXT",
                    "mechanism": "PLAIN",
                    "username": "u",
                    "password": "kafka-pw",
                },
                "properties": {"ssl.key.password": "key-pw"},
            },
            fields=fields(("id", "string")),
            clickhouse={"host": "ch.example", "password": "ch-pw"},
            mapping=mapping(("id", "id", "String")),
        )
    )
    assert sorted(secret_values(pipeline)) == ["ch-pw", "kafka-pw", "key-pw"]
