"""How a ClickHouse probe words a client's error (service/authoring/probes.py `server_failure`): by kind,
with the HTTP status or ClickHouse's error code, never with what the peer sent."""

from __future__ import annotations

import pytest

from streamsift.errors import PermanentError, TransientError
from streamsift.service.authoring.probes import _kafka_reason, server_failure
from streamsift.service.errors import ClickHouseRefused, ClickHouseUnreachable, NotClickHouse

WHERE = "http://10.0.0.5:8123"
PEER = "SECRET internal page"


@pytest.mark.parametrize(
    ("text", "kind", "words"),
    [
        (
            f"connecting: Unexpected response to server version query: '{PEER}'",
            NotClickHouse,
            ["not a ClickHouse", "HTTP status 200"],
        ),
        (
            f"HTTP driver received HTTP status 404, server response: {PEER} (for url x)",
            NotClickHouse,
            ["HTTP status 404"],
        ),
        (
            f"HTTP driver received HTTP status 401, server response: {PEER}",
            ClickHouseRefused,
            ["authentication refused", "401"],
        ),
        (
            "HTTP driver received HTTP status 403, server response: Code: 516. DB::Exception: "
            f"{PEER}: Authentication failed",
            ClickHouseRefused,
            ["authentication refused", "516"],
        ),
        (
            f"HTTP status 404, server response: Code: 81. DB::Exception: {PEER}",
            ClickHouseRefused,
            ["database does not exist", "81"],
        ),
        (f"HTTP status 503, server response: {PEER}", ClickHouseUnreachable, ["503"]),
        (
            "Error HTTPConnectionPool(host='10.0.0.5', port=8123): Max retries exceeded "
            "(Caused by NewConnectionError(... [Errno 111] Connection refused))",
            ClickHouseUnreachable,
            ["refused the connection"],
        ),
        (
            "Error HTTPSConnectionPool(...): (Caused by SSLError(SSLError(1, '[SSL: "
            "WRONG_VERSION_NUMBER] wrong version number')))",
            ClickHouseUnreachable,
            ["TLS handshake", "no TLS answer"],
        ),
        (
            "Caused by SSLError(SSLCertVerificationError(1, '[SSL: CERTIFICATE_VERIFY_FAILED] "
            f"certificate verify failed: Hostname mismatch, certificate is not valid for '{PEER}'",
            ClickHouseUnreachable,
            ["TLS handshake", "not trusted"],
        ),
        (
            f"Caused by ProtocolError('Connection aborted.', BadStatusLine('{PEER}'))",
            NotClickHouse,
            ["not HTTP"],
        ),
        ("Read timed out. (read timeout=3)", ClickHouseUnreachable, ["in time"]),
        (
            "NameResolutionError: Failed to resolve 'nope.example'",
            ClickHouseUnreachable,
            ["does not resolve"],
        ),
        (f"something else: {PEER}", ClickHouseUnreachable, ["could not reach"]),
    ],
)
def test_a_failure_is_said_by_kind(text: str, kind: type, words: list[str]) -> None:
    error = server_failure(WHERE, text)
    assert type(error) is kind
    assert isinstance(error, (TransientError, PermanentError))
    assert WHERE in error.message
    assert "SECRET" not in error.message and "internal page" not in error.message
    for word in words:
        assert word in error.message, error.message


def test_kafka_reason_drops_the_size_librdkafka_read_from_the_peer() -> None:
    text = (
        "127.0.0.1:9/bootstrap: Receive failed: Invalid response size 1414483781 "
        "(0..1000000000): increase receive.message.max.bytes"
    )
    reason = _kafka_reason(text)
    assert "1414483781" not in reason and "not Kafka's" in reason


@pytest.mark.parametrize(
    ("tail", "kind"),
    [
        ('{"error":"SECRET","error_description":"internal page"}', "refused the client"),
        ('Expected JSON response with "access_token" field', "no access_token"),
        ("Failed to connect to 127.0.0.1:9 after 0 ms: Could not connect", "could not be reached"),
    ],
)
def test_kafka_reason_does_not_quote_the_oidc_endpoint(tail: str, kind: str) -> None:
    reason = _kafka_reason(f"sasl: Failed to acquire SASL OAUTHBEARER token: {tail}")
    assert "SECRET" not in reason and "internal page" not in reason
    assert reason.startswith("sasl: Failed to acquire SASL OAUTHBEARER token: ")
    assert kind in reason
