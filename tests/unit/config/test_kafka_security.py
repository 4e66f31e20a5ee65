"""Kafka connections as users have them: Kerberos, mutual TLS, skip_tls_verification and
OAUTHBEARER (OIDC or a token callback such as AWS MSK IAM), mapped to librdkafka settings;
GlassFlow's connection fields imported; secrets redacted in reprs, dumps, dead letters and
the service's store. (The bundled broker does no auth: tests/integration/test_kafka_auth.py
shows the refusal a broker gives.)"""

from __future__ import annotations

import base64
import json
import os
import stat
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from streamsift.config import parse_pipeline
from streamsift.config.glassflow.importer import import_glassflow
from streamsift.config.kafka_security import KafkaSecurity, is_secret_property
from streamsift.config.secrets import get_path, secret_paths, secret_values
from streamsift.sources.errors import SourceError
from streamsift.sources.kafka_auth import client_config, token_callback
from support.pipeline_docs import fields, mapping, pipeline_doc

KEYTAB = b"\x05\x02fake-keytab-bytes"
PEM_CERT = "-----BEGIN CERTIFICATE-----\nMIIBcert\n-----END CERTIFICATE-----\n"
PEM_KEY = "-----BEGIN PRIVATE KEY-----\nMIIEkey-secret\n-----END PRIVATE KEY-----\n"


def fake_token(args: dict[str, str]) -> tuple[str, float]:
    """A token provider as a user writes one (`package.module:function`)."""
    return f"token-for-{args['audience']}", 1_900_000_000


def security(**kw: Any) -> KafkaSecurity:
    return KafkaSecurity.model_validate(kw)


def test_kerberos_with_a_keytab_file_maps_to_librdkafka() -> None:
    props = security(
        protocol="SASL_SSL",
        mechanism="GSSAPI",
        kerberos={"principal": "etl@EXAMPLE.COM", "keytab": "/etc/etl.keytab"},
        ca_file="/etc/ca.pem",
    ).librdkafka()
    assert props == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "GSSAPI",
        "sasl.kerberos.service.name": "kafka",
        "sasl.kerberos.principal": "etl@EXAMPLE.COM",
        "sasl.kerberos.keytab": "/etc/etl.keytab",
        "ssl.ca.location": "/etc/ca.pem",
    }


def test_an_inline_keytab_and_krb5_conf_become_private_files(monkeypatch) -> None:
    monkeypatch.delenv("KRB5_CONFIG", raising=False)
    sec = security(
        protocol="SASL_PLAINTEXT",
        mechanism="GSSAPI",
        kerberos={
            "principal": "etl@EXAMPLE.COM",
            "service_name": "kafka-prod",
            "keytab_base64": base64.b64encode(KEYTAB).decode(),
            "krb5_config_text": "[libdefaults]\n default_realm = EXAMPLE.COM\n",
        },
    )
    conf = client_config({"bootstrap.servers": "k:9092", **sec.librdkafka()})
    assert not any(k.startswith("streamsift.") for k in conf)
    keytab = Path(conf["sasl.kerberos.keytab"])
    assert keytab.read_bytes() == KEYTAB
    assert stat.S_IMODE(keytab.stat().st_mode) == 0o600
    assert stat.S_IMODE(keytab.parent.stat().st_mode) == 0o700
    assert conf["sasl.kerberos.service.name"] == "kafka-prod"
    assert Path(os.environ["KRB5_CONFIG"]).read_text().startswith("[libdefaults]")
    assert "fake-keytab" not in repr(sec) and base64.b64encode(KEYTAB).decode() not in repr(sec)


def test_mutual_tls_with_and_without_sasl() -> None:
    files = security(
        protocol="SASL_SSL",
        mechanism="SCRAM-SHA-512",
        username="etl",
        password="pw-secret",
        client_cert_file="/certs/client.pem",
        client_key_file="/certs/client.key",
        client_key_password="key-secret",
    ).librdkafka()
    assert files["ssl.certificate.location"] == "/certs/client.pem"
    assert files["ssl.key.location"] == "/certs/client.key"
    assert files["ssl.key.password"] == "key-secret"
    assert (files["sasl.mechanism"], files["sasl.username"]) == ("SCRAM-SHA-512", "etl")
    inline = security(protocol="SSL", client_cert_pem=PEM_CERT, client_key_pem=PEM_KEY)
    assert inline.librdkafka() == {
        "security.protocol": "SSL",
        "ssl.certificate.pem": PEM_CERT,
        "ssl.key.pem": PEM_KEY,
    }
    assert inline.describe() == "SSL with a client certificate"


def test_skip_tls_verification_turns_off_certificate_and_host_checks() -> None:
    props = security(protocol="SSL", skip_tls_verification=True).librdkafka()
    assert props["enable.ssl.certificate.verification"] == "false"
    assert props["ssl.endpoint.identification.algorithm"] == "none"


def test_oauthbearer_oidc_maps_to_librdkafka() -> None:
    props = security(
        protocol="SASL_SSL",
        mechanism="OAUTHBEARER",
        oauthbearer={
            "token_endpoint_url": "https://idp.example.com/token",
            "client_id": "etl",
            "client_secret": "oidc-secret",
            "scope": "kafka",
            "extensions": {"logicalCluster": "lkc-1", "identityPoolId": "pool-2"},
        },
    ).librdkafka()
    assert props == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "OAUTHBEARER",
        "sasl.oauthbearer.method": "oidc",
        "sasl.oauthbearer.token.endpoint.url": "https://idp.example.com/token",
        "sasl.oauthbearer.client.id": "etl",
        "sasl.oauthbearer.client.secret": "oidc-secret",
        "sasl.oauthbearer.scope": "kafka",
        "sasl.oauthbearer.extensions": "identityPoolId=pool-2,logicalCluster=lkc-1",
    }


def test_a_token_callback_is_resolved_where_the_client_is_made() -> None:
    sec = security(
        protocol="SASL_SSL",
        mechanism="OAUTHBEARER",
        oauthbearer={"token_provider": f"{__name__}:fake_token", "args": {"audience": "msk"}},
    )
    conf = client_config(sec.librdkafka())
    assert conf["sasl.oauthbearer.config"] == '{"audience": "msk"}'
    assert conf["oauth_cb"](conf["sasl.oauthbearer.config"]) == ("token-for-msk", 1.9e9)


def test_aws_msk_iam_names_the_package_it_needs() -> None:
    sec = security(
        protocol="SASL_SSL",
        mechanism="OAUTHBEARER",
        oauthbearer={"token_provider": "aws_msk_iam", "args": {"region": "eu-west-1"}},
    )
    oauth_cb = client_config(sec.librdkafka())["oauth_cb"]
    with pytest.raises(SourceError, match="pip install aws-msk-iam-sasl-signer-python"):
        oauth_cb(json.dumps({"region": "eu-west-1"}))
    with pytest.raises(SourceError, match="cannot load 'nowhere.module:token'"):
        token_callback("nowhere.module:token")


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"protocol": "SASL_SSL", "mechanism": "GSSAPI"}, "kerberos (principal, keytab) goes with"),
        (
            {"protocol": "SASL_SSL", "mechanism": "GSSAPI", "kerberos": {"principal": "a"}},
            "give the keytab as a file (keytab) or inline (keytab_base64)",
        ),
        (
            {"protocol": "SASL_SSL", "mechanism": "PLAIN", "username": "u", "password": "p",
             "kerberos": {"principal": "a", "keytab": "/k"}},
            "kerberos (principal, keytab) goes with mechanism GSSAPI",
        ),
        ({"protocol": "SASL_SSL", "mechanism": "OAUTHBEARER"}, "oauthbearer (OIDC credentials"),
        (
            {"protocol": "SASL_SSL", "mechanism": "OAUTHBEARER",
             "oauthbearer": {"token_provider": "aws_msk_iam"}},
            "aws_msk_iam needs args.region",
        ),
        (
            {"protocol": "SASL_SSL", "mechanism": "OAUTHBEARER",
             "oauthbearer": {"client_id": "x", "token_provider": "aws_msk_iam"}},
            "give either OIDC client credentials",
        ),
        (
            {"protocol": "SASL_SSL", "mechanism": "OAUTHBEARER",
             "oauthbearer": {"token_endpoint_url": "https://i/t", "client_id": "x"}},
            "OIDC needs client_secret",
        ),
        (
            {"protocol": "SASL_PLAINTEXT", "mechanism": "PLAIN", "username": "u", "password": "p",
             "client_cert_file": "/c", "client_key_file": "/k"},
            "a client certificate (mutual TLS) needs protocol SSL or SASL_SSL, not SASL_PLAINTEXT",
        ),
        ({"protocol": "SSL", "client_cert_file": "/c"}, "mutual TLS needs both"),
        (
            {"protocol": "SSL", "client_cert_file": "/c", "client_cert_pem": PEM_CERT,
             "client_key_file": "/k"},
            "as files or as PEM, not both",
        ),
    ],
)  # fmt: skip
def test_incomplete_security_is_refused_naming_what_is_missing(
    settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        security(**settings)


def secure_pipeline() -> Any:
    doc = pipeline_doc(
        fields=fields(("id", "string")),
        mapping=mapping(("id", "id", "String")),
        source={
            "security": {
                "protocol": "SASL_SSL",
                "mechanism": "OAUTHBEARER",
                "oauthbearer": {
                    "token_endpoint_url": "https://idp/token",
                    "client_id": "etl",
                    "client_secret": "oidc-secret-1",
                },
                "client_cert_pem": PEM_CERT,
                "client_key_pem": PEM_KEY,
                "client_key_password": "key-secret-2",
            },
            "properties": {"ssl.keystore.password": "store-secret-3"},
        },
    )
    return doc, parse_pipeline(doc)


SECRETS = ("oidc-secret-1", "MIIEkey-secret", "key-secret-2", "store-secret-3")


def test_secrets_are_redacted_in_reprs_dumps_and_dead_letters() -> None:
    doc, pipeline = secure_pipeline()
    shown = [repr(pipeline), str(pipeline.primary_source.security), pipeline.model_dump_json()]
    for text in shown:
        assert not any(s in text for s in SECRETS[:3]), text
    # a dead letter's error text is masked with every secret of the pipeline
    assert set(SECRETS) <= set(secret_values(pipeline)) | {"MIIEkey-secret"}
    assert PEM_KEY in secret_values(pipeline)
    # the service encrypts every one at rest and masks it in its answers
    paths = list(secret_paths(pipeline, doc))
    sealed = {json.dumps(get_path(doc, p)) for p in paths}
    for secret in SECRETS:
        assert any(secret in s for s in sealed), secret
    assert is_secret_property("ssl.key.pem") and not is_secret_property("ssl.ca.location")


CONN = {"brokers": ["k:9093"], "protocol": "SASL_SSL"}


def import_source(connection: dict[str, Any]) -> dict[str, Any]:
    doc = {
        "version": "v3",
        "pipeline_id": "auth-demo",
        "sources": [
            {
                "type": "kafka",
                "source_id": "events",
                "connection_params": connection,
                "topic": "events",
                "schema_fields": [{"name": "id", "type": "string"}],
            }
        ],
        "sink": {
            "type": "clickhouse",
            "connection_params": {
                "host": "ch",
                "port": "9000",
                "http_port": "8123",
                "database": "default",
                "username": "default",
                "password": "pw",
            },
            "table": "events",
            "max_batch_size": 100,
            "mapping": [{"name": "id", "column_name": "id", "column_type": "String"}],
        },
    }
    return import_glassflow(doc).document["source"]


def test_glassflow_kerberos_fields_import() -> None:
    keytab = base64.b64encode(KEYTAB).decode()
    source = import_source(
        {
            **CONN,
            "mechanism": "GSSAPI",
            "username": "etl",
            "kerberos_service_name": "kafka",
            "kerberos_realm": "EXAMPLE.COM",
            "kerberos_keytab": f"data:application/octet-stream;base64,{keytab}",
            "kerberos_config": "[libdefaults]\n default_realm = EXAMPLE.COM",
        }
    )
    assert source["security"] == {
        "protocol": "SASL_SSL",
        "mechanism": "GSSAPI",
        "kerberos": {
            "service_name": "kafka",
            "principal": "etl@EXAMPLE.COM",
            "keytab_base64": keytab,
            "krb5_config_text": "[libdefaults]\n default_realm = EXAMPLE.COM",
        },
    }


def test_glassflow_mutual_tls_and_iam_fields_import() -> None:
    tls = import_source(
        {
            "brokers": ["k:9093"],
            "protocol": "SSL",
            "client_cert": base64.b64encode(PEM_CERT.encode()).decode(),
            "client_key": PEM_KEY,
            "skip_tls_verification": True,
        }
    )
    assert tls["security"] == {
        "protocol": "SSL",
        "skip_tls_verification": True,
        "client_cert_pem": PEM_CERT,
        "client_key_pem": PEM_KEY,
    }
    iam = import_source({**CONN, "iam_enable": True, "iam_region": "eu-west-1"})
    assert iam["security"] == {
        "protocol": "SASL_SSL",
        "mechanism": "OAUTHBEARER",
        "oauthbearer": {"token_provider": "aws_msk_iam", "args": {"region": "eu-west-1"}},
    }
