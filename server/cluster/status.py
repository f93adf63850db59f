"""The table ``tessera cluster status`` prints: the nodes, their games and last heartbeats
(``commands.py`` runs the command)."""

from __future__ import annotations

import textwrap
from datetime import UTC, datetime

from .nodes import NodeInfo


def format_status(cluster: str, nodes: list[NodeInfo]) -> str:
    """The table an operator reads: one line per node, then the games it holds."""
    alive = sum(node.alive for node in nodes)
    lines = [f"cluster {cluster}: {alive} node{'s' * (alive != 1)} alive, "
             f"{len(nodes) - alive} dead"]
    if not nodes:
        return lines[0]
    header = ("node", "state", "address", "pid", "started (UTC)", "last heartbeat",
              "connections", "games")
    rows = [(node.node_id, "alive" if node.alive else "DEAD", node.address or "-",
             str(node.pid or "-"), _moment(node.started_ms), f"{node.age_ms / 1000:.1f} s ago",
             str(node.connections), str(len(node.games))) for node in nodes]
    widths = [max(len(row[column]) for row in [header, *rows]) for column in range(len(header))]
    lines.append("  ".join(title.ljust(width) for title, width in zip(header, widths,
                                                                      strict=True)).rstrip())
    for node, row in zip(nodes, rows, strict=True):
        lines.append("  ".join(cell.ljust(width) for cell, width in zip(row, widths,
                                                                        strict=True)).rstrip())
        if node.games:
            lines.extend(textwrap.wrap(" ".join(node.games), width=96,
                                       initial_indent="    games: ",
                                       subsequent_indent="           "))
    return "\n".join(lines)


def _moment(ms: int) -> str:
    if not ms:
        return "-"
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
