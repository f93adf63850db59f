"""Plain HTTP on the websocket port: ``/healthz``, ``/metrics``, the browser page
(:mod:`server.web`), and 404 elsewhere.

websockets calls :meth:`Routes.respond` with each request before the upgrade: a response
ends the request there, None lets the websocket handshake go on (``/ws`` or ``/``; a
browser page's handshake only from an origin allowed to connect, and only within the caps on
open connections: :mod:`server.admission`).
"""

from __future__ import annotations

from http import HTTPStatus

from websockets.asyncio.server import ServerConnection
from websockets.datastructures import Headers
from websockets.http11 import Request, Response

from . import web, wsio
from .admission import Admission
from .config import Settings
from .metrics import Metrics

WS_PATHS = ("/", "/ws")


class Routes:
    """The HTTP side of one server."""

    def __init__(self, metrics: Metrics, settings: Settings, admission: Admission) -> None:
        self._metrics = metrics
        self._settings = settings
        self._admission = admission

    def respond(self, connection: ServerConnection, request: Request) -> Response | None:
        """The response to a plain HTTP request, or None to let the websocket open.

        The connection of a plain response is closed as soon as the response is written.
        websockets would only half-close it and hold it open for the client to close, up to
        its handshake timeout (10 s): a flood of refused upgrades, or of /healthz requests,
        from clients that never close would hold a file each for that long.
        """
        self._admission.handshakes.requested(connection)
        response = self._respond(connection, request)
        if response is not None:
            wsio.close_after_response(connection)
        return response

    def _respond(self, connection: ServerConnection, request: Request) -> Response | None:
        path = request.path.split("?", 1)[0]
        if path == "/healthz":
            return connection.respond(HTTPStatus.OK, "ok\n")
        if path == "/metrics":
            body = self._metrics.render()
            headers = Headers([("Content-Type", "text/plain; version=0.0.4; charset=utf-8"),
                               ("Content-Length", str(len(body)))])
            return Response(200, "OK", headers, body)
        if (page := web.respond(request, self._settings)) is not None:
            return page
        if path not in WS_PATHS:
            return connection.respond(HTTPStatus.NOT_FOUND, "not found\n")
        refusal = self._admission.admit(connection)  # 429 or 503 over a cap
        if refusal is not None:
            why = "address" if refusal.status_code == HTTPStatus.TOO_MANY_REQUESTS else "total"
            self._metrics.refused.labels(why=why).inc()
        return refusal
