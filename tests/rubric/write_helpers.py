"""Helpers for the arm-B writing app tests: real texts, a writer driving the app over HTTP,
and a writer driving the store directly (for tests about the workspace side)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import httpx

HTML = {"accept": "text/html"}
PROMPT = ("Describe a time you changed your mind about something that mattered to you. "
          "What made you reconsider, and what did you do next?")


def liang_texts(liang_dir: Path, set_name: str) -> list[str]:
    """The real essays of one Liang et al. (2023) human set, in file order."""
    data = json.loads((liang_dir / "Human_Data" / set_name / "data.json").read_text(encoding="utf-8"))
    return [d["document"] for d in data]


def words(text: str) -> int:
    """Independent word count: whitespace tokens holding a letter or digit."""
    return sum(1 for tok in text.split() if any(ch.isalnum() for ch in tok))


def first_words(text: str, n: int) -> str:
    """The first ``n`` words of ``text`` (whitespace tokens), joined by single spaces."""
    toks = text.split()
    assert len(toks) >= n, (len(toks), n)
    return " ".join(toks[:n])


def sentences(text: str, min_chars: int = 30) -> list[str]:
    """Sentences of ``text`` at least ``min_chars`` long (for 'no byte of this text' checks)."""
    parts = re.split(r"(?<=[.!?])\s+", text)
    return [p.strip() for p in parts if len(p.strip()) >= min_chars]


def hidden(html: str, name: str) -> str:
    m = re.search(rf'name="{name}" value="([^"]+)"', html)
    assert m, name
    return m.group(1)


class HttpWriter:
    """One writer's browser-less session against a running app (cookies kept)."""

    def __init__(self, url: str, token: str):
        self.url, self.token = url, token
        self.c = httpx.Client(base_url=url, headers=HTML, follow_redirects=True, timeout=30)
        self.inv: str | None = None
        self.csrf: str | None = None
        self.base = 0

    def close(self) -> None:
        self.c.close()

    def start(self) -> httpx.Response:
        r = self.c.get(f"/i/{self.token}")
        assert r.status_code == 200, r.text
        r = self.c.post(f"/i/{self.token}", data={"csrf_token": hidden(r.text, "csrf_token")})
        assert r.status_code == 200 and "/consent" in str(r.url), (r.status_code, r.url)
        self.inv = str(r.url).split("/w/")[1].split("/")[0]
        self.csrf = hidden(r.text, "csrf_token")
        return r

    def form(self, page: str) -> tuple[str, dict[str, str]]:
        r = self.c.get(f"/w/{self.inv}/{page}")
        assert r.status_code == 200, (page, r.status_code, r.text[:300])
        return r.text, {"csrf_token": hidden(r.text, "csrf_token"), "form_token": hidden(r.text, "form_token")}

    def consent(self) -> httpx.Response:
        _, f = self.form("consent")
        return self.c.post(f"/w/{self.inv}/consent", data={**f, "adult": "yes", "agree": "yes"})

    def about(self, english: str = "native", first_language: str = "English", years: str = "20") -> httpx.Response:
        _, f = self.form("about")
        return self.c.post(f"/w/{self.inv}/about", data={**f, "english": english, "first_language": first_language,
                                                         "years_writing_english": years})

    def onboard(self, **about) -> None:
        self.start()
        assert self.consent().status_code == 200
        r = self.about(**about)
        assert r.status_code == 200 and str(r.url).endswith("/write"), r.text[:300]

    def save(self, text: str, base: int | None = None, **extra) -> httpx.Response:
        body = {"text": text, "base": self.base if base is None else base, **extra}
        r = self.c.post(f"/api/w/{self.inv}/revisions", json=body, headers={"x-csrf-token": self.csrf or ""})
        if r.status_code == 200:
            self.base = r.json()["revision"]
        return r

    def type_in(self, text: str, step_words: int = 8) -> None:
        """Save ``text`` as typing would: ``step_words`` more words per revision."""
        toks = text.split()
        for i in range(step_words, len(toks) + step_words, step_words):
            r = self.save(" ".join(toks[:i]))
            assert r.status_code == 200, r.text

    def submit(self, name: str = "Test Writer", publication: str = "full") -> httpx.Response:
        html, f = self.form("submit")
        rev = re.search(r'name="revision" value="(\d+)"', html).group(1)
        return self.c.post(f"/w/{self.inv}/submit", data={**f, "revision": rev, "attest": "yes",
                                                          "attestation_name": name, "publication": publication})

    def withdraw(self) -> httpx.Response:
        html = self.c.get(f"/w/{self.inv}/withdraw").text
        return self.c.post(f"/w/{self.inv}/withdraw", data={"csrf_token": hidden(html, "csrf_token"),
                                                            "form_token": hidden(html, "form_token"),
                                                            "confirm": "yes"})


def write_directly(db, text: str, *, english: str, first_language: str, years: int, register: str = "academic",
                   publication: str = "full", step_words: int = 10, min_words: int | None = None,
                   prompt: str = PROMPT) -> str:
    """One writer through the store's functions (the same checks as the app): invitation,
    link, consent, self-report, typed revisions, submission. Returns the invitation id."""
    from veribench.rubric.write import store

    [(inv, tok)] = store.create_invitations(db, prompt, register=register, min_words=min_words)
    store.redeem(db, tok)
    store.record_consent(db, inv, adult=True, agree=True, form_token=store.issue_form(db, inv, "consent"))
    store.record_self_report(db, inv, store.parse_self_report(english, first_language, str(years)),
                             form_token=store.issue_form(db, inv, "about"))
    toks, base = text.split(), 0
    for i in range(step_words, len(toks) + step_words, step_words):
        base = store.save_revision(db, inv, " ".join(toks[:i]), base)["revision"]
    store.save_revision(db, inv, text, base)
    last = store.latest_revision(db, inv)
    store.submit(db, inv, revision=last["revision"], name="A. Writer", attest=True, publication=publication,
                 form_token=store.issue_form(db, inv, "submit"))
    return inv
