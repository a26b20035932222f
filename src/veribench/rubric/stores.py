"""The apps' stores of one workspace folder, together: the rating app's ``rubric.sqlite`` and
the writing app's ``write.sqlite``, each with its own schema, version and migrations
(:mod:`veribench.rubric.migrations`, :mod:`veribench.rubric.write.migrations`).

For ``veribench workspace migrate -w WS``, the command every refusal of an older store names
(a rating store beside a read-only workspace is refused until it is migrated).
"""

from __future__ import annotations

from pathlib import Path

from veribench.rubric import db as rubric_db
from veribench.rubric.write import db as write_db


def migrate_stores(folder: str | Path) -> list[str]:
    """Bring each app store that exists in workspace ``folder`` to its current version (each in
    one transaction); a missing store is not created.

    Returns:
        notes for the user: one line per store migrated, then what each step did.

    Raises:
        SchemaVersionError: a store newer than this veribench (the stores before it are done).
        VeribenchError: a file that is not that store, or SQLite failed mid-migration (that
            store was not changed).
    """
    folder = Path(folder)
    notes: list[str] = []
    if (folder / rubric_db.FILE_NAME).is_file():
        with rubric_db.open_store(folder) as r:
            notes += r.migration_notes
    if (folder / write_db.FILE_NAME).is_file():
        with write_db.open_store(folder) as w:
            notes += w.migration_notes
    return notes
