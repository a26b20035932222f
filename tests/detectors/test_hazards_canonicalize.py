"""Hazards on every computed score, and canonicalisation as a detector setting (c08, c26, c07)."""

from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from veribench import registry
from veribench.cli.main import app
from veribench.corpus.importers import import_documents
from veribench.detectors.base import Canonicalized
from veribench.detectors.pipeline import RunStats, score_documents, score_texts
from veribench.evaluate.run import submission_hazards
from veribench.hashing import text_sha256
from veribench.records import ScoreResult
from veribench.text.hazards import canonicalize, text_hazards

pytest.importorskip("zippy.zippy")
C08 = ("plain", "homoglyph", "zero_width")


@pytest.fixture()
def c08(cases_dir):
    return {n: (cases_dir / "c08" / f"{n}.txt").read_text(encoding="utf-8") for n in C08}


def _import(ws, tmp_path, texts: dict[str, str], label="human"):
    f = tmp_path / "docs.jsonl"
    f.write_text("\n".join(json.dumps({"id": i, "text": t, "label": label}) for i, t in texts.items()),
                 encoding="utf-8")
    import_documents(ws, f)


def _stored(ws, spec):
    return {d: (sub, raw, json.loads(det)) for d, sub, raw, det in ws.query(
        "SELECT u.doc_id, u.submitted_sha256, c.raw, c.detail FROM submissions u JOIN scores c "
        "ON c.spec_hash = u.spec_hash AND c.text_sha256 = u.submitted_sha256 WHERE u.spec_hash = ?", [spec.hash])}


def test_setting_is_part_of_every_detectors_spec():
    plain = registry.create("detector", "zippy", {})
    none = registry.create("detector", "zippy", {"canonicalize": "none"})
    canon = registry.create("detector", "zippy", {"canonicalize": "skeleton"})
    assert type(none) is type(plain) and none.spec == plain.spec  # default: the spec (and cache) unchanged
    assert isinstance(canon, Canonicalized) and canon.spec.hash != plain.spec.hash
    assert canon.spec.settings == {**plain.spec.settings, "canonicalize": "skeleton"}
    assert canon.spec.label == "zippy[canonicalize=skeleton,chunk_size=1500,engine=lzma]"
    assert canon.batch_size == plain.batch_size and canon.max_concurrency == plain.max_concurrency
    # any registered detector gets it through the registry, vendors included
    assert registry.create("detector", "gptzero", {"canonicalize": "skeleton"}).spec.settings["canonicalize"] == \
        "skeleton"
    with pytest.raises(ValueError, match="Did you mean 'skeleton'"):
        registry.create("detector", "zippy", {"canonicalize": "skelton"})
    with pytest.raises(ValueError, match="imported"):
        registry.create("detector", "imported", {"name": "X", "canonicalize": "skeleton"})


def test_every_computed_score_records_its_hazards(cases_dir, tmp_path, workspace, c08):
    rep = (cases_dir / "c26/repeated30.txt").read_text(encoding="utf-8")
    cjk = (cases_dir / "c07/cjk_only.txt").read_text(encoding="utf-8")
    _import(workspace, tmp_path, {**c08, "repeated": rep, "cjk": cjk})
    det = registry.create("detector", "zippy", {})
    res = score_documents(workspace, det)
    stored = _stored(workspace, det.spec)
    for doc_id, (_, _, detail) in stored.items():
        text = workspace.texts_for([doc_id])[doc_id]
        assert detail["hazards"] == text_hazards(text) == res[doc_id].detail["hazards"]
    assert stored["homoglyph"][2]["hazards"]["confusables"] == 30
    assert stored["zero_width"][2]["hazards"]["invisible"] == 20
    assert stored["repeated"][2]["hazards"]["degenerate_repetition"] is True
    assert res["cjk"].status == "unscorable" and res["cjk"].hazards["confusables"] == 0  # a preflight failure too
    assert res["homoglyph"].raw != res["plain"].raw  # without canonicalisation the homoglyphs move ZipPy
    assert submission_hazards(workspace, det.spec)["homoglyph"]["confusables"] == 30


def test_c08_canonicalised_texts_are_identical_submissions_with_identical_scores(tmp_path, workspace, c08):
    _import(workspace, tmp_path, c08)
    det = registry.create("detector", "zippy", {"canonicalize": "skeleton"})
    st = RunStats()
    res = score_documents(workspace, det, stats=st)
    assert st.unique == 1 and st.computed == 1  # one canonical text, scored once
    stored = _stored(workspace, det.spec)
    subs = {sub for sub, _, _ in stored.values()}
    assert subs == {text_sha256(c08["plain"])}  # the submitted text is the canonical one, for all three
    assert workspace.query("SELECT text FROM submitted_texts") == [(canonicalize(c08["homoglyph"]),)]
    assert canonicalize(c08["homoglyph"]).encode() == canonicalize(c08["zero_width"]).encode() == c08["plain"].encode()
    assert len({r.raw for r in res.values()}) == 1 and len({raw for _, raw, _ in stored.values()}) == 1
    # hazards are those of each document's own text, before canonicalisation
    assert {d: (r.hazards["confusables"], r.hazards["invisible"]) for d, r in res.items()} == {
        "plain": (0, 0), "homoglyph": (30, 0), "zero_width": (0, 20)}
    assert {d: r.detail["canonicalization"]["input_sha256"] for d, r in res.items()} == {
        d: text_sha256(t) for d, t in c08.items()}
    per_doc = submission_hazards(workspace, det.spec)
    assert {d: (h["confusables"], h["invisible"]) for d, h in per_doc.items()} == {
        "plain": (0, 0), "homoglyph": (30, 0), "zero_width": (0, 20)}
    # cached like any setting: a second run computes nothing
    st2 = RunStats()
    again = score_texts(workspace, det, list(c08.values()), stats=st2)
    assert st2.cached == 1 and st2.computed == 0
    assert {r.raw for r in again.values()} == {res["plain"].raw}
    # and the plain spec's cache is untouched by it
    assert workspace.cached_scores(registry.create("detector", "zippy", {}).spec.hash,
                                   [text_sha256(c08["plain"])]) == {}


def test_canonicalized_wrapper_scores_the_canonical_text(c08):
    seen = []

    class Echo:
        spec = registry.create("detector", "zippy", {}).spec

        def preflight(self, text):
            seen.append(("pre", text))
            return None

        def score_batch(self, texts):
            seen.extend(("score", t) for t in texts)
            return [ScoreResult(raw=float(len(t))) for t in texts]

    w = Canonicalized(Echo(), "skeleton")
    assert w.preflight(c08["zero_width"]) is None
    assert [r.raw for r in w.score_batch([c08["homoglyph"], c08["zero_width"]])] == [len(c08["plain"])] * 2
    assert {t for _, t in seen} == {c08["plain"]}
    assert getattr(w, "cost", None) is None  # absent on the wrapped detector: absent here
    with pytest.raises(ValueError, match="already"):
        Canonicalized(w, "skeleton")


def test_cli_score_with_the_setting(cases_dir, tmp_path, c08):
    inp = tmp_path / "in.jsonl"
    inp.write_text("\n".join(json.dumps({"id": n, "text": t}) for n, t in c08.items()), encoding="utf-8")
    out = {}
    for tag, extra in (("plain", []), ("canon", ["--set", "canonicalize=skeleton"])):
        o = tmp_path / f"{tag}.jsonl"
        r = CliRunner().invoke(app, ["score", "-d", "zippy", *extra, "-i", str(inp), "-o", str(o),
                                     "-w", str(tmp_path / "ws"), "--no-progress"])
        assert r.exit_code == 0, r.output
        out[tag] = {row["id"]: row for row in map(json.loads, o.read_text().splitlines())}
    assert len({row["statistic"] for row in out["canon"].values()}) == 1
    assert len({row["statistic"] for row in out["plain"].values()}) == 2  # homoglyphs change ZipPy's score
    for tag in out:
        assert out[tag]["homoglyph"]["detail"]["hazards"]["confusables"] == 30
        assert out[tag]["zero_width"]["detail"]["hazards"]["invisible"] == 20
    r = CliRunner().invoke(app, ["score", "-d", "zippy", "--set", "canonicalize=nfc", "-i", str(inp), "-o",
                                 str(tmp_path / "x.jsonl"), "-w", str(tmp_path / "ws")])
    assert r.exit_code == 1 and "canonicalize must be one of none, skeleton" in r.output
