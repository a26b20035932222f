"""The leaderboard (issue 26): an organiser's service with a hidden test set committed at
launch and revealed at the end, so that anyone can check every number it showed.

Apps layer (layer 9, beside ``cycles`` and ``rubric``; the three never import each other).
``config`` reads ``board.toml``; ``db`` holds the board's own data (SQLAlchemy 2: teams,
hashed tokens, submissions, receipts, Ladder state); ``service.Board`` is the service
without HTTP; the hidden set and every entry's evaluation live in an ordinary veribench
workspace.
"""
