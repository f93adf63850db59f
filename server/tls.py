"""TLS served directly: with ``--tls-cert`` and ``--tls-key`` the listener speaks
``wss://`` and ``https://`` (the websocket, ``/healthz``, ``/metrics`` and the web page
alike, on the one port).

asyncio gives a listener one ``SSLContext`` for its whole life. That context's
``sni_callback``, which OpenSSL calls in every handshake (with ``None`` as the name when
the client names no server), hands the connection the newest context loaded from the files
instead. :meth:`ServerTls.reload` (SIGHUP) loads them again: connections made after it get
the new certificate, connections already open keep the one they were made with, and none
is dropped. A reload that fails (a file missing, a key that is not the certificate's) is
logged and the certificate before it stays in use.
"""

from __future__ import annotations

import logging
import ssl

from .config import Settings

log = logging.getLogger(__name__)


class TlsProblem(Exception):
    """The TLS settings cannot be served; the message says which file and why."""


def server_context(cert: str, key: str) -> ssl.SSLContext:
    """A server context (TLS 1.2 and later) with the certificate chain and key from these
    PEM files; :class:`TlsProblem` if they cannot be read or do not belong together."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except OSError as exc:
        if isinstance(exc, ssl.SSLError):
            raise TlsProblem(f"--tls-cert {cert} and --tls-key {key} are not a certificate "
                             f"and its key in PEM: {exc.reason or exc}") from None
        raise TlsProblem(f"cannot read {exc.filename or cert}: {exc.strerror or exc}"
                         ) from None
    return context


class ServerTls:
    """The listener's context, and the context its new connections are handed."""

    def __init__(self, cert: str, key: str) -> None:
        self.cert, self.key = cert, key
        self.current = server_context(cert, key)
        self.listening = server_context(cert, key)
        self.listening.sni_callback = self._hand_over

    def _hand_over(self, connection: ssl.SSLObject, server_name: str | None,
                   context: ssl.SSLContext) -> None:
        connection.context = self.current

    def reload(self) -> bool:
        """Load the files again for the connections to come; False (logged) if they cannot
        be served, and the certificate in use stays."""
        try:
            self.current = server_context(self.cert, self.key)
        except TlsProblem as exc:
            log.error("TLS reload failed; the certificate in use stays",
                      extra={"problem": str(exc)})
            return False
        log.info("TLS certificate reloaded", extra={"cert": self.cert, "key": self.key})
        return True


def server_tls(settings: Settings) -> ServerTls | None:
    """The TLS of ``--tls-cert`` and ``--tls-key``: None without them; :class:`TlsProblem`
    if only one is given, they cannot be served, or house bots would have to trust them
    (they dial the server at a loopback address, which a certificate does not name)."""
    cert, key = settings.tls_cert, settings.tls_key
    if cert is None and key is None:
        return None
    if cert is None or key is None:
        raise TlsProblem("--tls-cert and --tls-key go together: give both, or neither")
    if settings.house_bots:
        raise TlsProblem("--house-bots cannot run beside --tls-cert: run each bot as "
                         "tessera bot --server wss://... instead (docs/OPERATIONS.md)")
    return ServerTls(cert, key)


def schemes(tls: ServerTls | None) -> tuple[str, str]:
    """The websocket's and the web page's URL schemes: ``wss``/``https`` with TLS."""
    return ("wss", "https") if tls is not None else ("ws", "http")
