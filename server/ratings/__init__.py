"""Ratings: one Glicko-2 pool per game, for humans and bots alike.

    glicko2  the rating mathematics: pure functions over frozen ``Rating`` values, no I/O
             and no clock (the caller passes elapsed rating periods in)
"""
