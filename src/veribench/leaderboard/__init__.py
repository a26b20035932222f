"""The organiser's leaderboard (issue 26): a hidden test set committed in advance, submissions
in RAID's format with signed receipts, the Ladder before the reveal, every number at the reveal.

Apps layer (layer 9, beside ``cycles`` and ``rubric``; the three never import each other).
``config`` reads ``board.toml``; ``db`` holds the board's own data (SQLAlchemy 2: teams,
hashed tokens, submissions, receipts, Ladder state); ``service.Board`` is the service
without HTTP; the hidden set and every entry's evaluation live in an ordinary veribench
workspace.
"""
