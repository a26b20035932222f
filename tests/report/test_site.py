"""The static report site on real data: numbers trace to their JSON, the JSON to its
sources (raw Liang files, the cycle bundles), tables are real, and nothing leaves the folder."""

from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

import pyarrow.csv as pacsv
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from tests.report.report_pagecheck import check_page, parse
from veribench.cli.main import app
from veribench.errors import InputError
from veribench.report import build_report

LIANG_DETECTORS = ["GPTZero", "OriginalityAI", "ZeroGPT", "Crossplag", "HFOpenAI", "Quil", "Sapling"]


def _pages(site: Path) -> list[Path]:
    return sorted(site.glob("*.html"))


def _data(site: Path, page: str) -> dict:
    return json.loads((site / "data" / f"{page}.json").read_text())


def test_every_number_on_every_page_matches_its_json(site):
    pages = _pages(site)
    names = {p.stem for p in pages}
    assert {"index", "run-adhoc", "cycle-june-2026", "cycle-july-2026", "trends", "humanizer-writehuman"} <= names
    # 13 ranked humanizers each cycle, plus bypassgpt (unavailable in June)
    assert len([n for n in names if n.startswith("humanizer-")]) == 14
    total = 0
    for p in pages:
        counts = check_page(p, site / "data" / f"{p.stem}.json")
        assert counts["cells"] > 0, p.name
        total += counts["numbers"]
    assert total > 2000  # the check really saw the tables


def test_tables_are_real_and_pictures_are_static_svg(site):
    for p in _pages(site):
        page = parse(p)
        assert "script" not in page.tags, p.name
        for t in page.tables:
            assert t["caption"] and t["th_col"] > 0, p.name
        for img in page.imgs:
            assert img.get("alt"), p.name
            src = site / img["src"]
            assert src.suffix == ".svg" and src.is_file(), img["src"]
    run = parse(site / "run-adhoc.html")
    assert len(run.tables) >= 5 and len(run.imgs) >= 3  # subgroups, ROC, distributions
    assert len(parse(site / "cycle-july-2026.html").imgs) >= 3


def test_nothing_refers_outside_the_folder(site):
    for f in list(site.rglob("*.html")) + list(site.rglob("*.css")):
        text = f.read_text(encoding="utf-8")
        assert not re.search(r"(?i)\b(?:https?:)?//[a-z0-9]", re.sub(r"xmlns(:\w+)?=\"[^\"]*\"", "", text)), f.name
        assert "@import" not in text and "@font-face" not in text
    for page in _pages(site):
        for link in parse(page).links:
            if link.startswith(("data:", "#")):
                continue
            assert not re.match(r"[a-z]+:", link), (page.name, link)
            assert (site / link.split("#")[0]).exists(), (page.name, link)
    for svg in (site / "img").glob("*.svg"):
        # only fragment references and inline data (matplotlib embeds raster colour bars as data: PNG)
        refs = re.findall(r"(?:href|src)=\"((?!#|data:)[^\"]*)\"", svg.read_text(encoding="utf-8"))
        assert not refs, (svg.name, refs[:3])


def test_no_gap_without_a_declaration(site):
    """A run whose protocol declares no [[gaps]] shows none (it never guesses writer groups from
    tag values), says why, and still shows the false-positive rate of every subgroup."""
    d = _data(site, "run-adhoc")
    assert d["gaps"] is None and d["gap_sets"] is None and "[[gaps]]" in d["not_computed"]["gaps"]
    html = (site / "run-adhoc.html").read_text()
    assert "Not computed." in html and 'id="fig-subgroups"' in html
    assert html.index('id="flagged"') < html.index('id="table1"')
    toefl = [r for r in d["subgroup_fpr"] if r["slice"] == "subgroup: TOEFL_real_91"]
    assert sorted(r["detector"] for r in toefl) == sorted(LIANG_DETECTORS)
    # Liang et al. (2023): 61.22% average FPR on the 91 TOEFL essays across the seven detectors
    assert round(100 * sum(r["fpr"] for r in toefl) / 7, 2) == 61.22


def test_run_page_json_is_the_stored_run(site, liang_ws):
    from veribench.evaluate import latest_run
    from veribench.store import Workspace

    with Workspace(liang_ws, read_only=True) as ws:
        res = latest_run(ws)
    d = _data(site, "run-adhoc")
    assert d["run"]["run_id"] == res["run"]["run_id"]
    for mine, theirs in zip(d["table1"], res["table1"], strict=True):
        assert {k: v for k, v in mine.items() if k in theirs} == theirs
    assert d["table2"] == res["table2"] and d["agreement"] == res["agreement"]
    toefl = next(a for a in d["agreement"] if a["subgroup"] == "TOEFL_real_91")
    assert (toefl["flagged_by_any"], toefl["flagged_by_all"]) == (89, 18)  # Liang et al. (2023)


def test_raw_downloads_hold_one_row_per_document_and_detector(site, liang_ws):
    from veribench.store import Workspace

    d = _data(site, "run-adhoc")["downloads"]
    csv = pacsv.read_csv(site / d["csv"])
    par = pq.read_table(site / d["parquet"])
    with Workspace(liang_ws, read_only=True) as ws:
        docs = {r[0] for r in ws.query("SELECT doc_id FROM documents")}
        n_links = ws.query("SELECT count(*) FROM submissions")[0][0]
    assert csv.num_rows == par.num_rows == d["rows"] == n_links
    pairs = list(zip(csv.column("doc_id").to_pylist(), csv.column("detector").to_pylist()))
    assert len(set(pairs)) == len(pairs)
    assert {p[0] for p in pairs} == docs
    assert set(csv.column("detector").to_pylist()) == set(LIANG_DETECTORS)
    assert sorted(par.column("doc_id").to_pylist()) == sorted(csv.column("doc_id").to_pylist())
    assert (site / d["csv"]).stat().st_size == d["csv_bytes"]


@pytest.mark.parametrize("cycle", ["June 2026", "July 2026"])
def test_cycle_page_is_the_published_leaderboard(site, cycles_dir, cycle):
    lb = json.loads((cycles_dir / cycle / "leaderboard.json").read_text())
    d = _data(site, "cycle-" + cycle.lower().replace(" ", "-"))
    assert d["verification"]["status"] == "verified", d["verification"]
    assert [r["slug"] for r in d["leaderboard"]] == [h["slug"] for h in sorted(lb["humanizers"], key=lambda h: h["rank"])]
    for r in d["leaderboard"]:
        h = next(h for h in lb["humanizers"] if h["slug"] == r["slug"])
        assert r["scores"] == h["scores"] and r["detector_breakdown"] == h["detector_breakdown"]
        assert r["category_breakdown"] == h["category_breakdown"] and r["rank_change"] == h["rank_change"]
        assert r["penalty_total"] == sum(p["score_delta"] for p in h["penalties_applied"])
    assert [u["slug"] for u in d["unavailable"]] == [u["slug"] for u in lb["unavailable_humanizers"]]
    # the weights behind the stacked chart are the bundle's frozen constants (spec 000: 42/32/16/10)
    assert d["weights"] == {"bypass_rate": 42, "meaning_preservation": 32, "readability": 16,
                            "consistency_across_categories": 10}


def test_trends_and_humanizer_pages(site, cycles_dir):
    t = _data(site, "trends")
    assert t["cycles"] == ["June 2026", "July 2026"]
    june = {h["slug"]: h for h in json.loads((cycles_dir / "June 2026" / "leaderboard.json").read_text())["humanizers"]}
    july = {h["slug"]: h for h in json.loads((cycles_dir / "July 2026" / "leaderboard.json").read_text())["humanizers"]}
    for r in t["rows"]:
        assert r["composite_change"] == pytest.approx(july[r["slug"]]["scores"]["composite"] - june[r["slug"]]["scores"]["composite"])
        # the bundle's own rank_change agrees with the two ranks shown
        assert june[r["slug"]]["rank"] - july[r["slug"]]["rank"] == july[r["slug"]]["rank_change"]
    h = _data(site, "humanizer-bypassgpt")
    assert h["cycles"] == [] and h["unavailable"][0]["cycle"] == "June 2026"
    w = _data(site, "humanizer-writehuman")
    assert [c["cycle"] for c in w["cycles"]] == ["June 2026", "July 2026"] and w["cycles"][1]["rank"] == 1


def test_writer_tags_and_side_labels(tmp_path):
    """A workspace with writer tags and edited and mixed texts: the side labels get their own
    columns (never blended into the catch rate), and the tags are slices like any other."""
    from tests.report.report_fixtures import fill_synthetic
    from veribench.evaluate import evaluate_workspace
    from veribench.protocol.model import Protocol
    from veribench.store import Workspace

    with Workspace(tmp_path / "ws") as ws:
        info = fill_synthetic(ws)
        evaluate_workspace(ws, dataclasses.replace(Protocol.default(), slices=("subgroup", "arm", "tag:writer")))
    build_report([tmp_path / "ws"], tmp_path / "out")
    d = json.loads((tmp_path / "out" / "data" / "run-adhoc.json").read_text())
    human = info["labels"] == "human"
    writer = {r["slice"]: r for r in d["subgroup_fpr"] if r["slice"].startswith("tag:writer") and r["detector"] == "DetA"}
    assert writer["tag:writer: native"]["human_n"] == int((human & (info["writer"] == "native")).sum())
    assert d["gaps"] is None  # tag values are never taken for a declared comparison
    html = (tmp_path / "out" / "run-adhoc.html").read_text()
    assert "Edited rate (95% CI)" in html and "Mixed rate (95% CI)" in html
    for p in (tmp_path / "out").glob("*.html"):
        check_page(p, tmp_path / "out" / "data" / f"{p.stem}.json")


def test_run_results_file_with_amendments(tmp_path, liang_ws):
    """A `veribench evaluate --json` file is an input too; amendments and the protocol hash are shown."""
    res = json.loads((liang_ws.parent / "out.json").read_text())
    res["run"]["tag"] = "BENCH-2026-Q4"
    res["run"]["protocol"].update(name="humanflow", hash="ab" * 32, committed_at="2026-10-01T00:00:00+00:00",
                                  amendments=[{"date": "2026-10-15", "summary": "threshold 0.7 for Quil", "hash": "cd" * 32}])
    res["table1"][0]["auroc"] = float("nan")  # a non-finite value in a hand-edited file is shown as a dash
    f = tmp_path / "run.json"
    f.write_text(json.dumps(res))
    assert "NaN" in f.read_text()
    r = build_report([f], tmp_path / "out")
    assert r.pages == ["index.html", "run-bench-2026-q4.html"]
    page = tmp_path / "out" / "run-bench-2026-q4.html"
    check_page(page, tmp_path / "out" / "data" / "run-bench-2026-q4.json")
    html = page.read_text()
    assert json.loads((tmp_path / "out" / "data" / "run-bench-2026-q4.json").read_text())["table1"][0]["auroc"] is None
    assert "ab" * 32 in html and "threshold 0.7 for Quil" in html and "cd" * 32 in html


def test_bad_inputs_are_named(tmp_path, cycles_dir):
    with pytest.raises(InputError, match="no such file"):
        build_report([tmp_path / "nope"], tmp_path / "out")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="not a workspace"):
        build_report([tmp_path / "empty"], tmp_path / "out")
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "thesis.docx").write_text("mine")
    with pytest.raises(InputError, match="not empty"):
        build_report([cycles_dir / "June 2026"], foreign, verify=False)
    assert (foreign / "thesis.docx").read_text() == "mine"
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "leaderboard.json").write_text('{"humanizers": [{"rank": 1}]}')
    with pytest.raises(InputError, match="slug") as e:
        build_report([bad], tmp_path / "out2", verify=False)
    assert "leaderboard.json" in str(e.value) and "record 0" in str(e.value)
    ws = tmp_path / "ws"
    from veribench.store import Workspace

    Workspace(ws).close()
    earlier = tmp_path / "out3"
    build_report([cycles_dir / "June 2026" / ".." / "June 2026"], earlier, verify=False)
    before = sorted(p.name for p in earlier.rglob("*"))
    r = CliRunner().invoke(app, ["report", "-w", str(ws), "--out", str(earlier)])
    assert r.exit_code == 1 and "no evaluation run" in r.output
    # a failed build leaves the earlier report as it was, and no half-built folder behind
    assert sorted(p.name for p in earlier.rglob("*")) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_cli_rebuilds_its_own_folder(tmp_path, cycles_dir):
    """Through the CLI, on a two-humanizer excerpt of the July bundle (kept small for speed)."""
    lb = json.loads((cycles_dir / "July 2026" / "leaderboard.json").read_text())
    lb["humanizers"] = lb["humanizers"][:2]
    bundle = tmp_path / "July excerpt"
    bundle.mkdir()
    (bundle / "leaderboard.json").write_text(json.dumps(lb))
    out = tmp_path / "out"
    (out / "img").mkdir(parents=True)
    (out / "img" / "stale.svg").write_text("<svg/>")
    (out / ".veribench-report").write_text("")
    for _ in range(2):  # each run replaces the report before it; a bundle named twice counts once
        r = CliRunner().invoke(app, ["report", str(bundle), str(bundle), "--out", str(out), "--no-verify"])
        assert r.exit_code == 0, r.output
    assert "wrote 4 pages and 4 charts" in r.output  # index, cycle, two humanizers; no weights, no stacked bars
    assert not (out / "img" / "stale.svg").exists()
    d = _data(out, "cycle-july-2026")
    assert d["verification"]["status"] == "not verified" and d["weights"] is None  # no scoring.js in the excerpt
    assert [r["slug"] for r in d["leaderboard"]] == ["writehuman", "undetectable"]
    assert not list(out.glob("trends*"))
    for p in out.glob("*.html"):
        check_page(p, out / "data" / f"{p.stem}.json")
    # the same inputs give a byte-identical site (no build date, fixed SVG ids)
    build_report([bundle], tmp_path / "again", verify=False)
    files = sorted(f.relative_to(out) for f in out.rglob("*") if f.is_file())
    assert files == sorted(f.relative_to(tmp_path / "again") for f in (tmp_path / "again").rglob("*") if f.is_file())
    for f in files:
        assert (out / f).read_bytes() == (tmp_path / "again" / f).read_bytes(), f


def test_ratings_from_the_real_rubric_store(tmp_path, cycles_dir):
    """Rubric results through veribench.rubric.results.tool_results on a workspace opened read-only."""
    from veribench.rubric.store import Pair, add_pairs
    from veribench.store import Workspace

    tests = json.loads((cycles_dir / "June 2026" / "tests.json").read_text())[:6]
    with Workspace(tmp_path / "ws") as ws:
        add_pairs(ws, [Pair(f"cycle:June 2026:{t['id']}", t["humanizer_slug"], t["input_text"], t["output_text"])
                       for t in tests])
    res = build_report([tmp_path / "ws"], tmp_path / "out")  # no detector run: the ratings page alone
    assert res.pages[1].startswith("ratings-")
    rd = json.loads((tmp_path / "out" / "data" / res.pages[1].replace(".html", ".json")).read_text())
    want = {}
    for t in tests:
        want[t["humanizer_slug"]] = want.get(t["humanizer_slug"], 0) + 1
    assert {r["tool"]: r["outputs"] for r in rd["rows"]} == want
    assert all(r["third_reads"] == 0 and r["meaning_score_mean"] is None for r in rd["rows"])
    assert all(r["meaning_score_mean_reason"].startswith("no complete output") for r in rd["rows"])
    for p in (tmp_path / "out").glob("*.html"):
        check_page(p, tmp_path / "out" / "data" / f"{p.stem}.json")
