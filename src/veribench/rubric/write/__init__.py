"""Arm B: fresh volunteer human text, written in an editor that keeps its revision history.

Modules: :mod:`.rules` (registers, length, subgroups, evidence thresholds, the consent and
attestation texts, as data), :mod:`.fingerprint` (the text's normalisation and SHA-256),
:mod:`.evidence` (process evidence from revisions; pure), :mod:`.db` (the app's own SQLite
store, ``write.sqlite``), :mod:`.schema` and :mod:`.migrations` (its tables, version and migrations), :mod:`.store` (invitations, sessions, revisions, submission, withdrawal),
:mod:`.armb` (submitted texts -> arm-B documents; :func:`veribench.store.writes.withdraw_document`, the one
place a withdrawal is applied and logged in a workspace) and :mod:`.app` (the FastAPI app).
CLI: ``veribench write``; documentation: ``docs/arm-b.md``.
"""
