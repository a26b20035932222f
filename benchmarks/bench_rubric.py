"""Benchmark: the editors' rubric over a whole HumanizerBench cycle (real data).

Loads every pair of ``shared/data/humanizerbench/July 2026`` (429 outputs of 13 tools),
registers 6 editors and assigns two readers per output, then submits two seeded random
readings per output (third reads as the gaps call for them), and times: loading (sentence
split + Flesch-Kincaid of input and output), assignment, one reading's round trip through
the app (GET the page, POST the form, with CSRF and one-time token), aggregation
(``tool_results``) and the ratings.csv export. Goals: load under 10 s, a reading's round
trip under 100 ms, aggregation and export under 2 s, on 2 cores.

Run: ``.venv/bin/python benchmarks/bench_rubric.py [--cycle PATH]``
"""

from __future__ import annotations

import argparse
import json
import random
import re
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cycle", default=str(REPO.parent / "shared/data/humanizerbench/July 2026"))
    args = ap.parse_args()
    from fastapi.testclient import TestClient

    from veribench.rubric import loaders, results, store
    from veribench.rubric.app import create_app
    from veribench.store import Workspace
    from veribench.text.words import fk_grade

    fk_grade("Warm up the pronunciation dictionary.")  # one-off cmudict load, timed apart
    out: dict[str, float | int] = {}
    with tempfile.TemporaryDirectory() as d:
        ws = Workspace(Path(d) / "ws")
        t = time.perf_counter()
        pairs, rep = loaders.pairs_from_cycle(args.cycle)
        store.add_pairs(ws, pairs)
        out["load_s"] = time.perf_counter() - t
        out["outputs"] = rep["pairs"]
        toks = {f"ed{i}": store.add_editor(ws, f"ed{i}") for i in range(6)}
        t = time.perf_counter()
        store.ensure_assignments(ws)
        out["assign_s"] = time.perf_counter() - t
        rng = random.Random(0)
        t = time.perf_counter()
        n_reads = 0
        for e in toks:
            for a in store.assignments_for(ws, e):
                b = a["blind_id"]
                n_sent = len(store.get_item(ws, b)["sentences"])
                store.save_claims(ws, e, b, ["a", "b", "c"], None, require_form=False)
                marks = [f"{rng.randrange(n_sent)}:synonym_misfire" for _ in range(rng.randrange(3))]
                store.submit_reading(ws, e, b, score=rng.randint(1, 5), found=[0, 1], marks=marks,
                                     form_token=None, require_form=False)
                n_reads += 1
        out["readings_direct"] = n_reads
        out["reading_direct_ms"] = (time.perf_counter() - t) / n_reads * 1000
        app = create_app(ws)
        with TestClient(app) as c:
            h = {"authorization": "Bearer " + toks["ed0"], "accept": "text/html"}
            ws.con.execute("DELETE FROM rubric_ratings WHERE editor = 'ed0'")
            ws.con.execute("DELETE FROM rubric_marks WHERE editor = 'ed0'")
            todo = [a["blind_id"] for a in store.assignments_for(ws, "ed0") if a["state"] == "reading"][:40]
            t = time.perf_counter()
            for b in todo:
                page = c.get(f"/read/{b}", headers=h).text
                tok = re.search(r'name="form_token" value="([^"]+)"', page).group(1)
                r = c.post(f"/read/{b}/rating", headers=h, data={"score": "4", "found": ["0"], "form_token": tok,
                                                                  "mark": ["0:fragment_run_on"]})
                assert r.status_code == 200, re.search(r"error-message\">([^<]*)", r.text).group(1)
            out["reading_http_roundtrip_ms"] = (time.perf_counter() - t) / len(todo) * 1000
        t = time.perf_counter()
        res = results.tool_results(ws)
        out["aggregate_s"] = time.perf_counter() - t
        t = time.perf_counter()
        text = results.write_ratings_csv(ws, Path(d) / "ratings.csv")
        out["export_s"] = time.perf_counter() - t
        out["ratings_rows"] = text.count("\n") - 1
        out["tools"] = len(res)
        out["third_reads"] = sum(r["third_reads"] for r in res)
        ws.close()
    print(json.dumps({k: (round(v, 3) if isinstance(v, float) else v) for k, v in out.items()}, indent=2))


if __name__ == "__main__":
    main()
