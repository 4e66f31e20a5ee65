"""ASGI middleware of the API: the request-body cap and the last catch of unexpected errors.

Both are plain ASGI (not Starlette's BaseHTTPMiddleware) so a body is never read twice and a
streamed (chunked) body is cut off as soon as it passes the cap.
"""

from __future__ import annotations

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from streamsift.api.error_responses import error_response, log_unexpected, unexpected_response


class BodyTooLarge(HTTPException):
    """Raised inside `receive` when a request body passes the cap. An HTTPException, so
    FastAPI lets it through while reading a body, and its handler answers 413."""

    def __init__(self, max_bytes: int) -> None:
        super().__init__(413, too_large_message(max_bytes))


def too_large_message(max_bytes: int) -> str:
    mib = max_bytes / (1024 * 1024)
    limit = f"{mib:g} MiB" if mib >= 1 else f"{max_bytes:,} bytes"
    return f"the request body is larger than {limit}, the limit of this server"


class BodySizeLimit:
    """Refuse request bodies larger than `max_bytes` with 413 (by Content-Length at once,
    else while the body streams in)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = dict(scope["headers"]).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await self._refuse(scope, receive, send)
            return
        seen = 0
        started = False

        async def counting_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counting_receive, tracking_send)
        except BodyTooLarge:
            if started:
                raise
            await self._refuse(scope, receive, send)

    async def _refuse(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(
            413, too_large_message(self.max_bytes), headers={"Connection": "close"}
        )
        await response(scope, receive, send)


class CatchUnexpected:
    """Answer an error nobody handled with a generic 500 (logged without its text), instead
    of letting it reach the server, which would log it whole."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except BodyTooLarge:
            raise
        except Exception as exc:  # noqa: BLE001 - the last catch: logged, answered 500
            log_unexpected(scope.get("method", "?"), scope.get("path", "?"), exc)
            if started:
                raise
            await unexpected_response()(scope, receive, send)
