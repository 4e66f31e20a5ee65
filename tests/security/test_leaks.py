"""Finding 7 of the security review: answers that leak what a peer said, or crash.

Against a real `streamsift serve` on loopback:
- the connection helpers say what kind of failure they met, never what the peer answered
  (a loopback HTTP server that answers a secret stands in for an internal service);
- `--allow-connect` refuses a destination outside the list before any connection is made
  (a loopback listener counts the connections it sees);
- input that crashed the parser or a client (deep nesting, huge integers, an OAUTHBEARER
  provider that fails) is a 4xx naming the problem, never a 5xx;
- names ending in a newline (or holding other control characters) are refused;
- GlassFlow's free text is capped; a native DELETE forgets the GlassFlow copy too.
"""

from __future__ import annotations

import contextlib
import http.server
import json
import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import yaml

from support.paths import REPO
from support.servers import Serve
from support.waiting import wait_for

from .conftest import PROBE_TIMEOUT_S

SECRET = "TOPSECRET-internal-7f3a"


# ------------------------------------------------------------------ helpers


class SecretServer:
    """A loopback HTTP server answering every request with `status` and a body holding the
    secret; counts the requests it saw."""

    def __init__(self, status: int, content_type: str = "text/plain") -> None:
        outer = self
        self.requests = 0

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                self._answer()

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                self._answer()

            def _answer(self) -> None:
                outer.requests += 1
                body = f"{SECRET} internal admin page {SECRET}\n".encode()
                if content_type == "application/json":
                    body = json.dumps({"error": SECRET, "detail": "internal admin page"}).encode()
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Listener:
    """A loopback TCP listener that counts connections and answers each with the secret."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            with contextlib.suppress(OSError):
                conn.sendall(f"{SECRET}\r\n".encode())
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self.sock.close()


@pytest.fixture
def secret_server() -> Iterator[Callable[..., SecretServer]]:
    made: list[SecretServer] = []

    def make(status: int, content_type: str = "text/plain") -> SecretServer:
        made.append(SecretServer(status, content_type))
        return made[-1]

    yield make
    for s in made:
        s.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    one = Listener()
    yield one
    one.close()


def error_of(answer: httpx.Response, *statuses: int) -> dict[str, Any]:
    """The error body of an answer whose status is one of `statuses` (never a 5xx crash)."""
    assert answer.status_code in statuses, (answer.status_code, answer.text)
    body = answer.json()
    assert set(body) == {"status", "code", "message", "details"}, body
    return body


def users_doc(server: Serve | None = None, **changes: Any) -> dict[str, Any]:
    doc = yaml.safe_load((REPO / "examples/pipelines/users-dedup.yaml").read_text())
    if server is not None:
        doc["sink"]["clickhouse"]["path"] = str(server.data_dir / "clickhouse")
    doc.update(changes)
    return doc


def post_doc(client: httpx.Client, path: str, body: str | bytes, yaml_body: bool = False) -> Any:
    kind = "application/yaml" if yaml_body else "application/json"
    return client.post(path, content=body, headers={"Content-Type": kind})


# ------------------------------------------------------------------ SSRF read-back


@pytest.mark.parametrize("status", [200, 401, 403, 404, 500])
def test_clickhouse_probe_says_what_kind_of_failure_not_what_the_peer_said(
    client: httpx.Client, secret_server: Callable[..., SecretServer], status: int
) -> None:
    peer = secret_server(status)
    conn = {"host": "127.0.0.1", "port": peer.port, "password": "pw-not-shown"}
    for path, body in (
        ("/api/v1/connections/clickhouse/test", conn),
        ("/api/v1/connections/clickhouse/columns", {**conn, "table": "orders"}),
    ):
        answer = client.post(path, json=body)
        assert peer.requests >= 1, "the probe must have reached the peer"
        assert SECRET not in answer.text
        assert "internal admin" not in answer.text
        assert "pw-not-shown" not in answer.text
        error = error_of(answer, 400, 401, 403, 502, 503)
        message = error["message"]
        assert f"127.0.0.1:{peer.port}" in message, message
        if status == 200:
            assert "not a ClickHouse" in message, message
        elif status in (401, 403):
            assert "authentication" in message.lower(), message
        else:
            assert f"HTTP status {status}" in message, message


def test_clickhouse_probe_of_a_peer_that_is_not_http(
    client: httpx.Client, listener: Listener
) -> None:
    answer = client.post(
        "/api/v1/connections/clickhouse/test", json={"host": "127.0.0.1", "port": listener.port}
    )
    assert listener.connections >= 1
    assert SECRET not in answer.text
    message = error_of(answer, 502, 503)["message"]
    assert f"127.0.0.1:{listener.port}" in message


def test_clickhouse_probe_names_refused_and_tls_failures(
    client: httpx.Client, secret_server: Callable[..., SecretServer]
) -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    refused = client.post(
        "/api/v1/connections/clickhouse/test", json={"host": "127.0.0.1", "port": closed}
    )
    assert "refused" in error_of(refused, 503)["message"]
    plain = secret_server(200)  # TLS spoken to a plain HTTP server
    tls = client.post(
        "/api/v1/connections/clickhouse/test",
        json={"host": "127.0.0.1", "port": plain.port, "secure": True},
    )
    assert SECRET not in tls.text
    assert "TLS" in error_of(tls, 502, 503)["message"]


def test_kafka_helpers_do_not_echo_a_peer_that_is_not_kafka(
    client: httpx.Client, listener: Listener
) -> None:
    servers = f"127.0.0.1:{listener.port}"
    for path, body in (
        ("/api/v1/connections/kafka/test", {"bootstrap_servers": servers}),
        ("/api/v1/schemas/sample", {"bootstrap_servers": servers, "topic": "t"}),
        ("/api/v1/schemas/infer", {"bootstrap_servers": servers, "topic": "t"}),
    ):
        answer = client.post(path, json=body)
        assert SECRET not in answer.text
        # librdkafka reads the first 4 bytes of a non-Kafka answer as a size and says it:
        # that number is the peer's bytes too.
        assert str(int.from_bytes(SECRET[:4].encode(), "big")) not in answer.text
        error_of(answer, 503)


# ------------------------------------------------------------------ --allow-connect


@pytest.fixture(scope="module")
def fenced_server(serve_factory: Callable[..., Serve]) -> Serve:
    return serve_factory("--allow-connect", "10.1.2.0/24", "--allow-connect", "kafka.example")


@pytest.fixture(scope="module")
def loopback_allowed(serve_factory: Callable[..., Serve]) -> Serve:
    return serve_factory("--allow-connect", "127.0.0.1")


def helper_requests(host: str, port: int) -> list[tuple[str, dict[str, Any], str]]:
    servers = f"{host}:{port}"
    ch = {"host": host, "port": port}
    return [
        ("/api/v1/connections/kafka/test", {"bootstrap_servers": servers}, "bootstrap_servers"),
        ("/api/v1/connections/kafka/topics", {"bootstrap_servers": servers}, "bootstrap_servers"),
        ("/api/v1/schemas/sample", {"bootstrap_servers": servers, "topic": "t"}, "bootstrap"),
        ("/api/v1/schemas/infer", {"bootstrap_servers": servers, "topic": "t"}, "bootstrap"),
        ("/api/v1/connections/clickhouse/test", ch, "host"),
        ("/api/v1/connections/clickhouse/columns", {**ch, "table": "t"}, "host"),
    ]


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_allow_connect_refuses_a_destination_outside_the_list_before_connecting(
    fenced_server: Serve, listener: Listener, host: str
) -> None:
    with httpx.Client(base_url=fenced_server.url, timeout=60) as http_client:
        for path, body, field in helper_requests(host, listener.port):
            answer = http_client.post(path, json=body)
            message = error_of(answer, 403)["message"]
            assert field in message and host in message, message
            assert "--allow-connect" in message, message
        # one broker of the list outside: the whole request is refused
        mixed = http_client.post(
            "/api/v1/connections/kafka/test",
            json={"bootstrap_servers": f"10.1.2.3:9092,{host}:{listener.port}"},
        )
        error_of(mixed, 403)
    time.sleep(0.3)
    assert listener.connections == 0


def test_allow_connect_lets_a_listed_address_through(
    loopback_allowed: Serve, listener: Listener
) -> None:
    with httpx.Client(base_url=loopback_allowed.url, timeout=60) as http_client:
        answer = http_client.post(
            "/api/v1/connections/clickhouse/test",
            json={"host": "127.0.0.1", "port": listener.port},
        )
        assert answer.status_code != 403, answer.text
        assert SECRET not in answer.text
        # a name that resolves to a listed address is allowed too
        named = http_client.post(
            "/api/v1/connections/clickhouse/test",
            json={"host": "localhost", "port": listener.port},
        )
        assert named.status_code != 403, named.text
        assert listener.connections >= 1
        # anything else is not
        other = http_client.post(
            "/api/v1/connections/clickhouse/test", json={"host": "10.9.9.9", "port": 8123}
        )
        error_of(other, 403)


def test_without_allow_connect_samples_given_inline_need_no_destination(
    fenced_server: Serve,
) -> None:
    with httpx.Client(base_url=fenced_server.url, timeout=60) as http_client:
        answer = http_client.post("/api/v1/schemas/infer", json={"samples": [{"a": 1}]})
        assert answer.status_code == 200, answer.text


# ------------------------------------------------------------------ parser crashes


def deep_json(depth: int, kind: str) -> str:
    if kind == "array":
        return "[" * depth + "]" * depth
    return '{"a":' * depth + "1" + "}" * depth


DOC_ROUTES = [
    ("post", "/api/v1/pipelines/validate"),
    ("post", "/api/v1/pipelines"),
    ("put", "/api/v1/pipelines/nope"),
]


@pytest.mark.parametrize("kind", ["array", "object"])
@pytest.mark.parametrize(("method", "path"), DOC_ROUTES)
def test_deeply_nested_json_is_a_4xx_naming_the_depth(
    client: httpx.Client, kind: str, method: str, path: str
) -> None:
    for depth in (10_000, 200):
        body = '{"name": "deep", "x": ' + deep_json(depth, kind) + "}"
        answer = client.request(
            method, path, content=body, headers={"Content-Type": "application/json"}
        )
        message = error_of(answer, 400, 422)["message"]
        assert "deep" in message or "nest" in message, message


@pytest.mark.parametrize(
    "text",
    [
        "x: " + "[" * 10_000 + "]" * 10_000,
        "x: " + "{a: " * 5_000 + "1" + "}" * 5_000,
        "".join(f"{'  ' * i}a{i}:\n" for i in range(1_200)) + "  " * 1_200 + "b: 1\n",
        "x: &a [*a]\n",
        "x: &a {k: *a}\n",
    ],
    ids=["flow-lists", "flow-maps", "block-maps", "alias-to-itself-list", "alias-to-itself-map"],
)
def test_deeply_nested_or_self_referring_yaml_is_a_4xx(client: httpx.Client, text: str) -> None:
    for _, path in DOC_ROUTES[:1]:
        answer = post_doc(client, path, text, yaml_body=True)
        message = error_of(answer, 400, 422)["message"]
        assert any(w in message for w in ("deep", "nest", "refers to itself")), message


def test_yaml_aliases_within_the_depth_still_work(client: httpx.Client) -> None:
    doc = users_doc()
    text = yaml.safe_dump(doc) + "anchors: {a: &x {b: 1}, c: *x}\n"
    answer = post_doc(client, "/api/v1/pipelines/validate", text, yaml_body=True)
    problems = error_of(answer, 422)["details"]["problems"]
    assert any(p.startswith("anchors") for p in problems), problems


@pytest.mark.parametrize("yaml_body", [False, True])
def test_a_5000_digit_integer_is_a_4xx(client: httpx.Client, yaml_body: bool) -> None:
    big = "9" * 5_000
    doc = users_doc()
    text = (
        json.dumps(doc).replace('"max_batch_size": 100000', f'"max_batch_size": {big}')
        if not yaml_body
        else yaml.safe_dump(doc).replace("max_batch_size: 100000", f"max_batch_size: {big}")
    )
    assert big in text
    for method, path in DOC_ROUTES:
        kind = "application/yaml" if yaml_body else "application/json"
        answer = client.request(method, path, content=text, headers={"Content-Type": kind})
        message = error_of(answer, 400, 422)["message"]
        assert "digits" in message, message
    # as a field of a helper route's body, too
    answer = client.post(
        "/api/v1/schemas/infer",
        content='{"samples": [{"n": ' + big + "}]}",
        headers={"Content-Type": "application/json"},
    )
    assert answer.status_code < 500, answer.text


@pytest.mark.parametrize("number", ["1e999", "-1e999", "1" + "0" * 400 + ".5"])
def test_huge_floats_are_no_crash(client: httpx.Client, number: str) -> None:
    text = json.dumps(users_doc()).replace(
        '"max_batch_size": 100000', f'"max_batch_size": {number}'
    )
    answer = post_doc(client, "/api/v1/pipelines/validate", text)
    error_of(answer, 400, 422)
    infer = client.post(
        "/api/v1/schemas/infer",
        content='{"samples": [{"n": ' + number + "}]}",
        headers={"Content-Type": "application/json"},
    )
    assert infer.status_code < 500, infer.text


def test_deep_json_on_a_helper_route_is_no_crash(client: httpx.Client) -> None:
    body = '{"samples": [' + deep_json(10_000, "array") + "]}"
    answer = client.post(
        "/api/v1/schemas/infer", content=body, headers={"Content-Type": "application/json"}
    )
    assert answer.status_code < 500, answer.text


# ------------------------------------------------------------------ OAUTHBEARER


def test_an_oauthbearer_provider_that_fails_is_no_500(
    client: httpx.Client, listener: Listener
) -> None:
    security = {
        "protocol": "SASL_PLAINTEXT",
        "mechanism": "OAUTHBEARER",
        "oauthbearer": {"token_provider": "aws_msk_iam", "args": {"region": "eu-west-1"}},
    }
    servers = f"127.0.0.1:{listener.port}"
    for path, body in (
        ("/api/v1/connections/kafka/test", {"bootstrap_servers": servers, "security": security}),
        ("/api/v1/connections/kafka/topics", {"bootstrap_servers": servers, "security": security}),
        (
            "/api/v1/schemas/sample",
            {"bootstrap_servers": servers, "security": security, "topic": "t"},
        ),
    ):
        answer = client.post(path, json=body)
        error = error_of(answer, 400, 422, 503)
        text = error["message"] + json.dumps(error["details"])
        assert "token" in text.lower() and "aws_msk_iam" in text, error


@pytest.mark.parametrize("peer", ["closed", "secret", "secret-json-400", "secret-json-200"])
def test_an_oidc_token_endpoint_that_fails_is_no_500_and_not_echoed(
    client: httpx.Client,
    listener: Listener,
    secret_server: Callable[..., SecretServer],
    peer: str,
) -> None:
    if peer == "closed":
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            url = f"http://127.0.0.1:{s.getsockname()[1]}/token"
    elif peer == "secret":
        url = f"http://127.0.0.1:{secret_server(200).port}/token"
    else:  # librdkafka quotes a JSON answer of the token endpoint in its error
        status = int(peer.rsplit("-", 1)[1])
        url = f"http://127.0.0.1:{secret_server(status, 'application/json').port}/token"
    security = {
        "protocol": "SASL_PLAINTEXT",
        "mechanism": "OAUTHBEARER",
        "oauthbearer": {"token_endpoint_url": url, "client_id": "c", "client_secret": "s3"},
    }
    answer = client.post(
        "/api/v1/connections/kafka/test",
        json={"bootstrap_servers": f"127.0.0.1:{listener.port}", "security": security},
    )
    assert SECRET not in answer.text
    error_of(answer, 400, 422, 502, 503)


def test_allow_connect_checks_the_oidc_token_endpoint(fenced_server: Serve) -> None:
    security = {
        "protocol": "SASL_PLAINTEXT",
        "mechanism": "OAUTHBEARER",
        "oauthbearer": {
            "token_endpoint_url": "http://127.0.0.1:9/token",
            "client_id": "c",
            "client_secret": "s3",
        },
    }
    with httpx.Client(base_url=fenced_server.url, timeout=60) as http_client:
        answer = http_client.post(
            "/api/v1/connections/kafka/test",
            json={"bootstrap_servers": "10.1.2.3:9092", "security": security},
        )
    assert "token_endpoint_url" in error_of(answer, 403)["message"]


# ------------------------------------------------------------------ names ending in a newline


@pytest.mark.parametrize("tail", ["\n", "\r", "\x00", "\r\n"])
def test_names_with_a_trailing_control_character_are_refused(
    client: httpx.Client, open_server: Serve, tail: str
) -> None:
    cases: list[tuple[str, Callable[[dict[str, Any]], None]]] = [
        ("name", lambda d: d.__setitem__("name", "nl" + tail)),
        ("sink.table", lambda d: d["sink"].__setitem__("table", "t" + tail)),
        ("source.topic", lambda d: d["source"].__setitem__("topic", "users" + tail)),
        (
            "sink.mapping[0].column",
            lambda d: d["sink"]["mapping"][0].__setitem__("column", "c" + tail),
        ),
        ("dlq.table", lambda d: d["dlq"].__setitem__("table", "d" + tail)),
        (
            "source.schema.fields[0].name",
            lambda d: d["source"]["schema"]["fields"][0].__setitem__("name", "event_id" + tail),
        ),
    ]
    for where, change in cases:
        doc = users_doc(open_server)
        change(doc)
        answer = client.post("/api/v1/pipelines/validate", json=doc)
        problems = error_of(answer, 422)["details"]["problems"]
        assert any(p.startswith(where.split("[")[0]) for p in problems), (where, problems)
    created = client.post("/api/v1/pipelines", json=users_doc(open_server, name="nl" + tail))
    error_of(created, 422)
    assert not any(p.name.startswith("nl") for p in open_server.data_dir.rglob("nl*"))
    sample = client.post(
        "/api/v1/schemas/sample", json={"bootstrap_servers": "127.0.0.1:1", "topic": "t" + tail}
    )
    error_of(sample, 422)
    columns = client.post(
        "/api/v1/connections/clickhouse/columns",
        json={"host": "127.0.0.1", "port": 1, "table": "t" + tail},
    )
    assert "table" in json.dumps(error_of(columns, 422)["details"])


# ------------------------------------------------------------------ GlassFlow free text


def test_glassflow_patch_refuses_a_3mb_display_name(client: httpx.Client) -> None:
    answer = client.patch("/api/v1/pipeline/nope", json={"name": "x" * 3_000_000})
    # the name is checked before the pipeline is looked up: no size reaches the disk
    body = error_of(answer, 413, 422)
    assert "name" in body["message"], body


def test_glassflow_texts_are_capped(client: httpx.Client) -> None:
    long_name = "n" * 5_000
    answer = client.patch("/api/v1/pipeline/nope", json={"name": long_name})
    assert "name" in error_of(answer, 422)["message"]
    preview = client.post(
        "/api/v1/pipeline/migrate-preview",
        json={"version": "v2", "name": long_name, "pipeline_id": "p"},
    )
    assert "name" in error_of(preview, 422)["message"] + json.dumps(preview.json()["details"])
    tags = client.post(
        "/api/v1/pipeline/migrate-preview",
        json={"version": "v2", "pipeline_id": "p", "metadata": {"tags": ["t" * 5_000]}},
    )
    assert "tags" in error_of(tags, 422)["message"] + json.dumps(tags.json()["details"])


# ------------------------------------------------------------------ DELETE forgets GlassFlow's copy


def test_native_delete_removes_the_glassflow_copy(client: httpx.Client, open_server: Serve) -> None:
    doc = users_doc(open_server, name="gf-copy")
    doc["source"]["bootstrap_servers"] = "127.0.0.1:1"
    created = client.post("/api/v1/pipelines", json=doc)
    assert created.status_code == 201, created.text
    client.post("/api/v1/pipelines/gf-copy/terminate")
    wait_for(
        lambda: (
            client.get("/api/v1/pipelines/gf-copy").json()["state"]
            in ("Stopped", "Terminated", "Failed")
        ),
        120,
        what="gf-copy at rest",
    )
    renamed = client.patch("/api/v1/pipeline/gf-copy", json={"name": "Display name"})
    assert renamed.status_code == 200, renamed.text
    copy_file = open_server.data_dir / "glassflow" / "gf-copy.json"
    assert copy_file.exists()
    deleted = client.delete("/api/v1/pipelines/gf-copy")
    assert deleted.status_code == 204, deleted.text
    assert not copy_file.exists()
    # a new pipeline of the same id does not inherit the old display name
    assert client.get("/api/v1/pipeline/gf-copy").status_code == 404


@pytest.mark.parametrize("path", ["/api/v1/pipeline", "/api/v1/pipeline/migrate-preview"])
@pytest.mark.parametrize("body", ["deep", "digits"])
def test_glassflow_bodies_that_crashed_a_parser_are_4xx(
    client: httpx.Client, path: str, body: str
) -> None:
    text = (
        '{"version": "v3", "x": ' + deep_json(10_000, "array") + "}"
        if body == "deep"
        else '{"version": "v3", "x": ' + "9" * 5_000 + "}"
    )
    answer = client.post(path, content=text, headers={"Content-Type": "application/json"})
    assert 400 <= answer.status_code < 500, answer.text


def test_a_clickhouse_peer_that_accepts_and_stays_silent_is_a_bounded_503(
    client: httpx.Client,
) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(4)
        started = time.monotonic()
        answer = client.post(
            "/api/v1/connections/clickhouse/test",
            json={"host": "127.0.0.1", "port": silent.getsockname()[1]},
        )
    # the server's probe timeout (`--probe-timeout`, below its default 10 s here) bounds
    # each wait, not the sink's minutes
    waited = time.monotonic() - started
    assert PROBE_TIMEOUT_S <= waited < 9, waited
    assert "did not answer" in error_of(answer, 503)["message"]
