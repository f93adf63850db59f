"""``tessera botcheck``: a bot against a private server, through scripted scenarios.

- :mod:`.cli`: the command, its options, the run and the table;
- :mod:`.scenarios`: each scenario, and what they share (:class:`~.scenarios.Check`);
- :mod:`.sides`: botcheck's own players, whose connections survive the server's restarts;
- :mod:`.subject`: the bot under test, how to run it, and its process.
"""
