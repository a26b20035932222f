"""Workspace migrations: each schema version, what changed, and the step from the one before.

The schema (:mod:`veribench.store.schema`) owns the tables; this module owns their
history. Opening a workspace read-write runs every step from its version to
:data:`veribench.store.schema.VERSION` in **one** transaction (all of them or none), then
records the new version. A read-only open of an older workspace, or any open of a newer
one, is refused with one line that names both versions and what to run
(:func:`check_readable`).

========  ==================================================================================
version   what it is
========  ==================================================================================
1         every workspace made before versions were recorded (veribench up to commit
          f6c21e4, 2026-12-01): tables created as each feature first wrote to them; the
          streamed importers (RAID, M4, SemEval, MAGE, HC3, DetectRL, Beemo) stored their
          documents without an ``import`` event.
2         ``schema_meta`` records the version; every table of the schema exists from the
          start; every finished import is logged. Step 1 -> 2 (:func:`_v1_to_v2`): create the
          missing tables, and append an ``import`` event for each finished import whose
          documents no event covers (payload ``logged_by = "migration 1->2"``: their
          fingerprints are logged at migration time, which the event's time says).
3         ``replaced_leaves`` keeps the canonical text of every logged row a later write
          replaces (issue 24: a bundle shows each replaced value with the text its leaf
          hashes), and each ``withdrawal`` event lists the fingerprints it detached
          (``detached``). Step 2 -> 3 (:func:`_v2_to_v3`): create the table. Rows replaced
          before it existed are gone: a run resting on such a key cannot be published as a
          bundle (``publish`` says which), and the migration's note counts those keys.
          Withdrawals logged before keep their counts only (``blanked``).
          ``scores_superseded`` keeps every earlier scan of a (detector spec, text) that a
          newer scan replaced in ``scores`` (a protocol's ``rescan``, ``score --rescan``, or a
          call failure sent again): nothing stored is overwritten (empty after the step:
          version 2 overwrote a re-sent failure, so no earlier scan survives to move).
4         ``document_languages`` holds each document's language and lingua's confidence,
          identified at import (issue 27; :mod:`veribench.text.language`). Step 3 -> 4
          (:func:`_v3_to_v4`): create the table and identify the language of every stored
          document with a text (fingerprint-only documents have none).
========  ==================================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from veribench.store import events as ev
from veribench.store import schema, writes
from veribench.store.schema import SchemaVersionError
from veribench.text import language

#: The command that migrates a workspace in place.
MIGRATE_COMMAND = "veribench workspace migrate -w {path}"


def _v1_to_v2(con: Any) -> list[str]:
    """Create the tables version 1 made lazily; log each finished import that no event covers."""
    schema.create_all(con)
    notes = []
    logged = {e["payload"].get("import_id") for e in ev.read_events(con, types=("import",))}
    rows = con.execute("SELECT import_id, kind, source, json_extract_string(report, '$.status'), "
                       "json_extract_string(report, '$.corpus') FROM imports ORDER BY created_at, import_id").fetchall()
    for import_id, kind, source, status, corpus in rows:
        if import_id in logged or status == "in_progress":
            continue
        docs = con.execute("SELECT doc_id, text_sha256, label, arm, kind, subgroup, corpus, group_key, tags, "
                           "provenance, generation FROM documents WHERE import_id = ?", [import_id]).fetchall()
        if not docs:
            continue
        corpora = sorted({str(r[6]) for r in docs if r[6] is not None})
        src = str(source).replace("\\", "/").rsplit("/", 1)[-1] if source else None
        ev.append_event(con, "import", {"import_id": import_id, "kind": kind, "corpus": corpus, "corpora": corpora,
                                        "source": src, "logged_by": "migration 1->2"},
                        items={"doc": [(r[0], None, ev.doc_leaf(*r)) for r in docs]})
        notes.append(f"logged import {import_id} ({len(docs)} documents stored before imports were logged)")
    return notes


def _v2_to_v3(con: Any) -> list[str]:
    """Create ``replaced_leaves`` and ``scores_superseded``; note how many keys were replaced before it kept their rows."""
    schema.create_all(con)
    n = con.execute("SELECT count(*) FROM (SELECT kind, k1, k2 FROM log_items WHERE k1 IS NOT NULL GROUP BY ALL "
                    "HAVING count(*) > 1)").fetchone()[0]
    if not n:
        return []
    return [f"{n} logged key(s) (a retried score, a re-linked or corrected document) were replaced before this "
            "workspace kept replaced rows: their older values cannot be shown with their text, so a run resting "
            "on one cannot be published as a bundle"]


def _v3_to_v4(con: Any) -> list[str]:
    """Create ``document_languages`` and identify the language of every stored document."""
    schema.create_all(con)
    n = writes.add_languages(con, "documents")
    return [f"identified the language of {n} stored document(s) ({language.METHOD})"] if n else []


#: ``STEPS[v]`` migrates a workspace of version ``v`` to ``v + 1`` (returns notes for the user).
STEPS: dict[int, Callable[[Any], list[str]]] = {1: _v1_to_v2, 2: _v2_to_v3, 3: _v3_to_v4}


def check_readable(version: int, path: Any, *, read_only: bool) -> None:
    """Refuse a workspace this veribench cannot open as asked.

    Raises:
        SchemaVersionError: a newer version than :data:`veribench.store.schema.VERSION`
            (upgrade veribench), or an older one opened read-only (migrate it first).
    """
    if version > schema.VERSION:
        raise SchemaVersionError(
            f"workspace {path} has schema version {version}, newer than this veribench's {schema.VERSION}: "
            "upgrade veribench (pip install -U veribench) to open it")
    if read_only and 0 < version < schema.VERSION:
        raise SchemaVersionError(
            f"workspace {path} has schema version {version} and this veribench reads version {schema.VERSION}: "
            f"run `{MIGRATE_COMMAND.format(path=path)}` to migrate it (one transaction; keep a copy if an older "
            "veribench must still read it)")


def migrate(con: Any, path: Any = "") -> tuple[int, list[str]]:
    """Bring the workspace on ``con`` to :data:`veribench.store.schema.VERSION` in one transaction.

    A new (empty) database gets every table and the current version. A workspace of an
    older version runs each step of :data:`STEPS` in order. Nothing changes when it is
    current. On any error the transaction rolls back and the workspace stays as it was.

    Returns:
        ``(version found, notes)``: 0 for a new database.

    Raises:
        SchemaVersionError: the workspace is newer than this veribench.
    """
    con.execute("BEGIN TRANSACTION")
    try:
        found = schema.stored_version(con, path)
        check_readable(found, path, read_only=False)
        notes: list[str] = []
        if found == 0:
            schema.create_all(con)
        for v in range(max(found, 1), schema.VERSION):
            if found:
                notes += STEPS[v](con)
        if found != schema.VERSION:
            schema.set_version(con)
    except BaseException:
        con.execute("ROLLBACK")
        raise
    con.execute("COMMIT")
    return found, notes
