"""Storage of the editors' rubric (the rating app's SQLite store), and the assignment rules.

Tables: :mod:`veribench.rubric.schema` (items, editors, assignments, ratings, marks, one-time
forms, the session secret, sessions).

The tables live in the rating app's own SQLite store beside the workspace's DuckDB file
(:mod:`veribench.rubric.db`, ``docs/concurrency.md``); every function takes that store or a
:class:`~veribench.store.Workspace`, whose store it opens.

Assignment rules (rubric 001, see :mod:`veribench.rubric.rules`): two editors per output,
never the same editor twice on one output, least-loaded editor first (ties broken by a
hash of blind id and editor, so a rerun gives the same answer); when both readings of an
output are in and differ by ``THIRD_READ_GAP`` or more, a third editor who has not read it
gets a blind third read, in the same transaction that stored the second reading.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from veribench.errors import InputError, VeribenchError
from veribench.hashing import text_sha256
from veribench.rubric import rules
from veribench.rubric.db import RubricDB, open_store
from veribench.store.workspace import Workspace
from veribench.text.words import readability_delta, split_sentences, word_count

_EDITOR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
_BLIND_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
MAX_CLAIMS, MAX_CLAIM_CHARS = 200, 1000


class RatingError(VeribenchError):
    """A reading that cannot be stored. ``status`` is the HTTP status the app answers with
    (400 bad input, 403/404 not this editor's, 409 replayed form or already submitted)."""

    def __init__(self, message: str, status: int = 400, field: str | None = None):
        super().__init__(message)
        self.status, self.field = status, field


def now_utc() -> datetime:
    return datetime.now(UTC)


def sha256_hex(s: str) -> str:
    return hashlib.sha256(s.encode("utf-8")).hexdigest()


def _ts() -> str:
    """Now, as ISO 8601 text in UTC (how the rubric store keeps every time)."""
    return now_utc().isoformat()


#: What the functions below accept: the rubric store itself, or a workspace (its store is
#: opened beside it once and closed with it).
Store = Workspace | RubricDB


def db(ws: Store) -> RubricDB:
    """The rubric store (SQLite, ``<workspace>/rubric.sqlite``; :mod:`veribench.rubric.db`), opened
    once per workspace (read-only when the workspace is) and closed with it.

    Raises:
        SchemaVersionError: a store newer than this veribench, or an older one beside a
            read-only workspace (:func:`veribench.rubric.db.open_store`).
    """
    if isinstance(ws, RubricDB):
        return ws
    cached = getattr(ws, "_rubric_db", None)
    if cached is None:
        cached = open_store(ws.path, duck=ws.con, read_only=getattr(ws, "read_only", False))
        ws._rubric_db = cached  # type: ignore[attr-defined]
        closers = getattr(ws, "on_close", None)
        if closers is not None:
            closers.append(cached.close)
    return cached


def open_rubric(folder: str | Path, *, read_only: bool = False) -> RubricDB:
    """Open the rubric store of workspace ``folder`` without opening its DuckDB file (close it after
    use); read-write, an older store is migrated in one transaction (:func:`veribench.rubric.db.open_store`).

    Raises:
        SchemaVersionError: a store newer than this veribench, or an older one opened read-only.
    """
    return open_store(folder, read_only=read_only)


def ensure_schema(ws: Store) -> RubricDB:
    """The rubric store, with its tables (created when the store is opened)."""
    return db(ws)


def new_blind_id() -> str:
    """A random blind id such as ``r-k7qm2xw9ad``: 10 symbols from a 31-letter alphabet
    (about 49 bits), drawn with :mod:`secrets`; it carries no tool, order or source."""
    return "r-" + "".join(secrets.choice(_BLIND_ALPHABET) for _ in range(10))


# -- pairs --------------------------------------------------------------------------------
@dataclass(frozen=True)
class Pair:
    """One humanizer input/output pair to be read.

    Attributes:
        pair_key: unique key of the pair across loads (e.g. ``cycle:July 2026:<test id>``);
            loading the same key twice keeps the first.
        tool: the humanizer that produced ``output_text`` (never shown to editors).
        input_text, output_text: the texts; both non-empty.
        source, pair_id, sample_id: provenance, stored for the export (never shown to editors).
    """

    pair_key: str
    tool: str
    input_text: str
    output_text: str
    source: str | None = None
    pair_id: str | None = None
    sample_id: str | None = None


def add_pairs(ws: Store, pairs: Iterable[Pair]) -> dict[str, int]:
    """Store pairs (each with a fresh blind id) in random order, in one transaction.

    Returns ``{"added": n, "already_loaded": m}`` (a pair key already stored is kept as is).
    """
    ws = db(ws)
    pairs = list(pairs)
    secrets.SystemRandom().shuffle(pairs)  # storage order reveals nothing
    ts = _ts()
    prepared: dict[str, list[Any]] = {}
    for p in pairs:
        if p.pair_key in prepared:
            continue
        prepared[p.pair_key] = [
            None, p.pair_key, p.source, p.pair_id, p.sample_id, p.tool, p.input_text, p.output_text,
            text_sha256(p.input_text), text_sha256(p.output_text),
            json.dumps(split_sentences(p.output_text), ensure_ascii=False), word_count(p.output_text),
            json.dumps(readability_delta(p.input_text, p.output_text)), ts]
    with ws.transaction() as c:
        existing = {r[0] for r in c.execute("SELECT pair_key FROM rubric_items").fetchall()}
        used = {r[0] for r in c.execute("SELECT blind_id FROM rubric_items").fetchall()}
        rows = []
        for key, row in prepared.items():
            if key in existing:
                continue
            bid = new_blind_id()
            while bid in used:
                bid = new_blind_id()
            used.add(bid)
            rows.append([bid] + row[1:])
        if rows:
            c.executemany("INSERT INTO rubric_items VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
    return {"added": len(rows), "already_loaded": len(pairs) - len(rows)}


def tool_names(ws: Store) -> list[str]:
    ws = db(ws)
    return [r[0] for r in ws.query("SELECT DISTINCT tool FROM rubric_items ORDER BY 1")]


def get_item(ws: Store, blind_id: str) -> dict[str, Any] | None:
    """The pair behind ``blind_id`` (including its tool), or None."""
    ws = db(ws)
    rows = ws.query(
        "SELECT blind_id, tool, input_text, output_text, output_sentences, output_words, readability "
        "FROM rubric_items WHERE blind_id = ?", [blind_id])
    if not rows:
        return None
    b, tool, it, ot, sents, words, read = rows[0]
    return {"blind_id": b, "tool": tool, "input_text": it, "output_text": ot, "sentences": json.loads(sents),
            "output_words": words, "readability": json.loads(read) if read else None}


# -- editors ------------------------------------------------------------------------------
def add_editor(ws: Store, name: str) -> str:
    """Register editor ``name`` and return their new token (shown once; only its SHA-256 is stored).

    Raises:
        InputError: bad or taken name, or a name equal to a loaded tool's name.
    """
    ws = db(ws)
    if not _EDITOR_NAME.fullmatch(name or ""):
        raise InputError("editor name must be 1-64 letters, digits, '.', '_' or '-', starting with a letter "
                         f"or digit (got {name!r})", field="name")
    if name.lower() in {t.lower() for t in tool_names(ws)}:
        raise InputError(f"editor name {name!r} is the name of a tool being rated; choose another", field="name")
    token = secrets.token_urlsafe(32)  # 32 random bytes
    with ws.transaction() as c:
        if c.execute("SELECT 1 FROM rubric_editors WHERE lower(editor) = lower(?)", [name]).fetchall():
            raise InputError(f"editor {name!r} already exists", field="name")
        c.execute("INSERT INTO rubric_editors VALUES (?,?,?)", [name, sha256_hex(token), _ts()])
    return token


def editor_for_token(ws: Store, token: str | None) -> str | None:
    """The editor whose token this is, or None."""
    if not token:
        return None
    ws = db(ws)
    rows = ws.query("SELECT editor FROM rubric_editors WHERE token_sha256 = ?", [sha256_hex(token.strip())])
    return rows[0][0] if rows else None


def editor_exists(ws: Store, name: str) -> bool:
    ws = db(ws)
    return bool(ws.query("SELECT 1 FROM rubric_editors WHERE editor = ?", [name]))


def list_editors(ws: Store) -> list[dict[str, Any]]:
    ws = db(ws)
    rows = ws.query(
        "SELECT e.editor, e.created_at, count(a.blind_id), count(r.blind_id) FROM rubric_editors e "
        "LEFT JOIN rubric_assignments a ON a.editor = e.editor "
        "LEFT JOIN rubric_ratings r ON r.editor = a.editor AND r.blind_id = a.blind_id "
        "GROUP BY e.editor, e.created_at ORDER BY e.editor")
    return [{"editor": e, "created_at": t, "assigned": n, "submitted": m} for e, t, n, m in rows]


def session_secret(ws: Store) -> str:
    """The workspace's session-signing secret, created once and kept (sessions survive restarts)."""
    ws = db(ws)
    with ws.transaction() as c:
        rows = c.execute("SELECT value FROM rubric_meta WHERE key = 'session_secret'").fetchall()
        if rows:
            return rows[0][0]
        s = secrets.token_hex(32)
        c.execute("INSERT INTO rubric_meta VALUES ('session_secret', ?)", [s])
        return s


def open_session(ws: Store, editor: str, max_age_s: int) -> str:
    """A new server-side session for ``editor``; returns its id (only its SHA-256 is stored)."""
    from datetime import timedelta

    ws = db(ws)
    sid = secrets.token_urlsafe(32)
    now = now_utc()
    with ws.transaction() as c:
        c.execute("INSERT INTO rubric_sessions VALUES (?,?,?,?,NULL)",
                  [sha256_hex(sid), editor, now.isoformat(), (now + timedelta(seconds=max_age_s)).isoformat()])
    return sid


def session_editor(ws: Store, sid: str | None) -> str | None:
    """The editor of a live session (stored, not revoked, not expired), or None."""
    if not sid or not isinstance(sid, str):
        return None
    ws = db(ws)
    rows = ws.query("SELECT s.editor, s.expires_at FROM rubric_sessions s JOIN rubric_editors e USING (editor) "
                    "WHERE s.sid_sha256 = ? AND s.revoked_at IS NULL", [sha256_hex(sid)])
    if not rows or datetime.fromisoformat(rows[0][1]) <= now_utc():
        return None
    return rows[0][0]


def revoke_session(ws: Store, sid: str | None) -> bool:
    """Revoke a session (sign-out): its cookie is refused from now on, by this server and any
    other serving the same store. Returns whether a live session was revoked."""
    if not sid or not isinstance(sid, str):
        return False
    ws = db(ws)
    with ws.transaction() as c:
        cur = c.execute("UPDATE rubric_sessions SET revoked_at = ? WHERE sid_sha256 = ? AND revoked_at IS NULL",
                        [_ts(), sha256_hex(sid)])
        return cur.rowcount > 0


# -- assignment ---------------------------------------------------------------------------
def _tiebreak(blind_id: str, editor: str) -> str:
    return sha256_hex(f"{blind_id}\x00{editor}")


def plan_assignments(editors: Sequence[str], items: Sequence[str], current: Iterable[tuple[str, str, int]],
                     third_needed: Sequence[str] = ()) -> list[tuple[str, str, int]]:
    """New (blind_id, editor, read_no) assignments; pure function of its inputs.

    Every item gets ``READERS_PER_OUTPUT`` first readers (read numbers 1..2) and every item in
    ``third_needed`` one third reader (read number 3), never an editor already on the item;
    each pick is the least-loaded eligible editor (load = all their assignments), ties broken
    by sha256(blind_id, editor). Items are taken in blind-id order, which is random. With a
    fixed editor set this keeps loads within one of each other.
    """
    load = dict.fromkeys(editors, 0)
    on_item: dict[str, dict[str, int]] = {b: {} for b in items}
    for b, e, n in current:
        on_item.setdefault(b, {})[e] = n
        load[e] = load.get(e, 0) + 1
    new: list[tuple[str, str, int]] = []

    def pick(b: str) -> str | None:
        cands = [e for e in editors if e not in on_item[b]]
        return min(cands, key=lambda e: (load[e], _tiebreak(b, e))) if cands else None

    def put(b: str, e: str, n: int) -> None:
        on_item[b][e] = n
        load[e] += 1
        new.append((b, e, n))

    for b in sorted(items):
        while True:
            taken = set(on_item[b].values())
            free = [n for n in range(1, rules.READERS_PER_OUTPUT + 1) if n not in taken]
            e = pick(b) if free else None
            if e is None:
                break
            put(b, e, free[0])
    for b in sorted(third_needed):
        e = pick(b)
        if e is not None:
            put(b, e, rules.READERS_PER_OUTPUT + 1)
    return new


def _assign_in(c: Any) -> dict[str, int]:
    editors = [r[0] for r in c.execute("SELECT editor FROM rubric_editors ORDER BY editor").fetchall()]
    items = [r[0] for r in c.execute("SELECT blind_id FROM rubric_items ORDER BY blind_id").fetchall()]
    current = c.execute("SELECT blind_id, editor, read_no FROM rubric_assignments").fetchall()
    new = plan_assignments(editors, items, current, _third_reads_needed(c))
    if new:
        ts = _ts()
        c.executemany("INSERT INTO rubric_assignments VALUES (?,?,?,?,NULL,NULL)", [[b, e, n, ts] for b, e, n in new])
    third = sum(1 for _, _, n in new if n > rules.READERS_PER_OUTPUT)
    return {"assigned": len(new) - third, "third_reads_assigned": third}


def _assign_third_in(c: Any, blind_id: str) -> dict[str, int]:
    """After a reading of ``blind_id``: give it a third reader if its gap now calls for one."""
    if blind_id not in _third_reads_needed(c, blind_id):
        return {"assigned": 0, "third_reads_assigned": 0}
    editors = [r[0] for r in c.execute("SELECT editor FROM rubric_editors ORDER BY editor").fetchall()]
    current = c.execute("SELECT blind_id, editor, read_no FROM rubric_assignments").fetchall()
    new = plan_assignments(editors, [], current, [blind_id])
    if new:
        c.executemany("INSERT INTO rubric_assignments VALUES (?,?,?,?,NULL,NULL)",
                      [[b, e, n, _ts()] for b, e, n in new])
    return {"assigned": 0, "third_reads_assigned": len(new)}


def _third_reads_needed(c: Any, blind_id: str | None = None) -> list[str]:
    """Outputs whose two first readings differ by THIRD_READ_GAP or more and have no third
    reader (only ``blind_id`` when given)."""
    only = "AND r.blind_id = ? " if blind_id is not None else ""
    rows = c.execute(
        "SELECT r.blind_id FROM rubric_ratings r WHERE r.read_no <= ? " + only + "GROUP BY r.blind_id "
        "HAVING count(*) = ? AND max(r.score) - min(r.score) >= ? "
        "AND NOT EXISTS (SELECT 1 FROM rubric_assignments a WHERE a.blind_id = r.blind_id AND a.read_no > ?) "
        "ORDER BY r.blind_id",
        [rules.READERS_PER_OUTPUT, *([blind_id] if blind_id is not None else []), rules.READERS_PER_OUTPUT,
         rules.THIRD_READ_GAP, rules.READERS_PER_OUTPUT],
    ).fetchall()
    return [r[0] for r in rows]


def ensure_assignments(ws: Store) -> dict[str, int]:
    """Give every output its two readers and every wide gap its third reader, as far as the
    registered editors allow. Idempotent. Returns counts of new assignments."""
    ws = db(ws)
    with ws.transaction() as c:
        return _assign_in(c)


def rebalance(ws: Store) -> int:
    """Move not-yet-started assignments (no claims listed) from the most- to the least-loaded
    editor until loads differ by at most one, or nothing more can move without putting an
    editor twice on one output. For editors who join after ``assign``. Returns moves made."""
    ws = db(ws)
    moves = 0
    with ws.transaction() as c:
        editors = [r[0] for r in c.execute("SELECT editor FROM rubric_editors ORDER BY editor").fetchall()]
        if len(editors) < 2:
            return 0
        rows = c.execute("SELECT a.blind_id, a.editor, a.claims IS NULL AND r.blind_id IS NULL "
                         "FROM rubric_assignments a LEFT JOIN rubric_ratings r USING (blind_id, editor)").fetchall()
        on_item: dict[str, set[str]] = {}
        load = dict.fromkeys(editors, 0)
        movable: dict[str, list[str]] = {e: [] for e in editors}
        for b, e, free in rows:
            on_item.setdefault(b, set()).add(e)
            load[e] = load.get(e, 0) + 1
            if free:
                movable.setdefault(e, []).append(b)
        for e in movable:
            movable[e].sort(key=lambda b: _tiebreak(b, e))
        while True:
            order = sorted(editors, key=lambda e: (load[e], e))
            lo, moved = order[0], False
            for hi in reversed(order):
                if load[hi] - load[lo] <= 1:
                    break
                for b in movable[hi]:
                    if lo not in on_item[b]:
                        c.execute("UPDATE rubric_assignments SET editor = ?, assigned_at = ? "
                                  "WHERE blind_id = ? AND editor = ?", [lo, _ts(), b, hi])
                        movable[hi].remove(b)
                        on_item[b] = (on_item[b] - {hi}) | {lo}
                        load[hi] -= 1
                        load[lo] += 1
                        moves += 1
                        moved = True
                        break
                if moved:
                    break
            if not moved:
                break
    return moves


def assignment_status(ws: Store) -> dict[str, Any]:
    """Counts for the CLI: outputs, editors, loads, readings in and third reads pending."""
    ws = db(ws)
    q = lambda sql: ws.query(sql)[0][0]  # noqa: E731
    with ws.lock:
        needed = len(_third_reads_needed(ws.con))
    return {
        "outputs": q("SELECT count(*) FROM rubric_items"),
        "editors": q("SELECT count(*) FROM rubric_editors"),
        "assignments": q("SELECT count(*) FROM rubric_assignments"),
        "readings": q("SELECT count(*) FROM rubric_ratings"),
        "outputs_short_of_readers": q(
            f"SELECT count(*) FROM rubric_items i WHERE (SELECT count(*) FROM rubric_assignments a WHERE "
            f"a.blind_id = i.blind_id AND a.read_no <= {rules.READERS_PER_OUTPUT}) < {rules.READERS_PER_OUTPUT}"),
        "third_reads_waiting_for_an_editor": needed,
        "load": dict(ws.query(
            "SELECT e.editor, count(a.blind_id) FROM rubric_editors e LEFT JOIN rubric_assignments a "
            "USING (editor) GROUP BY 1 ORDER BY 1")),
    }


# -- editor views -------------------------------------------------------------------------
def assignments_for(ws: Store, editor: str) -> list[dict[str, Any]]:
    """This editor's assignments, ordered by blind id (random, so the order reveals nothing).

    Each: ``{"blind_id", "state"}`` where state is ``claims`` (list the input's claims),
    ``reading`` (claims listed; read the output) or ``submitted``.
    """
    ws = db(ws)
    rows = ws.query(
        "SELECT a.blind_id, a.claims IS NOT NULL, r.blind_id IS NOT NULL FROM rubric_assignments a "
        "LEFT JOIN rubric_ratings r ON r.blind_id = a.blind_id AND r.editor = a.editor "
        "WHERE a.editor = ? ORDER BY a.blind_id", [editor])
    return [{"blind_id": b, "state": "submitted" if done else ("reading" if claimed else "claims")}
            for b, claimed, done in rows]


def assignment(ws: Store, editor: str, blind_id: str) -> dict[str, Any] | None:
    """This editor's assignment on ``blind_id`` with the pair's texts, or None when the output
    is not assigned to them. The returned dict never holds the tool."""
    ws = db(ws)
    rows = ws.query("SELECT read_no, claims FROM rubric_assignments WHERE editor = ? AND blind_id = ?",
                    [editor, blind_id])
    if not rows:
        return None
    item = get_item(ws, blind_id)
    assert item is not None
    item.pop("tool")
    read_no, claims = rows[0]
    item["claims"] = json.loads(claims) if claims else None
    rating = ws.query(
        "SELECT score, claims_found, dropped_claims, invented_facts, changed_facts, submitted_at "
        "FROM rubric_ratings WHERE editor = ? AND blind_id = ?", [editor, blind_id])
    if rating:
        s, found, d, i, ch, at = rating[0]
        marks = ws.query("SELECT sentence_index, class FROM rubric_marks WHERE editor = ? AND blind_id = ? "
                         "ORDER BY 1, 2", [editor, blind_id])
        item["rating"] = {"score": s, "found": json.loads(found), "dropped_claims": d, "invented_facts": i,
                          "changed_facts": ch, "submitted_at": at, "marks": [list(m) for m in marks]}
    else:
        item["rating"] = None
    return item


# -- one-time form tokens -----------------------------------------------------------------
def issue_form(ws: Store, editor: str, blind_id: str, purpose: str) -> str:
    """A one-time token for one form (claims or rating) of one editor on one output."""
    ws = db(ws)
    token = secrets.token_urlsafe(24)
    with ws.transaction() as c:
        c.execute("INSERT INTO rubric_forms VALUES (?,?,?,?,?,NULL)",
                  [sha256_hex(token), editor, blind_id, purpose, _ts()])
    return token


def _consume_form(c: Any, token: str | None, editor: str, blind_id: str,
                  purpose: str) -> None:
    if not token:
        raise RatingError("the form token is missing; reload the page and submit again", 400, "form_token")
    rows = c.execute("SELECT editor, blind_id, purpose, used_at FROM rubric_forms WHERE nonce_sha256 = ?",
                     [sha256_hex(token)]).fetchall()
    if not rows or rows[0][:3] != (editor, blind_id, purpose):
        raise RatingError("this form token was not issued for this page; reload the page", 400, "form_token")
    if rows[0][3] is not None:
        raise RatingError("this form was already submitted (a replayed form); nothing was changed", 409,
                          "form_token")
    c.execute("UPDATE rubric_forms SET used_at = ? WHERE nonce_sha256 = ?", [_ts(), sha256_hex(token)])


# -- the reading --------------------------------------------------------------------------
def parse_claims(text: str) -> list[str]:
    """Claims as short lines: one per non-empty line, stripped (a leading ``-``/``*`` bullet removed)."""
    out = []
    for line in (text or "").splitlines():
        line = re.sub(r"^\s*(?:[-*\u2022]|\d+[.)])\s+", "", line).strip()
        if line:
            out.append(line)
    if not out:
        raise RatingError("list at least one claim of the input, one per line", 400, "claims")
    if len(out) > MAX_CLAIMS:
        raise RatingError(f"at most {MAX_CLAIMS} claims (got {len(out)})", 400, "claims")
    if any(len(x) > MAX_CLAIM_CHARS for x in out):
        raise RatingError(f"a claim line is longer than {MAX_CLAIM_CHARS} characters; keep claims short",
                          400, "claims")
    return out


def save_claims(ws: Store, editor: str, blind_id: str, claims: Sequence[str], form_token: str | None,
                *, require_form: bool = True) -> None:
    """Step 1: store the editor's claim lines (before the output is shown). Claims are final."""
    ws = db(ws)
    with ws.transaction() as c:
        rows = c.execute("SELECT claims FROM rubric_assignments WHERE editor = ? AND blind_id = ?",
                         [editor, blind_id]).fetchall()
        if not rows:
            raise RatingError("no such assignment", 404)
        if require_form:
            _consume_form(c, form_token, editor, blind_id, "claims")
        if rows[0][0] is not None:
            raise RatingError("the claims for this output were already listed; nothing was changed", 409, "claims")
        c.execute("UPDATE rubric_assignments SET claims = ?, claims_at = ? WHERE editor = ? AND blind_id = ?",
                  [json.dumps(list(claims), ensure_ascii=False), _ts(), editor, blind_id])


def parse_score(value: Any) -> int:
    """The 1-5 meaning score as an int, or RatingError (400) naming the value."""
    if isinstance(value, bool):
        raise RatingError(f"score must be a whole number from {rules.SCORE_MIN} to {rules.SCORE_MAX} "
                          f"(got {value!r})", 400, "score")
    try:
        s = int(str(value).strip()) if not isinstance(value, int) else value
    except (TypeError, ValueError):
        s = None
    if s is None or not rules.SCORE_MIN <= s <= rules.SCORE_MAX or (isinstance(value, float) and value != s):
        raise RatingError(f"score must be a whole number from {rules.SCORE_MIN} to {rules.SCORE_MAX} "
                          f"(got {value!r})", 400, "score")
    return s


def parse_mark(value: Any, sentences: Sequence[str]) -> tuple[int, str]:
    """A mark as (sentence index, class). Accepts ``"INDEX:CLASS"`` strings (the form) or
    ``{"sentence_index": i | "sentence": text, "class": c}`` dicts (the JSON API).

    Raises RatingError (400) for an unknown class or a sentence not in the output.
    """
    if isinstance(value, dict):
        cls = value.get("class")
        if "sentence" in value and value.get("sentence_index") is None:
            text = str(value["sentence"]).strip()
            if text not in sentences:
                raise RatingError(f"mark on a sentence that is not in the output: {text[:80]!r}", 400, "marks")
            idx: Any = list(sentences).index(text)
        else:
            idx = value.get("sentence_index")
    else:
        idx, _, cls = str(value).partition(":")
    if cls not in rules.MARKABLE_CLASSES:
        raise RatingError(f"unknown mark class {cls!r}; one of: {', '.join(rules.MARKABLE_CLASSES)}", 400, "marks")
    try:
        i = int(idx)
    except (TypeError, ValueError):
        raise RatingError(f"mark on a sentence that is not in the output (sentence {idx!r})", 400, "marks") from None
    if not 0 <= i < len(sentences):
        raise RatingError(f"mark on a sentence that is not in the output (sentence {i + 1}; the output has "
                          f"{len(sentences)} sentences)", 400, "marks")
    return i, cls


def submit_reading(ws: Store, editor: str, blind_id: str, *, score: Any, found: Iterable[Any],
                   marks: Iterable[Any], form_token: str | None, require_form: bool = True) -> dict[str, Any]:
    """Steps 2-5: store one reading, all or nothing; assign a third read when this reading
    opens a gap of ``THIRD_READ_GAP`` or more with the other first reading.

    Args:
        score: the 1-5 meaning score.
        found: indices (0-based) of the editor's claims ticked off in the output; the rest
            are dropped claims.
        marks: see :func:`parse_mark`. ``invented_fact`` marks give the invented-facts count,
            ``changed_number_name_date`` marks the changed-facts count.
        form_token: the one-time token of the rendered form (replays are refused).

    Returns ``{"dropped_claims", "invented_facts", "changed_facts", "third_read_assigned"}``.

    Raises:
        RatingError: bad score, a score above what the rubric allows for the reading's
            dropped claims and invented facts (:func:`veribench.rubric.rules.max_score`),
            bad claim index, a mark on a sentence not in the output, not assigned, claims
            not listed, replayed form or already submitted. Nothing stored changes.
    """
    ws = db(ws)
    a = assignment(ws, editor, blind_id)
    if a is None:
        raise RatingError("no such assignment", 404)
    if a["claims"] is None:
        raise RatingError("list the input's claims first (step 1)", 409, "claims")
    s = parse_score(score)
    claims = a["claims"]
    found_set: set[int] = set()
    for f in found:
        try:
            i = int(f)
        except (TypeError, ValueError):
            raise RatingError(f"ticked claim {f!r} is not a claim number", 400, "found") from None
        if not 0 <= i < len(claims):
            raise RatingError(f"ticked claim {i + 1} does not exist (you listed {len(claims)})", 400, "found")
        found_set.add(i)
    sents = a["sentences"]
    parsed = sorted({parse_mark(m, sents) for m in marks if not (isinstance(m, str) and not m.strip())})
    dropped = len(claims) - len(found_set)
    invented = sum(1 for _, c in parsed if c == "invented_fact")
    changed = sum(1 for _, c in parsed if c == "changed_number_name_date")
    cap = rules.max_score(dropped, invented)
    if s > cap:
        raise RatingError(f"with {dropped} dropped claim(s) and {invented} invented fact(s) the meaning score can be "
                          f"at most {cap}, not {s}: {rules.CONSISTENCY_RULE}. Lower the score, or tick the claims "
                          "the output does keep", 400, "score")
    with ws.transaction() as c:
        if require_form:
            _consume_form(c, form_token, editor, blind_id, "rating")
        if c.execute("SELECT 1 FROM rubric_ratings WHERE editor = ? AND blind_id = ?",
                     [editor, blind_id]).fetchall():
            raise RatingError("this output was already rated by you; nothing was changed", 409)
        read_no = c.execute("SELECT read_no FROM rubric_assignments WHERE editor = ? AND blind_id = ?",
                            [editor, blind_id]).fetchall()[0][0]
        c.execute("INSERT INTO rubric_ratings VALUES (?,?,?,?,?,?,?,?,?,?)",
                  [blind_id, editor, read_no, s, json.dumps(claims, ensure_ascii=False),
                   json.dumps(sorted(found_set)), dropped, invented, changed, _ts()])
        if parsed:
            c.executemany("INSERT INTO rubric_marks VALUES (?,?,?,?,?)",
                          [[blind_id, editor, i, sents[i], cls] for i, cls in parsed])
        made = _assign_third_in(c, blind_id)
    return {"dropped_claims": dropped, "invented_facts": invented, "changed_facts": changed,
            "third_read_assigned": made["third_reads_assigned"] > 0}
