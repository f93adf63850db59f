"""Every Redis key and pub/sub channel of one cluster, named in one place.

A cluster is a name (``--cluster-name``, default ``default``): everything it keeps in Redis
lives under ``tessera:{name}:``, so several clusters (and every test run) can share one
Redis. Pub/sub channels are global to a Redis server whatever the database number in the
URL, so the prefix matters for channels even more than for keys.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

DEFAULT_CLUSTER_NAME = "default"
_NAME = re.compile(r"[A-Za-z0-9_.-]{1,64}")


def check_name(kind: str, value: str) -> str:
    """``value`` if it is a usable cluster or node name; ValueError naming ``kind`` if not.

    Names go inside keys and channels and appear in ``cluster status``: letters, digits,
    ``_``, ``.`` and ``-``, at most 64 characters, so that ``:`` always separates parts.
    """
    if not _NAME.fullmatch(value):
        raise ValueError(f"{kind} must be 1 to 64 letters, digits, '_', '.' or '-', "
                         f"not {value!r}")
    return value


def as_str(value: bytes | str) -> str:
    """A name read back from Redis (replies are bytes) as text."""
    return value.decode() if isinstance(value, bytes) else value


@dataclass(frozen=True, slots=True)
class Keys:
    """The names of one cluster's keys and channels."""

    cluster: str = DEFAULT_CLUSTER_NAME

    def __post_init__(self) -> None:
        check_name("a cluster name", self.cluster)

    @property
    def prefix(self) -> str:
        return f"tessera:{self.cluster}:"

    # -- channels ------------------------------------------------------------------------
    def node_channel(self, node_id: str) -> str:
        """Requests to a node and replies to its requests."""
        return f"{self.prefix}node:{node_id}"

    def game_channel(self, game_id: str) -> str:
        """A game's events, published by its owner, read by every node with a subscriber."""
        return f"{self.prefix}game:{game_id}"

    @property
    def lobby_channel(self) -> str:
        """Lobby events (seeks added and removed, players online and offline)."""
        return f"{self.prefix}lobby"

    @property
    def relist_channel(self) -> str:
        """The lobby's listing changed with no lobby event (a rated game changed ratings)."""
        return f"{self.prefix}lobby:relist"

    @property
    def revocations_channel(self) -> str:
        """Digests of revoked tokens: every node closes the connections logged in on them."""
        return f"{self.prefix}revoked"

    # -- keys ----------------------------------------------------------------------------
    def lease(self, game_id: str) -> str:
        """The owner of a live game: the owning node's lease value, with an expiry."""
        return f"{self.prefix}lease:{game_id}"

    @property
    def nodes(self) -> str:
        """Sorted set: node id -> its last heartbeat (Redis server time, ms)."""
        return f"{self.prefix}nodes"

    def node(self, node_id: str) -> str:
        """Hash: what a node said of itself at its last heartbeat."""
        return f"{self.prefix}node:{node_id}:info"

    def node_games(self, node_id: str) -> str:
        """Set: the games a node held leases on at its last heartbeat."""
        return f"{self.prefix}node:{node_id}:games"

    def online(self, node_id: str) -> str:
        """Hash: the users connected to one node (user id -> who and how many connections)."""
        return f"{self.prefix}online:{node_id}"

    @property
    def lobby_ids(self) -> str:
        """Counter: seek and challenge ids, unique across the cluster."""
        return f"{self.prefix}lobby:ids"

    @property
    def seeks(self) -> str:
        """Hash: open seek id -> the seek."""
        return f"{self.prefix}seeks"

    @property
    def seek_owners(self) -> str:
        """Hash: open seek id -> "owner's user id:offer key" (what the scripts decide by)."""
        return f"{self.prefix}seeks:owner"

    @property
    def seek_ranges(self) -> str:
        """Hash: open seek id -> "owner's rating:rating_min:rating_max" (empty for no bound),
        what the pairing script checks both ways."""
        return f"{self.prefix}seeks:range"

    @property
    def seek_ids(self) -> str:
        """Sorted set: every open seek id, by id (the lobby's pages, oldest first)."""
        return f"{self.prefix}seeks:ids"

    @property
    def seek_addresses(self) -> str:
        """Hash: open seek id -> the address of the connection that opened it."""
        return f"{self.prefix}seeks:address"

    @property
    def seeks_per_address(self) -> str:
        """Hash: address -> how many open seeks it has (non-zero counts only)."""
        return f"{self.prefix}seeks:addresses"

    @property
    def seeks_matching_prefix(self) -> str:
        return f"{self.prefix}seeks:offer:"

    def seeks_matching(self, offer_key: str) -> str:
        """Sorted set: the open seeks of one offer, by id (so the oldest pairs first)."""
        return self.seeks_matching_prefix + offer_key

    @property
    def seeks_of_prefix(self) -> str:
        return f"{self.prefix}seeks:user:"

    def seeks_of(self, user_id: int) -> str:
        """Set: one user's open seek ids (to bound them and to withdraw them on leaving)."""
        return f"{self.seeks_of_prefix}{user_id}"

    @property
    def challenges(self) -> str:
        """Hash: pending challenge id -> the challenge."""
        return f"{self.prefix}challenges"

    @property
    def challenge_parties(self) -> str:
        """Hash: pending challenge id -> "challenger's user id:target's user id"."""
        return f"{self.prefix}challenges:parties"

    @property
    def challenges_of_prefix(self) -> str:
        return f"{self.prefix}challenges:user:"

    def challenges_of(self, user_id: int) -> str:
        """Set: the pending challenges a user made or received."""
        return f"{self.challenges_of_prefix}{user_id}"

    @property
    def challenges_out_prefix(self) -> str:
        return f"{self.prefix}challenges:out:"

    def challenges_out(self, user_id: int) -> str:
        """Set: the pending challenges a user made (a cap counts them)."""
        return f"{self.challenges_out_prefix}{user_id}"

    @property
    def challenge_addresses(self) -> str:
        """Hash: pending challenge id -> the address of the connection that sent it."""
        return f"{self.prefix}challenges:address"

    @property
    def challenges_per_address(self) -> str:
        """Hash: address -> how many pending challenges it sent (non-zero counts only; a
        cap counts them)."""
        return f"{self.prefix}challenges:addresses"

    @property
    def rematches(self) -> str:
        """Hash: finished game id -> "offering seat:seat 0's user id:seat 1's user id"."""
        return f"{self.prefix}rematches"

    @property
    def rematches_of_prefix(self) -> str:
        return f"{self.prefix}rematches:user:"

    def rematches_of(self, user_id: int) -> str:
        """Set: the games a user has a rematch offer open for (made or received)."""
        return f"{self.rematches_of_prefix}{user_id}"

    @property
    def ladder(self) -> str:
        """Hash: a ladder bot's user id -> [name, kind, the games it plays] (msgpack)."""
        return f"{self.prefix}ladder"

    @property
    def ladder_leader(self) -> str:
        """String, PX: the node that pairs the ladder's rounds (``node/incarnation``)."""
        return f"{self.prefix}ladder:leader"

    def lockout(self, account: int, address: str) -> str:
        """Hash: one (account, address) pair's failed logins and lock (``count``,
        ``until``)."""
        return f"{self.prefix}lockout:{account}:{address}"

    def bucket(self, scope: str, subject: str | int) -> str:
        """Hash: one token bucket (``scope`` names the limit, e.g. ``account``)."""
        return f"{self.prefix}bucket:{scope}:{subject}"
