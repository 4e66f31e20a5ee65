"""`HttpGuard`: what a web page in the operator's browser cannot make the server do.

A page on another site may send the browser to this server (a form post, a `fetch` in
`no-cors` mode, an image), and a page on a name its owner points at 127.0.0.1 (DNS rebinding)
may even read the answers. Without a token (the default on loopback, and `serve --demo`) the
server's only defence is to tell those requests from its own UI's and a non-browser client's:

Host       only the names the server was bound to or told about are answered: the bound
           address, `localhost`, `127.0.0.1`, `[::1]` (any port), and `--allowed-host NAME`
           (`*` answers any name). Others are 400. The health routes answer any Host, so a
           probe that sends a pod's IP keeps working; they hold no data.
Origin     a state-changing request (POST, PUT, PATCH, DELETE) whose `Origin` is present and
           not this server's (scheme://host:port as the request reached it, or an
           `--allowed-host` name) is 403, as is one marked `Sec-Fetch-Site: cross-site`.
           No Origin: a non-browser client (curl, the SDKs), served.
Body type  a request body must be `application/json` (or `*/*+json`) or YAML
           (`application/yaml`, `application/x-yaml`, `text/yaml`, `text/x-yaml`), else 415;
           a state-changing request that names another type is 415 even with no body. These
           are the types a browser cannot send cross-site without asking first (CORS
           preflight, which this server never grants). Bodyless requests need no type.
Headers    every answer carries `X-Content-Type-Options: nosniff`, `X-Frame-Options: DENY`,
           `Referrer-Policy: same-origin` (not no-referrer: with it a browser may send a
           same-origin POST with `Origin: null`) and, unless the route set its own (the UI, /docs),
           `Content-Security-Policy: default-src 'none'; frame-ancestors 'none'`.

Plain ASGI like middleware.py: nothing reads the body here, refusals are the one error shape.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from urllib.parse import urlsplit

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from streamsift.api.error_responses import error_response

LOOPBACK_NAMES = frozenset({"localhost", "127.0.0.1", "::1"})
# Bound to every address: the machine's own names are unknown (`--allowed-host` adds them).
WILDCARD_ADDRESSES = frozenset({"", "0.0.0.0", "::"})
UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
YAML_TYPES = frozenset({"application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml"})
JSON_TYPE = "application/json"
# Routes a probe calls by whatever name it has for the server (a pod's IP): no data there.
HEALTH_PATHS = frozenset({"/healthz", "/readyz", "/api/v1/healthz"})
# A DNS name or IPv4 address, or (from brackets) an IPv6 address.
_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*|[0-9a-f:.]*:[0-9a-f:.]*")
DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}
API_CSP = "default-src 'none'; frame-ancestors 'none'"
SECURITY_HEADERS = (
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
)


def host_name(name: str) -> str:
    """A host name as compared here: lower case, no brackets, no trailing dot."""
    name = name.strip().lower()
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    return name.rstrip(".")


def split_host(value: str) -> tuple[str, int | None] | None:
    """(name, port) of a Host header value (`name`, `name:port`, `[v6]:port`); None when it
    is not one."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        if end < 0:
            return None
        name, rest = value[1:end], value[end + 1 :]
        if rest and not rest.startswith(":"):
            return None
        port = rest[1:]
    else:
        name, _, port = value.partition(":")
        if ":" in port:
            return None
    if port and not (port.isdigit() and int(port) <= 65535):
        return None
    name = name.rstrip(".")
    if not _NAME.fullmatch(name):
        return None
    return name, int(port) if port else None


def allowed_names(bound: str, extra: Iterable[str]) -> frozenset[str]:
    """The Host names answered: loopback names, the bound address, the operator's names."""
    names = set(LOOPBACK_NAMES)
    if host_name(bound) not in WILDCARD_ADDRESSES:
        names.add(host_name(bound))
    for name in extra:
        parsed = split_host(name) if name.strip() != "*" else ("*", None)
        if parsed is not None:
            names.add(parsed[0])
    return frozenset(names)


def media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def body_type_ok(value: str) -> bool:
    """Whether a body of this Content-Type is one the API reads (JSON or YAML)."""
    kind = media_type(value)
    return (
        kind == JSON_TYPE
        or kind in YAML_TYPES
        or (kind.startswith("application/") and kind.endswith("+json"))
    )


class HttpGuard:
    """Refuse foreign Host names, cross-site changes and unreadable body types; add the
    security headers to every answer. See the module's docstring for the rules."""

    def __init__(self, app: ASGIApp, bound_host: str, allowed_hosts: Iterable[str] = ()) -> None:
        self.app = app
        extra = tuple(allowed_hosts)
        self.any_host = any(name.strip() == "*" for name in extra)
        self.names = allowed_names(bound_host, extra)
        self.operator_names = allowed_names("", extra) - LOOPBACK_NAMES

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = list(message.get("headers", []))
                present = {key.lower() for key, _ in headers}
                headers += [(k, v) for k, v in SECURITY_HEADERS if k not in present]
                if b"content-security-policy" not in present:
                    headers.append((b"content-security-policy", API_CSP.encode()))
                message = {**message, "headers": headers}
            await send(message)

        refusal = self.refusal(scope)
        if refusal is not None:
            status, message = refusal
            await error_response(status, message)(scope, receive, with_headers)
            return
        await self.app(scope, receive, with_headers)

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """(status, message) when the request is refused, else None."""
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        host = headers.get("host")
        if scope.get("path") not in HEALTH_PATHS and host is not None:
            refused = self._host_refusal(host)
            if refused:
                return 400, refused
        method = scope.get("method", "GET")
        if method in UNSAFE_METHODS:
            refused = self._origin_refusal(scope, headers)
            if refused:
                return 403, refused
        return self._body_refusal(method, headers)

    def _host_refusal(self, host: str) -> str | None:
        parsed = split_host(host)
        if parsed is not None and (self.any_host or parsed[0] in self.names):
            return None
        name = parsed[0] if parsed else host
        return (
            f"Host {name} is not one this server answers to; if it is this server's name, "
            f"start it with --allowed-host {name}"
        )

    def _origin_refusal(self, scope: Scope, headers: dict[str, str]) -> str | None:
        origin = headers.get("origin")
        if headers.get("sec-fetch-site", "").strip().lower() == "cross-site":
            return (
                "a cross-site request may not change anything here "
                "(Sec-Fetch-Site: cross-site): use this server's own page or a client "
                "that is not a browser"
            )
        if origin is None or self._same_origin(origin, scope, headers.get("host")):
            return None
        return (
            f"Origin {origin!r} is not this server: a cross-site request may not change "
            "anything here (a page of this server, or a client that sends no Origin, may)"
        )

    def _same_origin(self, origin: str, scope: Scope, host: str | None) -> bool:
        """Whether `origin` is this server as the request reached it (host and port of the
        Host header), or names one of the operator's `--allowed-host` names."""
        try:
            parts = urlsplit(origin.strip())
            name, port = parts.hostname, parts.port
        except ValueError:
            return False
        scheme = parts.scheme.lower()
        if not name or scheme not in ("http", "https") or parts.path or parts.query:
            return False
        name = host_name(name)
        if name in self.operator_names:
            return True
        reached = split_host(host) if host else None
        if reached is None:
            return False
        own_scheme = str(scope.get("scheme", "http"))
        origin_port = port or DEFAULT_PORTS[scheme]
        reached_port = reached[1] or DEFAULT_PORTS.get(own_scheme, 80)
        return name == reached[0] and origin_port == reached_port

    @staticmethod
    def _body_refusal(method: str, headers: dict[str, str]) -> tuple[int, str] | None:
        length = headers.get("content-length", "").strip()
        has_body = "transfer-encoding" in headers or (length not in ("", "0"))
        content_type = headers.get("content-type")
        if content_type is None:
            if not has_body:
                return None
            return 415, (
                "a request body needs a Content-Type: send application/json or application/yaml"
            )
        if not (has_body or method in UNSAFE_METHODS) or body_type_ok(content_type):
            return None
        return 415, (
            f"content type {media_type(content_type)!r} is not supported: send "
            "application/json or application/yaml"
        )
