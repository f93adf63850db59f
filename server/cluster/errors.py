"""Exceptions raised by the cluster package.

Everything the cluster package raises on purpose derives from one root::

    ClusterError
    ├── BusUnavailable      Redis cannot be reached (or the bus is closed): nothing was sent
    ├── NodeUnreachable     a request's target node listens on no channel: not delivered
    ├── RequestTimeout      no reply within the timeout: the request may or may not have
    │                       been served (requests must be safe to repeat, as moves are)
    └── RemoteError         the node that served a request failed it; carries its code

``StaleEpoch`` (a fenced write carried an epoch that is no longer the game's: another node
took the game over, nothing was stored) is a ``StorageError``, defined with the commit
queue that reports it per item (``server.storage.errors``) and named here too.

Redis client errors are chained as ``__cause__``. The lobby stores refuse what a client got
wrong with ``protocol.ProtocolError`` and its wire code, as ``server/lobby.py`` does.
"""

from __future__ import annotations

from server.storage.errors import StaleEpoch


class ClusterError(Exception):
    """Root of every error the cluster package raises on purpose."""


class BusUnavailable(ClusterError):
    """Redis cannot be reached, or the bus was closed."""


class NodeUnreachable(ClusterError):
    """No node is subscribed to the target node's channel."""


class RequestTimeout(ClusterError, TimeoutError):
    """A request got no reply in time."""


class RemoteError(ClusterError):
    """The serving node failed the request: ``code`` says how (a protocol error code when
    the failure is one a client should see), ``message`` why."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message




__all__ = ["BusUnavailable", "ClusterError", "NodeUnreachable", "RemoteError",
           "RequestTimeout", "StaleEpoch"]
