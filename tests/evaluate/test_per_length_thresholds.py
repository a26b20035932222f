"""Issue 27, length: ``[thresholds] per_length = true`` fits each fitted rule's threshold per
length bin (under 100, 100 to 300, over 300 words) on the calibration split, judges each text
by its own bin's threshold, and every output says so (JSON, terminal, Markdown, HTML)."""

from __future__ import annotations

import hashlib
import html

import numpy as np
import pyarrow as pa
import pytest

from veribench.errors import ProtocolError
from veribench.hashing import text_sha256
from veribench.protocol.model import parse_protocol
from veribench.records import ScoreResult
from veribench.spec import Spec
from veribench.store import writes

SENT = "The committee discussed the new budget for the public library and agreed to open it on Sundays."
#: Sentences per text (17 words each): about 17, 136 and 340 words, one text per length bin.
REPEATS = {"under 100 words": 1, "100 to 300 words": 8, "over 300 words": 20}
SALT, EVERY = "veribench-split-v1", 2


def _calibration(doc_id: str) -> bool:
    """docs/protocol.md: a group goes to calibration when int(sha256(salt NUL group)[:16], 16) % every == 0."""
    return int(hashlib.sha256(f"{SALT}\0{doc_id}".encode()).hexdigest()[:16], 16) % EVERY == 0


def _best_balanced_accuracy(y: np.ndarray, s: np.ndarray) -> float:
    """A plain loop: the data score t maximising (TPR + 1 - FPR) / 2 of ``score > t``, the largest on ties."""
    best, out = -1.0, None
    for t in sorted(set(s.tolist())):
        flag = s > t
        ba = ((flag & (y == 1)).sum() / (y == 1).sum() + 1 - (flag & (y == 0)).sum() / (y == 0).sum()) / 2
        if ba >= best:
            best, out = ba, t
    return float(out)


def _corpus(ws, per_bin: int = 24, human_only: str | None = None):
    """Human and AI texts in each length bin (only human ones in bin ``human_only``); short
    human texts score higher (FairOPT's case)."""
    rng = np.random.default_rng(7)
    docs, scores = [], []
    shift = {"under 100 words": 1.5, "100 to 300 words": 0.5, "over 300 words": 0.0}
    for band, k in REPEATS.items():
        for i in range(per_bin):
            label = "human" if i % 2 == 0 or band == human_only else "ai"
            text = " ".join([f"({band} {i})"] + [SENT] * k)
            docs.append({"doc_id": f"{band[:4]}{i:03d}", "corpus": "c", "text": text, "text_sha256": text_sha256(text),
                         "label": label, "arm": "A" if label == "human" else "C", "kind": "essay", "subgroup": None,
                         "tags": None, "group_key": None, "provenance": None, "generation": None, "import_id": "i",
                         "band": band})
            scores.append(float(rng.normal(2.0 if label == "ai" else 0.0, 1.0) + shift[band]))
    cols = {c: [d[c] for d in docs] for c in writes.DOCUMENT_COLUMNS}
    with ws.transaction() as con:
        writes.add_documents(con, pa.table({c: pa.array(v, pa.string()) for c, v in cols.items()}))
    spec = Spec("detector", "LenDet", "v1", {})
    writes.put_scores(ws, spec, [(d["text_sha256"], ScoreResult(raw=x, ai_probability=None)) for d, x in zip(docs, scores)],
                      links=[(d["doc_id"], d["text_sha256"]) for d in docs])
    return docs, np.array(scores)


PROTO = f"""[protocol]
name = "per-length"
[split]
rule = "hash"
every = {EVERY}
salt = "{SALT}"
[tables]
slices = ["length"]
[thresholds]
per_length = true
[[detectors]]
name = "LenDet"
rule = {{ fit = "best_balanced_accuracy" }}
"""


def test_per_length_thresholds_equal_a_plain_per_bin_fit_and_every_output_says_so(workspace, tmp_path):
    from rich.console import Console

    from veribench.commit import commit
    from veribench.evaluate import evaluate_workspace
    from veribench.evaluate.tables import html_page, markdown, print_tables
    from veribench.protocol.model import load_protocol

    docs, s = _corpus(workspace)
    f = tmp_path / "p.toml"
    f.write_text(PROTO)
    commit(workspace, f)
    res = evaluate_workspace(workspace, load_protocol(f), allow_scoring=False)
    band = np.array([d["band"] for d in docs])
    y = np.array([d["label"] == "ai" for d in docs], dtype=int)
    cal = np.array([_calibration(d["doc_id"]) for d in docs])
    want = {}
    for b in REPEATS:
        m = cal & (band == b)
        assert (y[m] == 1).any() and (y[m] == 0).any()
        want[b] = _best_balanced_accuracy(y[m], s[m])
    assert len(set(want.values())) == 3  # the bins' thresholds differ
    rule = next(d for d in res["detectors"] if d["detector"] == "LenDet")["rule"]
    got = {e["bin"]: e["threshold"] for e in rule["per_length"]}
    assert got == pytest.approx(want)
    assert rule["threshold"] is None and rule["threshold_reason"]
    # each test text is judged by its own bin's threshold: the headline FPR and catch rate by plain counts
    thr = np.array([want[b] for b in band])
    flag = s > thr
    test = ~cal
    t1 = next(r for r in res["table1"] if r["detector"] == "LenDet")
    assert t1["human_n"] == int((test & (y == 0)).sum())
    assert t1["false_positives"] == int((flag & test & (y == 0)).sum())
    assert t1["detections"] == int((flag & test & (y == 1)).sum())
    for b in REPEATS:
        r = next(r for r in res["table2"] if r["detector"] == "LenDet" and r["slice"] == b)
        m = test & (band == b) & (y == 0)
        assert r["false_positives"] == int((flag & m).sum()) and r["human_n"] == int(m.sum())
    # the run's per-document rows record the threshold that judged each text: its bin's
    stored = dict(workspace.query("SELECT doc_id, threshold FROM run_rows WHERE run_id = ?", [res["run"]["run_id"]]))
    assert {d["doc_id"]: stored[d["doc_id"]] for d in docs} == pytest.approx({d["doc_id"]: want[d["band"]] for d in docs})
    # every output names the bins and each fitted threshold
    block = res["run"]["per_length_thresholds"]
    assert block["bins"] == list(REPEATS)
    line = block["lines"][0]
    for b in REPEATS:
        assert f"{b} > {want[b]:.6g}" in line
    con = Console(record=True, width=3000)
    print_tables(res, con)
    for text in (markdown(res), con.export_text(), html_page(res)):
        text = html.unescape(text)
        assert "Per-length thresholds" in text and "under 100 words, 100 to 300 words, over 300 words" in text
        assert line in text


def test_per_length_needs_a_calibration_split_and_a_fitted_rule():
    base = {"protocol": {"name": "x"}, "thresholds": {"per_length": True},
            "detectors": [{"name": "d", "rule": {"fit": "best_balanced_accuracy"}}]}
    with pytest.raises(ProtocolError, match="thresholds.per_length.*calibration split"):
        parse_protocol(base)
    fixed = {**base, "split": {"rule": "hash"}, "detectors": [{"name": "d", "rule": {"threshold": 0.5}}]}
    with pytest.raises(ProtocolError, match="no detector has a fitted rule"):
        parse_protocol(fixed)
    assert parse_protocol({**base, "split": {"rule": "hash"}}).per_length is True


def test_report_site_run_page_names_the_per_length_thresholds(workspace, tmp_path):
    """The report site's run page says so too: each detector's line with the bins and fitted
    thresholds, and the decision rule's short form lists the thresholds per bin (never "not
    fitted"); every cell points into the page JSON."""
    from tests.report.report_pagecheck import check_page
    from veribench.commit import commit
    from veribench.evaluate import evaluate_workspace
    from veribench.protocol.model import load_protocol
    from veribench.report import build_report

    _corpus(workspace)
    f = tmp_path / "p.toml"
    f.write_text(PROTO)
    commit(workspace, f)
    res = evaluate_workspace(workspace, load_protocol(f), allow_scoring=False)
    workspace.close()
    build_report([tmp_path / "ws"], tmp_path / "out")
    page = next((tmp_path / "out").glob("run-*.html"))
    check_page(page, tmp_path / "out" / "data" / f"{page.stem}.json")
    text = html.unescape(page.read_text())
    assert "Per-length thresholds" in text and res["run"]["per_length_thresholds"]["lines"][0] in text
    assert "fitted rule, not fitted" not in text and "(fitted per length)" in text


def test_a_bin_without_ai_calibration_texts_leaves_the_rule_undefined_with_the_bin_named(workspace, tmp_path):
    """Best balanced accuracy needs both classes: a length bin whose calibration texts are all
    human has no threshold, so the rule is undefined and every rate null with the reason
    naming the bin (never a threshold borrowed from another bin)."""
    from veribench.commit import commit
    from veribench.evaluate import evaluate_workspace
    from veribench.protocol.model import load_protocol

    _corpus(workspace, human_only="over 300 words")
    f = tmp_path / "p.toml"
    f.write_text(PROTO)
    commit(workspace, f)
    res = evaluate_workspace(workspace, load_protocol(f), allow_scoring=False)
    rule = res["detectors"][0]["rule"]
    assert not rule["defined"] and "over 300 words" in rule["reason"] and "no AI texts" in rule["reason"]
    t1 = res["table1"][0]
    assert t1["fpr"] is None and t1["false_positives"] is None and "over 300 words" in t1["fpr_reason"]
    assert "per-length thresholds not fitted" in res["run"]["per_length_thresholds"]["lines"][0]
