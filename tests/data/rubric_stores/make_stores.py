"""Make the two version-1 store fixtures of this folder with veribench as it was at commit
f6c21e4 (before the stores recorded a schema version). See README.md for how it was run.

It drives that veribench only from the outside: its command line (``rate editors add``,
``rate assign --from-cycle``, ``rate serve``, ``write invite``, ``write serve``, ``write
withdraw``, ``write revoke``) and the two apps' HTTP interfaces on 127.0.0.1 (a reading
saved through the rating app's JSON API and one through its forms; a writer who signs in
with a link, consents, reports, types and submits through the writing app). It imports
nothing of veribench, so which veribench made the files is only the one named by
``--veribench``.

    python make_stores.py --veribench /work/main/.venv/bin/veribench --out tests/data/rubric_stores

writes ``rating-v1.sqlite.gz`` and ``writing-v1.sqlite.gz`` (the ``rubric.sqlite`` and
``write.sqlite`` of a workspace folder, gzipped with mtime 0) and prints their row counts.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import socket
import sqlite3
import subprocess
import tempfile
import time
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[3]
CYCLE = REPO / "tests" / "data" / "humanizerbench" / "July 2026"
ESSAYS = REPO / "src" / "veribench" / "data" / "demo" / "liang2023" / "Human_Data" / "CollegeEssay_real_70" / "data.json"
PROMPT = ("Describe a time you changed your mind about something that mattered to you. "
          "What made you reconsider, and what did you do next?")
HTML = {"accept": "text/html"}


def run(veribench: str, *args: str) -> str:
    p = subprocess.run([veribench, *args], capture_output=True, text=True, check=False)
    if p.returncode != 0:
        raise SystemExit(f"veribench {' '.join(args)} failed ({p.returncode}): {p.stderr}{p.stdout}")
    return p.stdout


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """``veribench <group> serve`` in a child process on a free port of 127.0.0.1."""

    def __init__(self, veribench: str, group: str, ws: Path):
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.proc = subprocess.Popen([veribench, group, "serve", "-w", str(ws), "--host", "127.0.0.1",
                                      "--port", str(self.port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        t0 = time.time()
        while True:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                if self.proc.poll() is not None or time.time() - t0 > 60:
                    raise SystemExit(f"{group} serve did not start: {self.proc.stderr.read().decode()}") from None
                time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM: uvicorn shuts down cleanly and the app closes its store (WAL checkpointed)."""
        self.proc.terminate()
        self.proc.wait(timeout=60)


def hidden(html: str, name: str) -> str:
    m = re.search(rf'name="{name}" value="([^"]+)"', html)
    if not m:
        raise SystemExit(f"no hidden field {name} on the page")
    return m.group(1)


def ok(r: httpx.Response) -> httpx.Response:
    if r.status_code != 200:
        raise SystemExit(f"{r.request.method} {r.request.url}: {r.status_code} {r.text[:300]}")
    return r


# -- the rating app ---------------------------------------------------------------------------
def make_rating(veribench: str, ws: Path) -> None:
    tokens = {}
    for name in ("alice", "bob", "carol"):
        tokens[name] = run(veribench, "rate", "editors", "add", name, "-w", str(ws)).strip().splitlines()[-1]
    run(veribench, "rate", "assign", "-w", str(ws), "--from-cycle", str(CYCLE), "--limit", "4")
    srv = Server(veribench, "rate", ws)
    try:
        api = {n: httpx.Client(base_url=srv.url, headers={"authorization": f"Bearer {t}"}, timeout=30)
               for n, t in tokens.items()}
        mine = {n: [a["blind_id"] for a in ok(c.get("/api/assignments")).json()["assignments"]]
                for n, c in api.items()}
        shared = sorted(set(mine["alice"]) & set(mine["bob"]))
        if not shared:
            raise SystemExit("alice and bob share no output; rerun (the blind ids are random)")
        b = shared[0]
        # alice: every claim found, one writing mark -> 5; bob on the same output: two of three
        # claims dropped -> 2 (a gap of 3, so a third read is assigned in the same transaction)
        ok(api["alice"].post(f"/api/read/{b}", json={
            "claims": ["The text makes a first claim.", "It makes a second one.", "And a third."],
            "found": [0, 1, 2], "score": 5, "marks": [{"sentence_index": 0, "class": "synonym_misfire"}]}))
        ok(api["bob"].post(f"/api/read/{b}", json={
            "claims": ["The first claim.", "The second claim.", "The third claim."],
            "found": [0], "score": 2, "marks": [{"sentence_index": 0, "class": "synonym_misfire"},
                                                {"sentence_index": 1, "class": "changed_qualifier"}]}))
        other = [x for x in mine["alice"] if x != b][:1]
        for x in other:
            ok(api["alice"].post(f"/api/read/{x}", json={"claims": ["One claim only."], "found": [0], "score": 4}))
        # carol through the forms, as a browser: sign in, list the claims of one output, sign out
        c = httpx.Client(base_url=srv.url, headers=HTML, follow_redirects=True, timeout=30)
        page = ok(c.get("/login")).text
        ok(c.post("/login", data={"token": tokens["carol"], "csrf_token": hidden(page, "csrf_token")}))
        todo = re.findall(r'/read/(r-[a-z0-9]+)', ok(c.get("/assignments")).text)
        page = ok(c.get(f"/read/{todo[0]}")).text
        ok(c.post(f"/read/{todo[0]}/claims", data={"claims": "A claim carol listed.\nAnd a second one.",
                                                   "csrf_token": hidden(page, "csrf_token"),
                                                   "form_token": hidden(page, "form_token")}))
        page = ok(c.get("/assignments")).text
        ok(c.post("/logout", data={"csrf_token": hidden(page, "csrf_token")}))
        for cl in (*api.values(), c):
            cl.close()
    finally:
        srv.stop()


# -- the writing app --------------------------------------------------------------------------
def make_writing(veribench: str, ws: Path) -> None:
    prompt = ws.parent / "prompt.txt"
    prompt.write_text(PROMPT, encoding="utf-8")
    out = run(veribench, "write", "invite", "-w", str(ws), "--prompt-file", str(prompt), "--register", "casual",
              "--count", "4", "--min-words", "60", "--max-words", "400")
    links = [line.split("\t") for line in out.strip().splitlines()]
    essay = next(d["document"] for d in json.loads(ESSAYS.read_text(encoding="utf-8"))
                 if 120 <= len(d["document"].split()) <= 400)
    toks = essay.split()
    srv = Server(veribench, "write", ws)
    try:
        writers = []
        for inv, link in links[:3]:
            tok = link.rsplit("/i/", 1)[1]
            c = httpx.Client(base_url=srv.url, headers=HTML, follow_redirects=True, timeout=30)
            page = ok(c.get(f"/i/{tok}")).text
            r = ok(c.post(f"/i/{tok}", data={"csrf_token": hidden(page, "csrf_token")}))
            assert f"/w/{inv}/consent" in str(r.url), r.url
            writers.append((inv, c, hidden(r.text, "csrf_token")))
        # writer 1: consent, self-report, types the essay in steps of 12 words, submits
        # writer 2: consent, self-report, two drafts, not submitted (then withdrawn by the CLI)
        for k, (inv, c, csrf) in enumerate(writers[:2]):
            page = ok(c.get(f"/w/{inv}/consent")).text
            ok(c.post(f"/w/{inv}/consent", data={"csrf_token": hidden(page, "csrf_token"),
                                                 "form_token": hidden(page, "form_token"),
                                                 "adult": "yes", "agree": "yes"}))
            page = ok(c.get(f"/w/{inv}/about")).text
            ok(c.post(f"/w/{inv}/about", data={"csrf_token": hidden(page, "csrf_token"),
                                               "form_token": hidden(page, "form_token"),
                                               "english": "native" if k == 0 else "non-native",
                                               "first_language": "English" if k == 0 else "Polish",
                                               "years_writing_english": "20" if k == 0 else "9"}))
            base = 0
            steps = range(12, len(toks) + 12, 12) if k == 0 else (10, 25)
            for i in steps:
                r = ok(c.post(f"/api/w/{inv}/revisions", json={"text": " ".join(toks[:i]), "base": base},
                              headers={"x-csrf-token": csrf}))
                base = r.json()["revision"]
        inv, c, _ = writers[0]
        page = ok(c.get(f"/w/{inv}/submit")).text
        rev = re.search(r'name="revision" value="(\d+)"', page).group(1)
        ok(c.post(f"/w/{inv}/submit", data={"csrf_token": hidden(page, "csrf_token"),
                                            "form_token": hidden(page, "form_token"), "revision": rev,
                                            "attest": "yes", "attestation_name": "A. Writer",
                                            "publication": "full"}))
        for _, c, _ in writers:
            c.close()
    finally:
        srv.stop()
    run(veribench, "write", "withdraw", links[1][0], "-w", str(ws), "--yes")
    run(veribench, "write", "revoke", links[3][0], "-w", str(ws))


def counts(path: Path) -> dict[str, int]:
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        return {n: con.execute(f"SELECT count(*) FROM {n}").fetchone()[0] for n in names}
    finally:
        con.close()


def keep(src: Path, dest: Path) -> None:
    """Gzip ``src`` to ``dest`` (mtime 0: the same bytes give the same file)."""
    for side in ("-wal", "-shm"):
        if Path(str(src) + side).exists() and Path(str(src) + side).stat().st_size:
            raise SystemExit(f"{src}{side} was left behind: the server did not close the store")
    with open(dest, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as gz:
        gz.write(src.read_bytes())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--veribench", required=True, help="The veribench executable that makes the stores.")
    ap.add_argument("--out", type=Path, required=True, help="Folder for the gzipped stores.")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        ws = Path(d) / "ws"
        make_rating(a.veribench, ws)
        make_writing(a.veribench, ws)
        leftovers = sorted(p.name for p in ws.iterdir() if p.name not in ("rubric.sqlite", "write.sqlite"))
        if leftovers:
            raise SystemExit(f"unexpected files in the workspace folder: {leftovers}")
        for name, src in (("rating-v1.sqlite.gz", ws / "rubric.sqlite"), ("writing-v1.sqlite.gz", ws / "write.sqlite")):
            keep(src, a.out / name)
            print(name, json.dumps(counts(src)))


if __name__ == "__main__":
    main()
