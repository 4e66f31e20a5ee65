"""Where the alert tests' notices land: an HTTP receiver on loopback (a webhook that checks
the HMAC signature as a user's receiver would, or a Slack-like incoming webhook) and an SMTP
server on loopback (aiosmtpd)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from aiosmtpd.controller import Controller

from streamsift.embedded.broker import free_port
from streamsift.service.alerts.channels import SIGNATURE_HEADER, TIMESTAMP_HEADER, verify


@dataclass
class Receiver:
    """An HTTP server on loopback answering each POST with the next of `answers` (then 200)
    and keeping what it got. With `secret`, a POST whose signature does not verify is
    answered 401 and kept in `forged` instead."""

    secret: str | None = None
    answers: list[int] = field(default_factory=list)
    got: list[tuple[str, dict[str, str], bytes]] = field(default_factory=list)
    forged: list[bytes] = field(default_factory=list)

    def __post_init__(self) -> None:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                headers = dict(self.headers.items())
                code = receiver.answers.pop(0) if receiver.answers else 200
                if receiver.secret is not None and not verify(
                    receiver.secret,
                    headers.get(TIMESTAMP_HEADER, ""),
                    body,
                    headers.get(SIGNATURE_HEADER, ""),
                ):
                    receiver.forged.append(body)
                    code = 401
                else:
                    receiver.got.append((self.path, headers, body))
                self.send_response(code)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def bodies(self) -> list[dict[str, Any]]:
        """The JSON bodies received (signature checked when there is a secret)."""
        return [json.loads(body) for _, _, body in self.got]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class Mailbox:
    """An SMTP server on loopback (aiosmtpd) keeping each envelope it accepts."""

    def __init__(self) -> None:
        self.messages: list[Any] = []
        self.controller = Controller(self, hostname="127.0.0.1", port=free_port())
        self.port = self.controller.port

    async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:
        self.messages.append(envelope)
        return "250 OK"

    def __enter__(self) -> Mailbox:
        self.controller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.controller.stop()
