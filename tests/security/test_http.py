"""Finding 5 and 6 of issue 25 against a real `streamsift serve` on loopback: what a web page
the operator visits can make the server do (cross-site requests, DNS rebinding), the headers
of every answer, and the refusal to serve open on a non-loopback address.

A browser sends `Origin` (and `Sec-Fetch-Site`) with every state-changing request, and may
send a "simple" request (no preflight) only with no body type, `text/plain`,
`multipart/form-data` or `application/x-www-form-urlencoded`: each of those is refused here,
while a non-browser client (no Origin) and a same-origin page keep working.
"""

from __future__ import annotations

import asyncio
import json
import os
import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import yaml

from support.cli import streamsift
from support.paths import REPO
from support.servers import Serve

from .conftest import TOKEN

PIPELINES = "/api/v1/pipelines"
EVIL = "https://evil.example"


def document(server: Serve, name: str) -> dict[str, Any]:
    """A valid pipeline document whose paths lie inside the server's data dir."""
    doc = yaml.safe_load((REPO / "examples/pipelines/users-dedup.yaml").read_text())
    doc["name"] = name
    doc["source"]["bootstrap_servers"] = "127.0.0.1:9"  # nothing listens: it would fail
    doc["sink"]["clickhouse"]["path"] = str(server.data_dir / "clickhouse")
    return doc


def count(client: httpx.Client) -> int:
    listed = client.get(PIPELINES)
    assert listed.status_code == 200, listed.text
    return len(listed.json())


def assert_refused(response: httpx.Response, status: int, *words: str) -> None:
    assert response.status_code == status, (response.status_code, response.text)
    body = response.json()
    assert body["status"] == status and set(body) == {"status", "code", "message", "details"}
    for word in words:
        assert word in body["message"], body["message"]


# ------------------------------------------------------------------ content types


def test_a_cross_site_create_without_content_type_is_refused_and_creates_nothing(
    open_server: Serve, client: httpx.Client
) -> None:
    before = count(client)
    body = json.dumps(document(open_server, "evil-create")).encode()
    refused = client.post(PIPELINES, content=body, headers={"Origin": EVIL})
    assert refused.status_code in (403, 415), refused.text
    # Without Origin (a curl), a body without a type is still no JSON.
    untyped = client.post(PIPELINES, content=body)
    assert_refused(untyped, 415, "Content-Type")
    assert count(client) == before


@pytest.mark.parametrize(
    "path",
    [
        f"{PIPELINES}/nope/stop",
        f"{PIPELINES}/nope/terminate",
        f"{PIPELINES}/nope/resume",
        f"{PIPELINES}/nope/dlq/purge",
        f"{PIPELINES}/nope/dlq/consume",
        PIPELINES,
        f"{PIPELINES}/validate",
        "/api/v1/expressions/evaluate",
    ],
)
def test_text_plain_is_refused_on_every_route(client: httpx.Client, path: str) -> None:
    for body in (b'{"a": 1}', b""):
        refused = client.post(path, content=body, headers={"Content-Type": "text/plain"})
        assert_refused(refused, 415, "text/plain", "application/json")


@pytest.mark.parametrize(
    "content_type",
    [
        "multipart/form-data; boundary=x",
        "application/x-www-form-urlencoded",
        "text/html",
        "application/jsonx",
        "application/octet-stream",
    ],
)
def test_other_body_types_are_refused(client: httpx.Client, content_type: str) -> None:
    refused = client.post(
        f"{PIPELINES}/validate", content=b"a=1", headers={"Content-Type": content_type}
    )
    assert_refused(refused, 415, "application/json")


@pytest.mark.parametrize(
    "content_type",
    [
        "application/json",
        "application/json; charset=utf-8",
        "Application/JSON",
        "application/vnd.streamsift+json",
        "application/yaml",
        "application/x-yaml",
        "text/yaml",
    ],
)
def test_json_and_yaml_bodies_are_read(
    open_server: Serve, client: httpx.Client, content_type: str
) -> None:
    doc = document(open_server, "typed")
    body = yaml.safe_dump(doc) if "yaml" in content_type else json.dumps(doc)
    answer = client.post(
        f"{PIPELINES}/validate", content=body, headers={"Content-Type": content_type}
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["name"] == "typed"


def test_bodyless_posts_need_no_type(client: httpx.Client) -> None:
    # The SDK's stop and terminate send no body: they reach the route (404: no such pipeline).
    for action in ("stop", "terminate", "resume"):
        answer = client.post(f"{PIPELINES}/nope/{action}")
        assert answer.status_code == 404, answer.text


# ------------------------------------------------------------------ Origin


@pytest.mark.parametrize(
    "origin",
    [EVIL, "null", "http://localhost:1", "http://127.0.0.1", "https://127.0.0.1.evil.example"],
)
def test_a_foreign_origin_may_change_nothing(client: httpx.Client, origin: str) -> None:
    for method, path, kwargs in (
        ("POST", f"{PIPELINES}/nope/stop", {}),
        ("POST", f"{PIPELINES}/validate", {"json": {"name": "x"}}),
        ("DELETE", f"{PIPELINES}/nope", {}),
        ("PUT", f"{PIPELINES}/nope", {"json": {"name": "x"}}),
        ("PATCH", "/api/v1/pipeline/nope", {"json": {"name": "x"}}),
    ):
        refused = client.request(method, path, headers={"Origin": origin}, **kwargs)
        assert_refused(refused, 403, "Origin", "cross-site")


def test_same_origin_and_no_origin_are_served(open_server: Serve, client: httpx.Client) -> None:
    port = open_server.url.rsplit(":", 1)[1]
    for origin in (open_server.url, f"http://localhost:{port}", None):
        headers = {"Origin": origin} if origin else {}
        if origin:
            headers["Host"] = origin.removeprefix("http://")
        answer = client.post(f"{PIPELINES}/nope/stop", headers=headers)
        assert answer.status_code == 404, (origin, answer.text)
    # Origin names this server but through another name than the one it was reached by.
    other = client.post(
        f"{PIPELINES}/nope/stop",
        headers={"Origin": f"http://localhost:{port}", "Host": f"127.0.0.1:{port}"},
    )
    assert_refused(other, 403, "Origin")


def test_sec_fetch_site_cross_site_is_refused(client: httpx.Client) -> None:
    refused = client.post(f"{PIPELINES}/nope/stop", headers={"Sec-Fetch-Site": "cross-site"})
    assert_refused(refused, 403, "cross-site")
    for same in ("same-origin", "none"):
        answer = client.post(f"{PIPELINES}/nope/stop", headers={"Sec-Fetch-Site": same})
        assert answer.status_code == 404


def test_reads_from_a_foreign_origin_get_no_cors_grant(client: httpx.Client) -> None:
    answer = client.get(PIPELINES, headers={"Origin": EVIL})
    assert answer.status_code == 200
    assert "access-control-allow-origin" not in answer.headers


# ------------------------------------------------------------------ Host


def test_only_known_host_names_are_answered(open_server: Serve, client: httpx.Client) -> None:
    port = open_server.url.rsplit(":", 1)[1]
    for host in ("evil.example", f"evil.example:{port}", "localhost.evil.example", "0.0.0.0"):
        refused = client.get(PIPELINES, headers={"Host": host})
        assert_refused(refused, 400, host.split(":")[0], "--allowed-host")
    for host in (f"localhost:{port}", f"127.0.0.1:{port}", "localhost", f"[::1]:{port}"):
        assert client.get(PIPELINES, headers={"Host": host}).status_code == 200, host
    # Probes (a k8s probe sends the pod's IP as Host) reach the health routes by any name.
    assert client.get("/healthz", headers={"Host": "10.1.2.3:8080"}).status_code == 200
    assert client.get("/readyz", headers={"Host": "10.1.2.3:8080"}).status_code == 200
    assert client.get("/", headers={"Host": "evil.example"}).status_code == 400
    assert client.get("/docs", headers={"Host": "evil.example"}).status_code == 400


def test_allowed_host_names_are_answered(serve_factory: Callable[..., Serve]) -> None:
    server = serve_factory("--allowed-host", "streamsift.internal", "--allowed-host", "Proxy.Lan")
    with httpx.Client(base_url=server.url, timeout=30) as http:
        for host in ("streamsift.internal", "streamsift.internal:443", "proxy.lan:8443"):
            assert http.get(PIPELINES, headers={"Host": host}).status_code == 200, host
        assert http.get(PIPELINES, headers={"Host": "other.lan"}).status_code == 400
        # A reverse proxy that keeps Host as 127.0.0.1 and a page served by the named host.
        answer = http.post(
            f"{PIPELINES}/nope/stop", headers={"Origin": "https://streamsift.internal"}
        )
        assert answer.status_code == 404, answer.text


# ------------------------------------------------------------------ headers


def test_security_headers(client: httpx.Client) -> None:
    for path in ("/", "/docs", PIPELINES, "/healthz", "/no/such/route", "/openapi.json"):
        answer = client.get(path)
        assert answer.headers["x-content-type-options"] == "nosniff", path
        assert answer.headers["x-frame-options"] == "DENY", path
        assert "frame-ancestors 'none'" in answer.headers["content-security-policy"], path
    ui_csp = client.get("/").headers["content-security-policy"]
    assert "script-src 'self'" in ui_csp and "connect-src 'self'" in ui_csp
    assets = client.get("/").text.split('src="')[1].split('"')[0]
    assert client.get(assets).headers["x-content-type-options"] == "nosniff"
    refused = client.post(PIPELINES, content=b"x", headers={"Content-Type": "text/plain"})
    assert refused.headers["x-content-type-options"] == "nosniff"


def test_docs_and_openapi_need_no_token_but_the_api_does(token_server: Serve) -> None:
    with httpx.Client(base_url=token_server.url, timeout=30) as http:
        docs = http.get("/docs")
        assert docs.status_code == 200 and "swagger-ui" in docs.text
        for asset in docs.text.split('src="')[1:] + docs.text.split('href="')[1:]:
            url = asset.split('"')[0]
            if url.startswith("/"):
                assert http.get(url).status_code == 200, url
        spec = http.get("/openapi.json").json()
        assert "HTTPBearer" in spec["components"]["securitySchemes"]
        assert http.get(PIPELINES).status_code == 401
        auth = {"Authorization": f"Bearer {TOKEN}"}
        assert http.get(PIPELINES, headers=auth).status_code == 200
        # The token does not make a cross-site request acceptable.
        refused = http.post(f"{PIPELINES}/nope/stop", headers={**auth, "Origin": EVIL})
        assert refused.status_code == 403


# ------------------------------------------------------------------ tokens by default


def test_serve_on_all_addresses_without_a_token_refuses_to_start(
    serve_factory: Callable[..., Serve],
) -> None:
    refused = serve_factory("--host", "0.0.0.0", env={"STREAMSIFT_API_TOKEN": ""})
    assert refused.proc is not None and refused.proc.wait(30) == 2
    lines = refused.text().strip().splitlines()
    assert lines[0].startswith("error: ") and "0.0.0.0" in lines[0] and "token" in lines[0]
    assert "--no-token" in refused.text()
    assert "Traceback" not in refused.text()


def test_serve_on_all_addresses_with_no_token_flag_starts(
    serve_factory: Callable[..., Serve],
) -> None:
    server = serve_factory("--host", "0.0.0.0", "--no-token", env={"STREAMSIFT_API_TOKEN": ""})
    local = server.url.replace("0.0.0.0", "127.0.0.1")
    assert httpx.get(f"{local}{PIPELINES}", timeout=30).status_code == 200
    assert "--allowed-host" in server.text()  # told how browsers reach it by name


def test_serve_on_all_addresses_with_a_token_starts(serve_factory: Callable[..., Serve]) -> None:
    server = serve_factory("--host", "0.0.0.0", env={"STREAMSIFT_API_TOKEN": TOKEN})
    local = server.url.replace("0.0.0.0", "127.0.0.1")
    assert httpx.get(f"{local}{PIPELINES}", timeout=30).status_code == 401


def test_serve_on_loopback_without_a_token_starts(open_server: Serve) -> None:
    assert "no token" in open_server.text()
    assert httpx.get(f"{open_server.url}{PIPELINES}", timeout=30).status_code == 200


# ------------------------------------------------------------------ GlassFlow behind a proxy


class TokenProxy:
    """A reverse proxy on a loopback port that adds `Authorization` to every request and
    forwards it to `upstream`: the way to put GlassFlow's SDK (it sends no token) in front
    of a server that has one."""

    def __init__(self, upstream: str, token: str) -> None:
        self.upstream, self.token = upstream, token
        self.loop = asyncio.new_event_loop()
        self.ready = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.url = ""

    def __enter__(self) -> TokenProxy:
        self.thread.start()
        assert self.ready.wait(10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)

    def _run(self) -> None:
        asyncio.set_event_loop(self.loop)
        server = self.loop.run_until_complete(asyncio.start_server(self._handle, "127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
        self.ready.set()
        self.loop.run_forever()
        server.close()
        # Connections still open (keep-alive) end here, inside the loop, before it closes.
        pending = asyncio.all_tasks(self.loop)
        for task in pending:
            task.cancel()
        self.loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
        self.loop.close()

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            async with httpx.AsyncClient(base_url=self.upstream, timeout=60) as upstream:
                await self._forward(reader, writer, upstream)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed its connection
        finally:
            writer.close()

    async def _forward(
        self,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
        upstream: httpx.AsyncClient,
    ) -> None:
        """Forward each request on one connection, with the token added."""
        while head := await reader.readuntil(b"\r\n\r\n"):
            lines = head.decode("latin-1").split("\r\n")
            method, target, _ = lines[0].split(" ", 2)
            headers = dict(line.split(": ", 1) for line in lines[1:] if line)
            headers = {k.lower(): v for k, v in headers.items()}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            # Host goes on as the client sent it, so the server's Host check still applies
            # behind the proxy (nginx: proxy_set_header Host $host).
            headers["authorization"] = f"Bearer {self.token}"
            answer = await upstream.request(method, target, headers=headers, content=body)
            out = [f"HTTP/1.1 {answer.status_code} {answer.reason_phrase}"]
            out += [
                f"{k}: {v}"
                for k, v in answer.headers.items()
                if k not in ("content-length", "transfer-encoding", "content-encoding")
            ]
            out.append(f"content-length: {len(answer.content)}")
            writer.write(("\r\n".join(out) + "\r\n\r\n").encode("latin-1") + answer.content)
            await writer.drain()
            if reader.at_eof():
                break


@pytest.fixture(scope="module")
def glassflow(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """GlassFlow's SDK with usage stats off and HOME in a temp dir (nothing leaves here)."""
    home = tmp_path_factory.mktemp("gf-home")
    os.environ["GF_USAGESTATS_ENABLED"] = "false"
    os.environ["HOME"] = str(home)
    import glassflow.etl as etl

    return etl


@pytest.fixture
def token_proxy(token_server: Serve) -> Iterator[TokenProxy]:
    with TokenProxy(token_server.url, TOKEN) as proxy:
        yield proxy


def test_glassflow_sdk_through_a_proxy_that_adds_the_token(
    glassflow: Any, token_server: Serve, token_proxy: TokenProxy
) -> None:
    direct = glassflow.Client(host=token_server.url)
    with pytest.raises(glassflow.errors.APIError):
        direct.list_pipelines()  # the SDK sends no token: 401
    client = glassflow.Client(host=token_proxy.url)
    assert client.list_pipelines() == []
    with pytest.raises(glassflow.errors.PipelineNotFoundError):
        client.get_pipeline("no-such-pipeline")
    # A POST with a JSON body, through the proxy: converted, nothing created.
    v2 = json.loads((REPO / "examples/pipelines/glassflow-dedup-v2.json").read_text())
    v3 = client.migrate_pipeline_v2_to_v3(v2)
    assert v3.pipeline_id == v2["pipeline_id"]
    assert client.list_pipelines() == []
    # Behind the proxy, a page on a rebound name and another site's page still get nothing.
    rebound = httpx.get(f"{token_proxy.url}/api/v1/pipeline", headers={"Host": "evil.example"})
    assert rebound.status_code == 400
    cross = httpx.post(f"{token_proxy.url}/api/v1/pipeline/x/stop", headers={"Origin": EVIL})
    assert cross.status_code == 403


def test_python_m_serve_help_names_the_flags() -> None:
    shown = streamsift("serve", "--help", timeout=60).stdout
    assert "--no-token" in shown and "--allowed-host" in shown and "--probe-timeout" in shown
