"""The Kafka source: start offset, SASL, TLS and what is refused, with GlassFlow field paths."""

from __future__ import annotations

import base64

import pytest

from streamsift.config import parse_pipeline
from streamsift.config.glassflow import convert_glassflow, glassflow_to_yaml, import_glassflow

from .documents import DELETE, PEM, changed, example, names_the_field


def test_start_from_latest() -> None:
    doc = changed(example("v3"), "sources[0].consumer_group_initial_offset", "LATEST")
    assert convert_glassflow(doc)["source"]["start_from"] == "latest"
    doc = changed(example("v3"), "sources[0].consumer_group_initial_offset", DELETE)
    assert convert_glassflow(doc)["source"]["start_from"] == "earliest"  # GlassFlow's default


def test_sasl_credentials() -> None:
    doc = changed(
        example("v3"),
        "sources[0].connection_params",
        {
            "brokers": ["k1:9092", "k2:9092"],
            "protocol": "SASL_SSL",
            "mechanism": "SCRAM-SHA-512",
            "username": "etl",
            "password": "s3cret",
            "skip_tls_verification": True,
        },
    )
    source = convert_glassflow(doc)["source"]
    assert source["bootstrap_servers"] == "k1:9092,k2:9092"
    assert source["security"] == {
        "protocol": "SASL_SSL",
        "mechanism": "SCRAM-SHA-512",
        "username": "etl",
        "password": "s3cret",
        "skip_tls_verification": True,
    }
    assert parse_pipeline(doc).primary_source.security.librdkafka()["sasl.password"] == "s3cret"


def test_skip_auth_drops_a_leftover_mechanism() -> None:
    doc = changed(
        example("v3"),
        "sources[0].connection_params",
        {"brokers": ["k:9092"], "protocol": "PLAINTEXT", "mechanism": "PLAIN", "skip_auth": True},
    )
    assert "security" not in convert_glassflow(doc)["source"]


@pytest.mark.parametrize("root_ca", [PEM, base64.b64encode(PEM.encode()).decode()])
def test_root_ca_is_kept_inline_as_a_librdkafka_property(root_ca: str) -> None:
    doc = changed(
        example("v3"),
        "sources[0].connection_params",
        {"brokers": ["k:9093"], "protocol": "SSL", "root_ca": root_ca},
    )
    result = import_glassflow(doc)
    source = result.document["source"]
    assert source["security"] == {"protocol": "SSL"}
    assert source["properties"] == {"ssl.ca.pem": PEM}
    assert any("source.security.ca_file" in n for n in result.notes)
    assert f"ssl.ca.pem: |\n      {PEM.splitlines()[0]}" in glassflow_to_yaml(doc)


# (format, path, value, the problem reported) in the Kafka source, each on the version's example.
INVALID = [
    ("v3", "sources[0].topic", " ", "sources[0].topic: kafka topic cannot be empty"),
    (
        "v3",
        "sources[0].connection_params",
        DELETE,
        "sources[0].connection_params: kafka source must declare connection_params",
    ),
    (
        "v3",
        "sources[0].connection_params.brokers",
        [],
        "sources[0].connection_params.brokers: must have at least one kafka server",
    ),
    (
        "v3",
        "sources[0].connection_params.brokers",
        ["k:1", ""],
        "sources[0].connection_params.brokers[1]: kafka server cannot be empty",
    ),
    (
        "v3",
        "sources[0].connection_params.brokers",
        ["kafka"],
        "sources[0].connection_params.brokers[0]: 'kafka' is not host:port",
    ),
    (
        "v3",
        "sources[0].connection_params.protocol",
        "TLS",
        "sources[0].connection_params.protocol: unsupported protocol 'TLS'; allowed: PLAINTEXT, SASL_PLAINTEXT, SSL, SASL_SSL",
    ),
    (
        "v3",
        "sources[0].connection_params",
        {"brokers": ["k:9092"], "protocol": "SASL_SSL", "mechanism": "PLAIN", "username": "u"},
        "sources[0].connection_params.password: SASL password cannot be empty",
    ),
    (
        "v3",
        "sources[0].connection_params",
        {
            "brokers": ["k:9092"],
            "protocol": "SASL_PLAINTEXT",
            "mechanism": "PLAIN",
            "password": "p",
        },
        "sources[0].connection_params.username: SASL username cannot be empty",
    ),
    (
        "v3",
        "sources[0].connection_params",
        {
            "brokers": ["k:9092"],
            "protocol": "SASL_SSL",
            "mechanism": "NO_AUTH",
            "username": "u",
            "password": "p",
        },
        "sources[0].connection_params.mechanism: protocol SASL_SSL needs mechanism PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; got NO_AUTH",
    ),
    (
        "v3",
        "sources[0].connection_params",
        {
            "brokers": ["k:9092"],
            "protocol": "PLAINTEXT",
            "mechanism": "PLAIN",
            "username": "u",
            "password": "p",
        },
        "sources[0].connection_params.mechanism: mechanism PLAIN needs protocol SASL_PLAINTEXT or SASL_SSL, "
        "got PLAINTEXT (or set skip_auth: true)",
    ),
    (
        "v3",
        "sources[0].connection_params",
        {
            "brokers": ["k:9092"],
            "protocol": "SASL_SSL",
            "mechanism": "GSSAPI",
            "kerberos_realm": "EXAMPLE.COM",
        },
        "sources[0].connection_params.username: GSSAPI needs the Kerberos user (username)",
    ),
    (
        "v3",
        "sources[0].connection_params",
        {"brokers": ["k:9092"], "protocol": "SSL", "client_key": "-----BEGIN PRIVATE KEY-----"},
        "sources[0].connection_params.client_cert: mutual TLS needs both client_cert and client_key",
    ),
    (
        "v3",
        "sources[0].connection_params",
        {"brokers": ["k:9092"], "protocol": "SSL", "root_ca": "hello"},
        "sources[0].connection_params.root_ca: not a PEM certificate (nor base64 of one): expected -----BEGIN CERTIFICATE-----",
    ),
    (
        "v3",
        "sources[0].consumer_group_initial_offset",
        "middle",
        "sources[0].consumer_group_initial_offset: invalid consumer_group_initial_offset; allowed values: earliest or latest",
    ),
]


test_invalid_glassflow_document_names_the_glassflow_field = names_the_field(INVALID)
