"""``tessera siege``: hostile traffic against a real server, measured by honest users.

- :mod:`.cli`: the command, its options, the targets and the output;
- :mod:`.run`: one attack against a fresh server process (phases, memory, rows, ledger);
- :mod:`.canaries`: the ping and move canaries, the ``/healthz`` probe, the bot's opponent;
- :mod:`.attacks`: the attacks, run as processes of their own;
- :mod:`.raw`: sockets driven by hand (handshakes never finished, frames no library sends).
"""
