"""Invitations, sessions, drafts, submissions and withdrawals in the writing store.

Every function takes an open :class:`~.db.WriteDB` and does its writes in one transaction,
so a refused request changes nothing. Errors are :class:`WriteError` with the HTTP status
the app answers with (400 bad input, 401 not signed in, 404 not this writer's, 409 a
replayed form, a stale draft or the wrong step, 410 a used or revoked link).

The states of an invitation, in order: ``invited`` (link not yet opened) -> ``started``
(link exchanged for a session) -> ``consented`` -> ``writing`` (self-report given; the
editor is open) -> ``submitted``; ``withdrawn`` from any of them.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import unicodedata
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from veribench.errors import InputError
from veribench.rubric.store import RatingError
from veribench.rubric.write import rules
from veribench.rubric.write.db import WriteDB
from veribench.rubric.write.evidence import Step, describe, diff_step, summarise
from veribench.rubric.write.fingerprint import fingerprint, normalise_text
from veribench.text.words import word_count

_ID_ALPHABET = "abcdefghjkmnpqrstuvwxyz23456789"
#: Control characters refused in a text (C0 and C1 except tab and line feed).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
#: Categories refused in a volunteer's text (no honest essay needs them), with their names.
_REFUSED_CATEGORIES = {"Cn": "an unassigned", "Co": "a private-use"}
_NAME_OK = re.compile(r"[^\W\d_]")


class WriteError(RatingError):
    """A request the writing app refuses: ``WriteError(message, status=400, field=None)``, with
    the HTTP status the app answers with and the input field it names (as the rating app's
    :class:`~veribench.rubric.store.RatingError`)."""


def now_utc() -> datetime:
    return datetime.now(UTC)


def _iso(t: datetime) -> str:
    return t.isoformat(timespec="microseconds")


def _dt(s: str | None) -> datetime | None:
    return datetime.fromisoformat(s) if s else None


def sha256_hex(s: str) -> str:
    return hashlib.sha256(s.encode("utf-8")).hexdigest()


def _random_id(prefix: str, n: int = 12) -> str:
    return prefix + "".join(secrets.choice(_ID_ALPHABET) for _ in range(n))


def doc_id_for(invitation_id: str) -> str:
    """The workspace document id of an invitation's submitted text."""
    return f"{rules.CORPUS}/{invitation_id}"


# -- meta ---------------------------------------------------------------------------------
def session_secret(db: WriteDB) -> str:
    """The store's session-signing secret, created once and kept (sessions survive restarts)."""
    with db.transaction() as c:
        row = c.execute("SELECT value FROM write_meta WHERE key = 'session_secret'").fetchone()
        if row:
            return row[0]
        s = secrets.token_hex(32)
        c.execute("INSERT INTO write_meta VALUES ('session_secret', ?)", [s])
        return s


# -- invitations --------------------------------------------------------------------------
def add_prompt(db: WriteDB, text: str, *, file: str | None = None) -> str:
    """Store a prompt (kept once per text) and return its id ``p-<12 hex of its SHA-256>``.

    Raises:
        InputError: an empty prompt, or one longer than 5,000 characters.
    """
    t = normalise_text(text)
    if not t:
        raise InputError("the prompt is empty", file=file)
    if len(t) > 5000:
        raise InputError(f"the prompt has {len(t)} characters; keep it under 5,000", file=file)
    h = sha256_hex(t)
    pid = "p-" + h[:12]
    with db.transaction() as c:
        c.execute("INSERT OR IGNORE INTO write_prompts VALUES (?,?,?,?)", [pid, t, h, _iso(now_utc())])
    return pid


def create_invitations(db: WriteDB, prompt: str, *, register: str = rules.DEFAULT_REGISTER, count: int = 1,
                       min_words: int | None = None, max_words: int | None = None,
                       prompt_file: str | None = None) -> list[tuple[str, str]]:
    """Create ``count`` personal invitations to write on ``prompt`` in ``register``.

    Returns ``[(invitation_id, token)]``. The token (32 random bytes, URL-safe) is the
    secret part of the link and is returned only here; the store keeps its SHA-256.

    Raises:
        InputError: unknown register, count outside 1..1000, a bad word range, or a prompt
            that states a word count outside the range (:func:`rules.stated_word_counts`).
    """
    if register not in rules.REGISTERS:
        raise InputError(f"unknown register {register!r}; one of: {', '.join(rules.REGISTERS)}", field="register")
    if not 1 <= count <= 1000:
        raise InputError(f"count must be 1-1000 (got {count})", field="count")
    lo = rules.TARGET_WORDS[0] if min_words is None else min_words
    hi = rules.TARGET_WORDS[1] if max_words is None else max_words
    if not rules.WORDS_LIMITS[0] <= lo <= hi <= rules.WORDS_LIMITS[1]:
        raise InputError(f"the word range must satisfy {rules.WORDS_LIMITS[0]} <= min <= max <= "
                         f"{rules.WORDS_LIMITS[1]} (got {lo}-{hi})", field="min_words")
    outside = [n for n in rules.stated_word_counts(prompt) if not lo <= n <= hi]
    if outside:
        raise InputError(f"the prompt asks for {outside[0]:,} words, outside the invitation's length of {lo:,}-{hi:,} "
                         "words that the page shows beside it (edit the prompt, or give --min-words/--max-words "
                         "that include it)", file=prompt_file, field="prompt")
    pid = add_prompt(db, prompt, file=prompt_file)
    out = []
    with db.transaction() as c:
        for _ in range(count):
            inv, tok = _random_id("inv-"), secrets.token_urlsafe(32)
            c.execute("INSERT INTO write_invitations (invitation_id, token_sha256, prompt_id, register, min_words, "
                      "max_words, created_at, state) VALUES (?,?,?,?,?,?,?, 'invited')",
                      [inv, sha256_hex(tok), pid, register, lo, hi, _iso(now_utc())])
            out.append((inv, tok))
    return out


_INV_COLS = ("invitation_id", "prompt_id", "register", "min_words", "max_words", "created_at", "token_used_at",
             "revoked_at", "state", "consent_version", "consented_at", "english", "first_language",
             "years_writing_english", "self_report_at", "editor_opened_at", "withdrawn_at")


def get_invitation(db: WriteDB, invitation_id: str) -> dict[str, Any] | None:
    """The invitation with its prompt text (``prompt``), or None."""
    rows = db.query(f"SELECT {', '.join('i.' + c for c in _INV_COLS)}, p.text FROM write_invitations i "
                    "JOIN write_prompts p USING (prompt_id) WHERE i.invitation_id = ?", [invitation_id])
    if not rows:
        return None
    d = dict(zip(_INV_COLS, rows[0][:-1]))
    d["prompt"] = rows[0][-1]
    d["register_description"] = rules.REGISTERS.get(d["register"], d["register"])
    return d


def invitation_for_token(db: WriteDB, token: str | None) -> dict[str, Any] | None:
    """The invitation behind a link token, whatever its state, or None."""
    if not token or not isinstance(token, str) or not token.isascii():
        return None
    rows = db.query("SELECT invitation_id FROM write_invitations WHERE token_sha256 = ?", [sha256_hex(token)])
    return get_invitation(db, rows[0][0]) if rows else None


def _link_problem(inv: dict[str, Any]) -> str | None:
    if inv["revoked_at"] or inv["state"] == "withdrawn":
        return "This invitation link was withdrawn or revoked. Ask the organiser for a new one."
    if inv["token_used_at"]:
        return ("This invitation link was already used. Links work once; if you lost your sign-in, ask the "
                "organiser for a new link to the same draft (`veribench write reissue`).")
    return None


def link_status(db: WriteDB, token: str) -> tuple[dict[str, Any] | None, str | None]:
    """(invitation, problem): the problem is None when the link can still be opened."""
    inv = invitation_for_token(db, token)
    if inv is None:
        return None, "No invitation has this link."
    return inv, _link_problem(inv)


def redeem(db: WriteDB, token: str, max_age: int = rules.SESSION_MAX_AGE) -> tuple[str, str]:
    """Exchange a link token for a new server-side session: ``(invitation_id, session id)``.

    The token works once. Raises WriteError: 404 unknown link, 410 used or revoked.
    """
    inv = invitation_for_token(db, token)
    if inv is None:
        raise WriteError("No invitation has this link.", 404)
    with db.transaction() as c:
        row = c.execute("SELECT token_used_at, revoked_at, state FROM write_invitations WHERE invitation_id = ?",
                        [inv["invitation_id"]]).fetchone()
        problem = _link_problem({"token_used_at": row[0], "revoked_at": row[1], "state": row[2]})
        if problem:
            raise WriteError(problem, 410)
        t = now_utc()
        c.execute("UPDATE write_invitations SET token_used_at = ?, state = CASE WHEN state = 'invited' THEN 'started' "
                  "ELSE state END WHERE invitation_id = ?", [_iso(t), inv["invitation_id"]])
        sid = secrets.token_urlsafe(32)
        c.execute("INSERT INTO write_sessions VALUES (?,?,?,?,NULL)",
                  [sha256_hex(sid), inv["invitation_id"], _iso(t), _iso(t + timedelta(seconds=max_age))])
    return inv["invitation_id"], sid


def session_invitation(db: WriteDB, sid: Any) -> str | None:
    """The invitation of a live session (stored, not revoked, not expired), or None."""
    if not isinstance(sid, str) or not sid or not sid.isascii():
        return None
    rows = db.query("SELECT s.invitation_id, s.expires_at FROM write_sessions s JOIN write_invitations i "
                    "USING (invitation_id) WHERE s.sid_sha256 = ? AND s.revoked_at IS NULL AND i.revoked_at IS NULL "
                    "AND i.state <> 'withdrawn'", [sha256_hex(sid)])
    if not rows or _dt(rows[0][1]) <= now_utc():
        return None
    return rows[0][0]


def revoke_session(db: WriteDB, sid: Any) -> None:
    """End one session on the server (sign-out): its cookie is refused from now on."""
    if isinstance(sid, str) and sid:
        with db.transaction() as c:
            c.execute("UPDATE write_sessions SET revoked_at = ? WHERE sid_sha256 = ? AND revoked_at IS NULL",
                      [_iso(now_utc()), sha256_hex(sid)])


def _revoke_all_sessions(c: Any, invitation_id: str) -> None:
    c.execute("UPDATE write_sessions SET revoked_at = ? WHERE invitation_id = ? AND revoked_at IS NULL",
              [_iso(now_utc()), invitation_id])


def _need(db: WriteDB, invitation_id: str) -> dict[str, Any]:
    inv = get_invitation(db, invitation_id)
    if inv is None:
        raise InputError(f"no invitation {invitation_id!r} (see `veribench write status`)", field="invitation")
    return inv


def revoke_invitation(db: WriteDB, invitation_id: str) -> None:
    """Revoke an invitation: its link and every session die; the draft is kept (organiser action)."""
    _need(db, invitation_id)
    with db.transaction() as c:
        c.execute("UPDATE write_invitations SET revoked_at = ? WHERE invitation_id = ?", [_iso(now_utc()), invitation_id])
        _revoke_all_sessions(c, invitation_id)


def reissue(db: WriteDB, invitation_id: str) -> str:
    """A new link for the same invitation and draft (the writer lost their sign-in): the old
    token and every session are revoked. Returns the new token.

    Raises:
        InputError: unknown, withdrawn or submitted invitation.
    """
    inv = _need(db, invitation_id)
    if inv["state"] == "withdrawn":
        raise InputError(f"invitation {invitation_id} was withdrawn", field="invitation")
    tok = secrets.token_urlsafe(32)
    with db.transaction() as c:
        c.execute("UPDATE write_invitations SET token_sha256 = ?, token_used_at = NULL, revoked_at = NULL, "
                  "state = CASE WHEN state = 'started' THEN 'invited' ELSE state END WHERE invitation_id = ?",
                  [sha256_hex(tok), invitation_id])
        _revoke_all_sessions(c, invitation_id)
    return tok


# -- one-time form tokens ----------------------------------------------------------------
def issue_form(db: WriteDB, invitation_id: str, purpose: str) -> str:
    """A one-time token for one form (``consent``, ``about``, ``save``, ``submit``, ``withdraw``)."""
    tok = secrets.token_urlsafe(24)
    with db.transaction() as c:
        c.execute("INSERT INTO write_forms VALUES (?,?,?,?,NULL)", [sha256_hex(tok), invitation_id, purpose,
                                                                    _iso(now_utc())])
    return tok


def _consume_form(c: Any, token: Any, invitation_id: str, purpose: str) -> None:
    if not isinstance(token, str) or not token or not token.isascii():
        raise WriteError("the form token is missing; reload the page and send the form again", 400, "form_token")
    row = c.execute("SELECT invitation_id, purpose, used_at FROM write_forms WHERE nonce_sha256 = ?",
                    [sha256_hex(token)]).fetchone()
    if row is None or (row[0], row[1]) != (invitation_id, purpose):
        raise WriteError("this form token was not issued for this page; reload the page", 400, "form_token")
    if row[2] is not None:
        raise WriteError("this form was already sent (a replayed form); nothing was changed", 409, "form_token")
    c.execute("UPDATE write_forms SET used_at = ? WHERE nonce_sha256 = ?", [_iso(now_utc()), sha256_hex(token)])


def _state(c: Any, invitation_id: str) -> str:
    row = c.execute("SELECT state FROM write_invitations WHERE invitation_id = ?", [invitation_id]).fetchone()
    if row is None:
        raise WriteError("no such draft", 404)
    return row[0]


_WRONG_STEP = {
    "submitted": "this text was already submitted; nothing was changed",
    "withdrawn": "this text was withdrawn",
}


def _require(c: Any, invitation_id: str, allowed: tuple[str, ...], what: str) -> str:
    st = _state(c, invitation_id)
    if st not in allowed:
        msg = _WRONG_STEP.get(st) or {
            "invited": "open your invitation link first", "started": "read and accept the consent first",
            "consented": "answer the three questions about your English first"}.get(st, f"not possible now ({st})")
        raise WriteError(f"cannot {what}: {msg}", 409)
    return st


# -- consent and self-report --------------------------------------------------------------
def record_consent(db: WriteDB, invitation_id: str, *, adult: bool, agree: bool, form_token: Any) -> None:
    """Record consent (the version of the text shown). Both boxes must be ticked."""
    with db.transaction() as c:
        _consume_form(c, form_token, invitation_id, "consent")
        _require(c, invitation_id, ("started", "consented", "writing"), "record consent")
        if not adult:
            raise WriteError("please confirm that you are 18 or older", 400, "adult")
        if not agree:
            raise WriteError("please tick that you have read the consent and agree", 400, "agree")
        c.execute("UPDATE write_invitations SET consent_version = ?, consented_at = coalesce(consented_at, ?), "
                  "state = CASE WHEN state = 'started' THEN 'consented' ELSE state END WHERE invitation_id = ?",
                  [rules.CONSENT_VERSION, _iso(now_utc()), invitation_id])


class SelfReport(BaseModel):
    """The writer's self-report (strict types: no coercion, no unknown keys).

    Attributes:
        english: ``native`` or ``non-native`` (English as a native language).
        first_language: as the writer names it, 1-64 characters holding a letter, no digits.
        years_writing_english: whole years, 0..120.
    """

    model_config = ConfigDict(strict=True, extra="forbid")
    english: Literal["native", "non-native"]
    first_language: str = Field(min_length=1, max_length=rules.FIRST_LANGUAGE_MAX_CHARS)
    years_writing_english: int = Field(ge=0, le=rules.MAX_YEARS)


def parse_self_report(english: Any, first_language: Any, years: Any) -> SelfReport:
    """Form fields (strings) -> :class:`SelfReport`, or WriteError (400) naming the field."""
    if english not in rules.ENGLISH:
        raise WriteError("say whether English is your native language", 400, "english")
    lang = " ".join(first_language.split()) if isinstance(first_language, str) else ""
    if not lang or len(lang) > rules.FIRST_LANGUAGE_MAX_CHARS or not _NAME_OK.search(lang) \
            or any(ch.isdigit() for ch in lang) or _CONTROL.search(lang):
        raise WriteError(f"name your first language in words (1-{rules.FIRST_LANGUAGE_MAX_CHARS} characters, "
                         "no digits)", 400, "first_language")
    if not isinstance(years, str) or not re.fullmatch(r"\s*[0-9]{1,3}\s*", years) or int(years) > rules.MAX_YEARS:
        raise WriteError(f"years writing in English must be a whole number from 0 to {rules.MAX_YEARS}", 400,
                         "years_writing_english")
    return SelfReport(english=english, first_language=lang, years_writing_english=int(years))


def record_self_report(db: WriteDB, invitation_id: str, report: SelfReport, *, form_token: Any) -> None:
    """Store the self-report (it can be corrected until the text is submitted)."""
    with db.transaction() as c:
        _consume_form(c, form_token, invitation_id, "about")
        _require(c, invitation_id, ("consented", "writing"), "record your answers")
        c.execute("UPDATE write_invitations SET english = ?, first_language = ?, years_writing_english = ?, "
                  "self_report_at = ?, state = 'writing' WHERE invitation_id = ?",
                  [report.english, report.first_language, report.years_writing_english, _iso(now_utc()),
                   invitation_id])


def mark_editor_opened(db: WriteDB, invitation_id: str) -> None:
    """Remember when the writer first opened the editor (the start of writing time)."""
    with db.transaction() as c:
        c.execute("UPDATE write_invitations SET editor_opened_at = ? WHERE invitation_id = ? AND "
                  "editor_opened_at IS NULL AND state = 'writing'", [_iso(now_utc()), invitation_id])


# -- revisions ----------------------------------------------------------------------------
def check_text(text: Any) -> str:
    """The normalised draft text, or WriteError (400/413) naming the problem: too long, a
    control character, or an unassigned (``Cn``) or private-use (``Co``) code point."""
    if not isinstance(text, str):
        raise WriteError("text must be a string", 400, "text")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise WriteError("the text holds an unpaired surrogate (not valid Unicode text)", 400, "text") from None
    t = normalise_text(text)
    if len(t) > rules.MAX_TEXT_CHARS:
        raise WriteError(f"the draft has {len(t)} characters; at most {rules.MAX_TEXT_CHARS} are kept", 413, "text")
    m = _CONTROL.search(t)
    if m:
        raise WriteError(f"the text holds a control character (U+{ord(m.group()):04X}) at character "
                         f"{m.start() + 1}; remove it", 400, "text")
    for i, ch in enumerate(t):
        cat = unicodedata.category(ch) if not ch.isascii() else ""
        if cat in _REFUSED_CATEGORIES:
            raise WriteError(f"the text holds {_REFUSED_CATEGORIES[cat]} character (U+{ord(ch):04X}) at character "
                             f"{i + 1}; remove it", 400, "text")
    return t


def latest_revision(db: WriteDB, invitation_id: str) -> dict[str, Any] | None:
    rows = db.query("SELECT revision_no, saved_at, text, words FROM write_revisions WHERE invitation_id = ? "
                    "ORDER BY revision_no DESC LIMIT 1", [invitation_id])
    if not rows:
        return None
    n, at, text, words = rows[0]
    return {"revision": n, "saved_at": at, "text": text, "words": words}


def save_revision(db: WriteDB, invitation_id: str, text: Any, base: int, *, via: str = "autosave",
                  form_token: Any = None, require_form: bool = False) -> dict[str, Any]:
    """Store a new revision of the draft when its text changed.

    Args:
        text: the whole draft (normalised by :func:`.fingerprint.normalise_text`).
        base: the revision the writer's text was built on (0 before the first save). A
            stale base (another window saved since, or a replayed request) is refused.
        via: ``autosave`` (JSON API) or ``form`` (the Save button without JavaScript).

    Returns:
        ``{"revision", "saved_at", "words", "changed", "evidence"}`` (evidence without history).

    Raises:
        WriteError: 409 stale base, not in the writing step or ``MAX_REVISIONS`` reached;
            400/413 bad text.
    """
    t = check_text(text)
    if isinstance(base, bool) or not isinstance(base, int) or base < 0:
        raise WriteError("base must be the number of the last saved revision (0 before the first)", 400, "base")
    with db.transaction() as c:
        if require_form:
            _consume_form(c, form_token, invitation_id, "save")
        _require(c, invitation_id, ("writing",), "save the draft")
        row = c.execute("SELECT revision_no, text, saved_at FROM write_revisions WHERE invitation_id = ? "
                        "ORDER BY revision_no DESC LIMIT 1", [invitation_id]).fetchone()
        last_no, last_text, last_at = row if row else (0, "", None)
        if base != last_no:
            raise WriteError(f"the draft was saved elsewhere since (revision {last_no}, not {base}): reload the page "
                             "to continue from the saved draft", 409, "base")
        if t == last_text:
            changed, no, at = False, last_no, last_at
        elif last_no >= rules.MAX_REVISIONS:
            raise WriteError(f"this draft already has {rules.MAX_REVISIONS} saved revisions, the most one draft "
                             "keeps; submit it, or ask the organiser", 409, "text")
        else:
            st = diff_step(last_text, t)
            no, at = last_no + 1, _iso(now_utc())
            c.execute("INSERT INTO write_revisions VALUES (?,?,?,?,?,?,?,?,?)",
                      [invitation_id, no, at, t, st.words, st.inserted_words, st.deleted_words,
                       st.largest_insertion_words, via])
            changed = True
    return {"revision": no, "saved_at": at, "words": word_count(t), "changed": changed,
            "evidence": evidence_for(db, invitation_id, history=False)}


def evidence_for(db: WriteDB, invitation_id: str, *, history: bool = True) -> dict[str, Any]:
    """Process evidence of the draft so far (:func:`.evidence.summarise`)."""
    rows = db.query("SELECT saved_at, words, inserted_words, deleted_words, largest_insertion_words "
                    "FROM write_revisions WHERE invitation_id = ? ORDER BY revision_no", [invitation_id])
    opened = db.query("SELECT editor_opened_at FROM write_invitations WHERE invitation_id = ?", [invitation_id])
    steps = [Step(words=w, inserted_words=i, deleted_words=d, largest_insertion_words=lg) for _, w, i, d, lg in rows]
    return summarise(steps, [_dt(r[0]) for r in rows], _dt(opened[0][0]) if opened else None, history=history)


# -- submission ---------------------------------------------------------------------------
def submit(db: WriteDB, invitation_id: str, *, revision: int, name: Any, attest: bool, publication: Any,
           form_token: Any) -> dict[str, Any]:
    """Submit the latest revision with the typed-name attestation and the publication choice.

    Raises:
        WriteError: 409 replayed form, a draft changed since the page was shown, or not in
            the writing step; 400 a length outside the invitation's range, no typed name,
            attestation not ticked, unknown publication choice.
    """
    nm = " ".join(name.split()) if isinstance(name, str) else ""
    with db.transaction() as c:
        _consume_form(c, form_token, invitation_id, "submit")
        _require(c, invitation_id, ("writing",), "submit")
        row = c.execute("SELECT revision_no, text, words FROM write_revisions WHERE invitation_id = ? "
                        "ORDER BY revision_no DESC LIMIT 1", [invitation_id]).fetchone()
        if row is None:
            raise WriteError("write your text first: nothing was saved yet", 409, "revision")
        no, text, words = row
        if revision != no:
            raise WriteError(f"the draft changed since this page was shown (revision {no}, not {revision}); review "
                             "it again before submitting", 409, "revision")
        lo, hi = c.execute("SELECT min_words, max_words FROM write_invitations WHERE invitation_id = ?",
                           [invitation_id]).fetchone()
        if not lo <= words <= hi:
            raise WriteError(f"the text has {words} words; the invitation asks for {lo}-{hi} words", 400, "words")
        if not attest:
            raise WriteError("tick the attestation to submit", 400, "attest")
        if not 2 <= len(nm) <= 200 or not _NAME_OK.search(nm) or _CONTROL.search(nm):
            raise WriteError("type your full name to sign the attestation", 400, "attestation_name")
        if publication not in rules.PUBLICATION:
            raise WriteError(f"choose how the text is published: {' or '.join(rules.PUBLICATION)}", 400,
                             "publication")
        att = _random_id("att-")
        ev = evidence_for(db, invitation_id)
        at = _iso(now_utc())
        c.execute("INSERT INTO write_submissions VALUES (?,?,?,?,?,?,?,?,?,?,?,?,NULL,NULL)",
                  [invitation_id, att, rules.ATTESTATION_VERSION, nm, publication, no, text, fingerprint(text), words,
                   json.dumps(ev, sort_keys=True, allow_nan=False), at, doc_id_for(invitation_id)])
        c.execute("UPDATE write_invitations SET state = 'submitted' WHERE invitation_id = ?", [invitation_id])
    return submission(db, invitation_id)  # type: ignore[return-value]


def submission(db: WriteDB, invitation_id: str) -> dict[str, Any] | None:
    """The submission of an invitation (with text and evidence), or None."""
    rows = db.query("SELECT attestation_id, attestation_version, publication, revision_no, text, text_sha256, words, "
                    "evidence, submitted_at, doc_id, imported_at, import_id FROM write_submissions "
                    "WHERE invitation_id = ?", [invitation_id])
    if not rows:
        return None
    k = ("attestation_id", "attestation_version", "publication", "revision", "text", "text_sha256", "words",
         "evidence", "submitted_at", "doc_id", "imported_at", "import_id")
    d = dict(zip(k, rows[0]))
    d["evidence"] = json.loads(d["evidence"])
    return d


# -- withdrawal ---------------------------------------------------------------------------
def withdraw(db: WriteDB, invitation_id: str, *, via: str, confirm: bool = True, form_token: Any = None,
             require_form: bool = False) -> dict[str, Any]:
    """Withdraw a draft or a submitted text from the writing store.

    Deletes every revision, the submission (text, typed name) and the self-report, revokes
    the link and every session, and records the withdrawal in ``write_withdrawals`` with the
    workspace document to remove (:func:`veribench.rubric.write.armb.apply_withdrawals`
    removes it there and logs it). SQLite runs with ``secure_delete``; the write-ahead log
    is checkpointed and truncated afterwards, so no copy of the text stays in the files.

    Returns ``{"invitation_id", "state_before", "doc_id"}``.

    Raises:
        WriteError: 409 already withdrawn or a replayed form; 400 not confirmed.
        InputError: unknown invitation.
    """
    _need(db, invitation_id)
    with db.transaction() as c:
        if require_form:
            _consume_form(c, form_token, invitation_id, "withdraw")
        st = _state(c, invitation_id)
        if st == "withdrawn":
            raise WriteError("this text was already withdrawn", 409)
        if not confirm:
            raise WriteError("tick the box to confirm that the text should be deleted", 400, "confirm")
        had = c.execute("SELECT doc_id FROM write_submissions WHERE invitation_id = ?", [invitation_id]).fetchone()
        doc_id = had[0] if had else None
        t = _iso(now_utc())
        c.execute("DELETE FROM write_revisions WHERE invitation_id = ?", [invitation_id])
        c.execute("DELETE FROM write_submissions WHERE invitation_id = ?", [invitation_id])
        c.execute("DELETE FROM write_forms WHERE invitation_id = ?", [invitation_id])
        c.execute("UPDATE write_invitations SET state = 'withdrawn', withdrawn_at = ?, revoked_at = coalesce(revoked_at, ?), "
                  "english = NULL, first_language = NULL, years_writing_english = NULL, self_report_at = NULL "
                  "WHERE invitation_id = ?", [t, t, invitation_id])
        _revoke_all_sessions(c, invitation_id)
        c.execute("INSERT INTO write_withdrawals VALUES (?,?,?,?,?,NULL)", [invitation_id, t, via, st, doc_id])
    with db.lock:
        db.con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    return {"invitation_id": invitation_id, "state_before": st, "doc_id": doc_id, "requested_at": t}


def pending_withdrawals(db: WriteDB) -> list[dict[str, Any]]:
    """Withdrawals whose workspace document has not been removed yet."""
    rows = db.query("SELECT invitation_id, requested_at, via, state_before, doc_id FROM write_withdrawals "
                    "WHERE doc_id IS NOT NULL AND workspace_removed_at IS NULL ORDER BY requested_at")
    return [dict(zip(("invitation_id", "requested_at", "via", "state_before", "doc_id"), r)) for r in rows]


def mark_withdrawal_applied(db: WriteDB, invitation_id: str) -> None:
    with db.transaction() as c:
        c.execute("UPDATE write_withdrawals SET workspace_removed_at = ? WHERE invitation_id = ?",
                  [_iso(now_utc()), invitation_id])


# -- import bookkeeping and status --------------------------------------------------------
def pending_submissions(db: WriteDB) -> list[dict[str, Any]]:
    """Submitted texts not yet in the workspace, with what their documents need."""
    ids = [r[0] for r in db.query("SELECT invitation_id FROM write_submissions WHERE imported_at IS NULL "
                                  "ORDER BY submitted_at")]
    out = []
    for i in ids:
        inv = get_invitation(db, i)
        sub = submission(db, i)
        if inv and sub:
            out.append({"invitation": inv, "submission": sub})
    return out


def mark_imported(db: WriteDB, invitation_ids: list[str], import_id: str) -> None:
    with db.transaction() as c:
        t = _iso(now_utc())
        for i in invitation_ids:
            c.execute("UPDATE write_submissions SET imported_at = ?, import_id = ? WHERE invitation_id = ?",
                      [t, import_id, i])


def list_invitations(db: WriteDB) -> list[dict[str, Any]]:
    """Every invitation for the organiser: id, register, state, revisions, words, publication,
    import state and the one-line evidence (never a text or a name)."""

    rows = db.query("SELECT i.invitation_id, i.register, i.state, i.english, s.publication, s.words, s.imported_at, "
                    "(SELECT count(*) FROM write_revisions r WHERE r.invitation_id = i.invitation_id) "
                    "FROM write_invitations i LEFT JOIN write_submissions s USING (invitation_id) "
                    "ORDER BY i.created_at, i.invitation_id")
    out = []
    for inv, reg, st, eng, pub, words, imp, nrev in rows:
        ev = evidence_for(db, inv, history=False) if nrev else None
        out.append({"invitation_id": inv, "register": reg, "state": st, "english": eng, "publication": pub,
                    "words": words, "imported": imp is not None, "revisions": nrev,
                    "evidence": describe(ev) if ev else "no revision saved"})
    return out
