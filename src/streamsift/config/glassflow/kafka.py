"""A GlassFlow Kafka source read as our `source`: brokers, topic, start offset and security."""

from __future__ import annotations

import base64
import binascii
from typing import Any

from streamsift.config.glassflow.formats import refuse_format
from streamsift.config.glassflow.reader import Reader, blank
from streamsift.config.glassflow.values import decode_pem

_SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
_PROTOCOLS = ("PLAINTEXT", "SASL_PLAINTEXT", "SSL", "SASL_SSL")
_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
_NO_MECHANISM = ("", "NO_AUTH", "NONE")
_CERT_KEYS = ("client_cert", "tls_cert")
_KEY_KEYS = ("client_key", "tls_key")


def refuse_source_kind(kind_value: object, path: str) -> list[str]:
    """The refusal of a source type other than kafka and the three OTLP signals."""
    kind = str(kind_value or "kafka").strip().lower()
    if kind in ("kafka", "otlp.logs", "otlp.traces", "otlp.metrics"):
        return []
    return [
        f"{path}.type: unsupported source type {kind!r}; use kafka, otlp.logs, otlp.traces "
        "or otlp.metrics"
    ]


def refuse_source_extras(src: dict[str, Any], path: str, registry_ok: bool = False) -> list[str]:
    """The refusals of a Schema Registry and of message formats streamsift cannot read here
    (v3 files read Avro and Protobuf with a registry: config/glassflow/formats.py)."""
    if registry_ok:
        return refuse_format(src, path)
    refused = []
    if src.get("schema_registry") not in (None, {}, ""):
        refused.append(
            f"{path}.schema_registry: Schema Registry is read from v3 pipeline files only; "
            "migrate the file to v3"
        )
    fmt = src.get("format")
    if fmt not in (None, "") and str(fmt).strip().lower() != "json":
        refused.append(f"{path}.format: {fmt!r} messages are read from v3 files only")
    return refused


def kafka_source(
    r: Reader,
    conn: dict[str, Any] | None,
    conn_path: str,
    holder: dict[str, Any],
    holder_path: str,
    topic_key: str,
    source_name: str | None,
) -> dict[str, Any]:
    """Our `source` (without schema) from a connection object and a topic holder."""
    source: dict[str, Any] = {}
    if source_name:
        source["name"] = source_name
    r.origin("source", holder_path)
    r.origin("source.name", f"{holder_path}.source_id")
    if conn is not None:
        brokers = read_brokers(r, conn, f"{conn_path}.brokers")
        if brokers:
            source["bootstrap_servers"] = brokers
    r.origin("source.bootstrap_servers", f"{conn_path}.brokers")
    topic = r.text(
        holder, topic_key, f"{holder_path}.{topic_key}", empty="kafka topic cannot be empty"
    )
    if topic is not None:
        source["topic"] = topic
    r.origin("source.topic", f"{holder_path}.{topic_key}")
    offset_path = f"{holder_path}.consumer_group_initial_offset"
    offset = r.text(holder, "consumer_group_initial_offset", offset_path)
    r.origin("source.start_from", offset_path)
    if offset is not None:
        if offset.lower() not in ("earliest", "latest"):
            r.problem(
                offset_path,
                "invalid consumer_group_initial_offset; allowed values: earliest or latest",
            )
        else:
            source["start_from"] = offset.lower()
    else:
        source["start_from"] = "earliest"
    if conn is not None:
        security, properties = read_security(r, conn, conn_path)
        if security:
            source["security"] = security
        if properties:
            source["properties"] = properties
    r.origin("source.security", conn_path)
    r.origin("source.properties", conn_path)
    return source


def read_brokers(r: Reader, conn: dict[str, Any], path: str) -> str | None:
    """`brokers` (a list, or a comma-separated string) as our `bootstrap_servers`."""
    value = conn.get("brokers")
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not value:
        r.problem(path, "must have at least one kafka server")
        return None
    servers = []
    for i, server in enumerate(value):
        if not isinstance(server, str) or not server.strip():
            r.problem(f"{path}[{i}]", "kafka server cannot be empty")
            continue
        host, _, port = server.strip().rpartition(":")
        if not host or not port.isdigit():
            r.problem(f"{path}[{i}]", f"{server!r} is not host:port")
            continue
        servers.append(server.strip())
    return ",".join(servers) if servers else None


def read_security(
    r: Reader, conn: dict[str, Any], path: str
) -> tuple[dict[str, Any], dict[str, str]]:
    """Our `source.security` and librdkafka `properties` from GlassFlow's connection_params."""
    protocol = r.text(conn, "protocol", f"{path}.protocol") or "PLAINTEXT"
    if protocol not in _PROTOCOLS:
        r.problem(
            f"{path}.protocol",
            f"unsupported protocol {protocol!r}; allowed: {', '.join(_PROTOCOLS)}",
        )
        return {}, {}
    mechanism = (r.text(conn, "mechanism", f"{path}.mechanism") or "").upper()
    skip_auth = r.flag(conn, "skip_auth", f"{path}.skip_auth")
    security: dict[str, Any] = {}
    if protocol != "PLAINTEXT":
        security["protocol"] = protocol
    if mechanism == "GSSAPI" or any(
        not blank(conn.get(k)) for k in ("kerberos_service_name", "kerberos_keytab")
    ):
        if protocol not in _SASL_PROTOCOLS:
            r.problem(
                f"{path}.protocol",
                f"GSSAPI needs protocol SASL_PLAINTEXT or SASL_SSL, got {protocol}",
            )
        else:
            security["mechanism"] = "GSSAPI"
            kerberos = read_kerberos(r, conn, path)
            if kerberos is not None:
                security["kerberos"] = kerberos
    elif conn.get("iam_enable"):
        security.update(read_aws_iam(r, conn, path))
    elif protocol in _SASL_PROTOCOLS:
        security.update(read_sasl(r, conn, path, protocol, mechanism))
    elif mechanism not in _NO_MECHANISM and not skip_auth:
        r.problem(
            f"{path}.mechanism",
            f"mechanism {mechanism} needs protocol SASL_PLAINTEXT or SASL_SSL, got {protocol} "
            "(or set skip_auth: true)",
        )
    if r.flag(conn, "skip_tls_verification", f"{path}.skip_tls_verification"):
        security["skip_tls_verification"] = True
    security.update(read_client_certificate(r, conn, path, protocol))
    properties: dict[str, str] = {}
    root_ca = conn.get("root_ca")
    if not blank(root_ca):
        pem = r.parsed(root_ca, f"{path}.root_ca", decode_pem)
        if pem is not None:
            properties["ssl.ca.pem"] = pem
            r.notes.append(
                "the Kafka CA certificate (root_ca) is kept inline as the librdkafka property "
                "source.properties.ssl.ca.pem; to use a file instead, delete it and set "
                "source.security.ca_file"
            )
    return security, properties


def read_sasl(
    r: Reader, conn: dict[str, Any], path: str, protocol: str, mechanism: str
) -> dict[str, Any]:
    """The SASL mechanism, username and password of a SASL_PLAINTEXT or SASL_SSL connection."""
    security: dict[str, Any] = {}
    if mechanism not in _MECHANISMS:
        shown = mechanism or "none"
        r.problem(
            f"{path}.mechanism",
            f"protocol {protocol} needs mechanism {', '.join(_MECHANISMS)}; got {shown}",
        )
    else:
        security["mechanism"] = mechanism
    username = r.text(conn, "username", f"{path}.username", empty="SASL username cannot be empty")
    password = conn.get("password")
    if not isinstance(password, str) or not password:
        r.problem(f"{path}.password", "SASL password cannot be empty")
    if username is not None:
        security["username"] = username
    if isinstance(password, str) and password:
        security["password"] = password
    return security


def read_kerberos(r: Reader, conn: dict[str, Any], path: str) -> dict[str, Any] | None:
    """GlassFlow's Kerberos fields as our `security.kerberos`: the principal is the username
    in the realm; the keytab and krb5.conf are files or, as GlassFlow's UI stores them, inline
    (the keytab base64, possibly as a data URL)."""
    out: dict[str, Any] = {}
    service = r.text(conn, "kerberos_service_name", f"{path}.kerberos_service_name")
    out["service_name"] = service or "kafka"
    username = r.text(conn, "username", f"{path}.username")
    realm = r.text(conn, "kerberos_realm", f"{path}.kerberos_realm")
    if not username:
        r.problem(f"{path}.username", "GSSAPI needs the Kerberos user (username)")
        return None
    out["principal"] = username if "@" in username or not realm else f"{username}@{realm}"
    keytab = r.text(conn, "kerberos_keytab", f"{path}.kerberos_keytab")
    if not keytab:
        r.problem(f"{path}.kerberos_keytab", "GSSAPI needs the keytab (kerberos_keytab)")
        return None
    if _is_path(keytab):
        out["keytab"] = keytab
    else:
        inline = keytab.split("base64,", 1)[1] if keytab.startswith("data:") else keytab
        try:
            base64.b64decode("".join(inline.split()), validate=True)
        except binascii.Error:
            r.problem(f"{path}.kerberos_keytab", "neither a file path nor a base64 keytab")
            return None
        out["keytab_base64"] = "".join(inline.split())
    config = r.text(conn, "kerberos_config", f"{path}.kerberos_config")
    if config:
        out["krb5_config" if _is_path(config) else "krb5_config_text"] = config
    return out


def read_aws_iam(r: Reader, conn: dict[str, Any], path: str) -> dict[str, Any]:
    """AWS MSK IAM (`iam_enable`): SASL_SSL + OAUTHBEARER with the aws_msk_iam token callback."""
    region = r.text(conn, "iam_region", f"{path}.iam_region") or r.text(
        conn, "aws_region", f"{path}.aws_region"
    )
    if not region:
        r.problem(f"{path}.iam_region", "AWS IAM authentication needs the cluster's region")
        return {}
    return {
        "protocol": "SASL_SSL",
        "mechanism": "OAUTHBEARER",
        "oauthbearer": {"token_provider": "aws_msk_iam", "args": {"region": region}},
    }


def read_client_certificate(
    r: Reader, conn: dict[str, Any], path: str, protocol: str
) -> dict[str, Any]:
    """Mutual TLS: GlassFlow's client certificate and key (PEM, or base64 of PEM)."""
    found: dict[str, Any] = {}
    for keys, ours in ((_CERT_KEYS, "client_cert_pem"), (_KEY_KEYS, "client_key_pem")):
        key = next((k for k in keys if not blank(conn.get(k))), None)
        if key is None:
            continue
        pem = r.parsed(conn[key], f"{path}.{key}", decode_pem)
        if pem is not None:
            found[ours] = pem
    if found and protocol not in ("SSL", "SASL_SSL"):
        r.problem(
            f"{path}.protocol",
            f"a client certificate needs protocol SSL or SASL_SSL, got {protocol}",
        )
        return {}
    if len(found) == 1:
        missing = "client_key" if "client_cert_pem" in found else "client_cert"
        r.problem(f"{path}.{missing}", "mutual TLS needs both client_cert and client_key")
        return {}
    password = conn.get("client_key_password")
    if found and isinstance(password, str) and password:
        found["client_key_password"] = password
    return found


def _is_path(text: str) -> bool:
    return "\n" not in text and text.startswith(("/", "./", "~/")) and len(text) < 4096
