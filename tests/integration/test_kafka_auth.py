"""A broker that refuses our authentication, against the bundled broker (tansu, which does no
SASL and no TLS): the run ends at once with one error naming the broker, the security
protocol and mechanism and the broker's answer, and no secret in it or in the logs. This is
what a real Kafka with another listener answers too (docs/configuration.md says which
mechanisms were tried against which broker)."""

from __future__ import annotations

import logging
import time

import pytest

from streamsift.config import parse_pipeline
from streamsift.engine.query import read_spec
from streamsift.sources.errors import SourceError, SourceUnavailable
from streamsift.sources.kafka import KafkaStreamReader
from support.pipeline_docs import fields, mapping, pipeline_doc

pytestmark = pytest.mark.integration
SECRET = "s3cr3t-never-shown"


def reader(broker, topic: str, security: dict, timeout: str = "20s") -> KafkaStreamReader:
    pipeline = parse_pipeline(
        pipeline_doc(
            topic=topic,
            fields=fields(("id", "string")),
            mapping=mapping(("id", "id", "String")),
            bootstrap_servers=broker.bootstrap_servers,
            source={"security": security, "connect_timeout": timeout},
        )
    )
    return KafkaStreamReader(read_spec(pipeline, pipeline.primary_source), None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("security", "named"),
    [
        (
            {"protocol": "SASL_PLAINTEXT", "mechanism": "PLAIN", "username": "etl", "password": SECRET},
            "sasl.mechanism PLAIN: SASL PLAIN mechanism handshake failed",
        ),
        (
            {"protocol": "SASL_PLAINTEXT", "mechanism": "SCRAM-SHA-512", "username": "etl",
             "password": SECRET},
            "sasl.mechanism SCRAM-SHA-512: SASL SCRAM-SHA-512 mechanism handshake failed",
        ),
        (
            {"protocol": "SASL_PLAINTEXT", "mechanism": "OAUTHBEARER",
             "oauthbearer": {"token_endpoint_url": "http://127.0.0.1:1/token", "client_id": "etl",
                             "client_secret": SECRET}},
            "sasl.mechanism OAUTHBEARER",
        ),
    ],
)  # fmt: skip
def test_a_refused_authentication_ends_at_once_naming_the_setting(
    broker, unique_name, caplog, security, named
):
    broker.create_topic(unique_name, 1)
    caplog.set_level(logging.DEBUG)
    started = time.monotonic()
    with pytest.raises(SourceError) as err:
        reader(broker, unique_name, security).initialOffset()
    message = str(err.value)
    assert not isinstance(err.value, SourceUnavailable)  # not retried: the broker said no
    assert time.monotonic() - started < 15  # well inside the 20 s connect timeout
    assert message.startswith(
        f"Kafka at {broker.bootstrap_servers} refused the connection (reading topic "
        f"'{unique_name}') with "
    )
    assert "security.protocol SASL_PLAINTEXT" in message and named in message
    assert SECRET not in message and SECRET not in caplog.text


def test_tls_against_a_plaintext_listener_times_out_naming_the_protocol(broker, unique_name):
    broker.create_topic(unique_name, 1)
    with pytest.raises(SourceUnavailable) as err:
        reader(
            broker, unique_name, {"protocol": "SSL", "skip_tls_verification": True}, "2s"
        )._partitions()
    assert "did not answer for topic" in str(err.value)
    assert "(source.connect_timeout 2s; security.protocol SSL)" in str(err.value)


def test_kerberos_without_librdkafka_support_is_one_clear_error(broker, unique_name, tmp_path):
    from confluent_kafka import Consumer, KafkaException

    try:  # the PyPI wheels' librdkafka has no GSSAPI (no libsasl2); a system build may
        Consumer(
            {"group.id": "g", "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "GSSAPI"}
        ).close()
        pytest.skip("this librdkafka supports GSSAPI: the refusal is a real KDC's to give")
    except KafkaException:
        pass
    keytab = tmp_path / "etl.keytab"
    keytab.write_bytes(b"\x05\x02")
    security = {
        "protocol": "SASL_PLAINTEXT",
        "mechanism": "GSSAPI",
        "kerberos": {"principal": "etl@EXAMPLE.COM", "keytab": str(keytab)},
    }
    with pytest.raises(SourceError) as err:
        reader(broker, unique_name, security).initialOffset()
    text = str(err.value)
    assert text.startswith("cannot make a Kafka client with security.protocol SASL_PLAINTEXT, ")
    assert "sasl.mechanism GSSAPI" in text and "GSSAPI" in text.split(": ", 1)[1]
