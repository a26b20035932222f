"""A published run whose protocol reads each text's length (the ``length`` slice, per-length
thresholds) re-derives from its bundle: the verifier needs the texts for that, as it does
for detectors with declared languages (issue 27)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bundles.bundle_helpers import evaluate_publish_verify, store_documents

#: The one detector of both protocols, after their own sections.
DETECTOR = '[[detectors]]\nname = "DetA"\nrule = {}\n'
LENGTH_SLICE = ('[protocol]\nname = "lengths"\ntag = "LEN-1"\n[tables]\nslices = ["length"]\n'
                + DETECTOR.format('{ field = "ai_probability", op = ">", threshold = 0.5 }'))
PER_LENGTH = ('[protocol]\nname = "per-length"\ntag = "LEN-1"\n[split]\nrule = "hash"\nevery = 2\n'
              '[thresholds]\nper_length = true\n' + DETECTOR.format('{ fit = "best_balanced_accuracy" }'))


@pytest.mark.parametrize("proto", [LENGTH_SLICE, PER_LENGTH], ids=["length-slice", "per-length"])
def test_length_runs_publish_and_verify(tmp_path, cli_run, proto):
    from veribench.commit import commit
    from veribench.corpus.document import Document
    from veribench.records import ScoreResult
    from veribench.store import Workspace

    (tmp_path / "p.toml").write_text(proto)
    words = {0: 20, 1: 150, 2: 400}  # one text per length bin, in turn
    docs = [Document(id=f"d{i:03d}", text=" ".join(["essay", str(i)] + ["word"] * words[i % 3]),
                     label="human" if (i // 3) % 2 else "ai") for i in range(72)]
    ws = Workspace(tmp_path / "ws")
    commit(ws, tmp_path / "p.toml")
    store_documents(ws, docs, "DetA", [ScoreResult(raw=((7 * i) % 11) / 11 + (0.3 if (i // 3) % 2 == 0 else 0.0),
                                                   ai_probability=min(1.0, ((7 * i) % 11) / 11 + 0.05))
                                       for i in range(72)], corpus="s")
    rep = evaluate_publish_verify(ws, tmp_path / "p.toml", "LEN-1", tmp_path / "b", cli_run)
    assert rep.status("results") == "ok", rep.lines()


def test_out_of_scope_slice_run_publishes_and_verifies(tmp_path, cli_run):
    """``[evaluation] out_of_scope = "slice"`` with a detector declared for English (Sapling) on
    the UDHR texts in three languages: the bundle re-derives the out-of-scope row."""
    import json

    from veribench.commit import commit
    from veribench.corpus.document import Document
    from veribench.records import ScoreResult
    from veribench.store import Workspace

    udhr = Path(__file__).parents[1] / "data" / "udhr" / "udhr.jsonl"
    recs = [json.loads(x) for x in udhr.read_text(encoding="utf-8").splitlines()]
    recs = [r for r in recs if r["lang"] in ("en", "de", "fr")]
    docs = [Document(id=f"{r['id']}-{lab}", text=r["text"] if lab == "human" else " ".join(reversed(r["text"].split())),
                     label=lab) for r in recs for lab in ("human", "ai")]
    (tmp_path / "p.toml").write_text('[protocol]\nname = "scope"\ntag = "SCOPE-1"\n[evaluation]\nout_of_scope = "slice"\n'
                                     + DETECTOR.replace("DetA", "sapling").format(
                                         '{ field = "ai_probability", op = ">", threshold = 0.5 }'))
    ws = Workspace(tmp_path / "ws")
    commit(ws, tmp_path / "p.toml")
    store_documents(ws, docs, "sapling", [ScoreResult(raw=p, ai_probability=p) for p in
                                          (0.8 if d.label == "ai" else 0.3 + 0.1 * (i % 3) for i, d in enumerate(docs))],
                    version="veribench-api-1", corpus="udhr")
    rep = evaluate_publish_verify(ws, tmp_path / "p.toml", "SCOPE-1", tmp_path / "b", cli_run)
    res = json.loads((tmp_path / "b" / "results.json").read_text())
    assert [r["slice"] for r in res["table2"] if r["slice_type"] == "language_scope"] == ["outside the declared languages"]
    assert rep.status("results") == "ok", rep.lines()
