"""The organiser's leaderboard (issue 26): a hidden test set committed in advance, submissions
in RAID's format with signed receipts, the Ladder before the reveal, every number at the reveal."""
