"""Tessera as a cluster of nodes: state shared across processes lives in Redis and PostgreSQL.

Redis holds what is fleeting and must be decided once (leases, lobby offers, presence,
rate budgets) and carries messages between nodes (pub/sub); PostgreSQL holds the truth
(moves, game ends, seqs) and fences it (``games.epoch``). Nothing here is a broker or a
consensus of our own: Redis's single-threaded scripts decide races, PostgreSQL's row locks
and constraints refuse stale writes. docs/SCALING.md has the design.

The modules, each small and usable on its own:

    keys        every key and channel name, under ``tessera:{cluster}:``
    config      a node's cluster settings; the checks of ``serve``'s cluster flags
    bus         a node's link to Redis: publish, confirmed subscriptions, requests between
                nodes, a reader that survives Redis restarts and reports gaps
    leases      one owner per live game: acquire, renew in batches, release, loss
    fencing     writes under an owner's epoch, refused by the database once stale
    nodes       the registry: heartbeats, dead nodes claimed once; ``cluster_status``
    commands    ``tessera cluster status|owners|forget|redis-cpu``; ``status`` its table
    lobbystore  seeks (paired and taken once) and challenges (answered once)
    presence    who is online, per node
    feeds       lobby events and token revocations heard by every node
    limits      per-account token buckets shared by every node
    node        ``tessera serve --cluster``: the server as a registered node
    workers     ``tessera serve --workers N``: N nodes on one port, supervised

Errors derive from ``errors.ClusterError`` (hierarchy in ``errors``).
"""
