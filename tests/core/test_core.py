"""Spec hashing, the registry, the workspace score cache and the one scoring path."""

from __future__ import annotations

import pytest

from veribench import registry
from veribench.detectors.pipeline import RunStats, score_documents, score_texts
from veribench.errors import RegistryError
from veribench.hashing import text_sha256
from veribench.records import ScoreResult
from veribench.spec import Spec


class CountingDetector:
    """A real detector for tests: P(AI) = share of letters that are vowels; counts calls."""

    def __init__(self, salt: str = "v1"):
        self.spec = Spec("detector", "vowels", "1", {"salt": salt})
        self.calls = 0
        self.seen: list[str] = []
        self.batch_size = 2

    def cost(self, text: str) -> float:
        return float(len(text.split()))

    cost_unit = "words"

    def score_batch(self, texts):
        self.calls += 1
        self.seen += list(texts)
        out = []
        for t in texts:
            letters = [c for c in t.lower() if c.isalpha()]
            if not letters:
                out.append(ScoreResult.failed("unscorable", "no letters"))
                continue
            p = sum(c in "aeiou" for c in letters) / len(letters)
            out.append(ScoreResult(raw=p, scale="p_ai", ai_probability=p))
        return out


def test_spec_hash_is_stable_and_settings_sensitive():
    a = Spec("detector", "x", "1", {"b": 2, "a": 1})
    b = Spec("detector", "x", "1", {"a": 1, "b": 2})
    c = Spec("detector", "x", "1", {"a": 1, "b": 3})
    assert a.hash == b.hash
    assert a.hash != c.hash
    assert len(a.hash) == 64
    assert Spec.from_json(a.canonical()) == a


def test_registry_did_you_mean():
    with pytest.raises(RegistryError) as e:
        registry.get("detector", "zipy")
    assert "did you mean 'zippy'" in str(e.value).lower()


def test_parse_settings_types():
    s = registry.parse_settings(["batch_size=8", "model=gpt2", "flag=false", "x=0.5"])
    assert s == {"batch_size": 8, "model": "gpt2", "flag": False, "x": 0.5}
    with pytest.raises(ValueError):
        registry.parse_settings(["novalue"])


def test_scoreresult_validates():
    with pytest.raises(ValueError):
        ScoreResult(ai_probability=1.5)
    with pytest.raises(ValueError):
        ScoreResult(status="exploded")
    r = ScoreResult(raw=25.0, scale="human_0_100", direction="higher_human", ai_probability=0.75)
    assert r.human_likelihood == pytest.approx(0.25)
    assert ScoreResult(raw=3.0, direction="higher_human").oriented == -3.0


def test_pipeline_caches_by_spec_and_text(workspace):
    det = CountingDetector()
    texts = ["alpha beta", "gamma", "alpha beta", "   "]
    res = score_texts(workspace, det, texts)
    assert len(res) == 3  # duplicates scored once
    assert det.seen.count("alpha beta") == 1
    assert res[text_sha256("   ")].status == "unscorable"
    assert res[text_sha256("gamma")].ai_probability == pytest.approx(2 / 5)
    # A second run computes nothing: every (spec, text) is cached, failures included.
    det2 = CountingDetector()
    st = RunStats()
    res2 = score_texts(workspace, det2, texts, stats=st)
    assert det2.calls == 0 and st.cached == 3
    assert {k: (v.status, v.ai_probability) for k, v in res2.items()} == {k: (v.status, v.ai_probability) for k, v in res.items()}
    # Another setting is another spec: computed afresh.
    det3 = CountingDetector(salt="v2")
    score_texts(workspace, det3, texts)
    assert det3.calls > 0


def test_pipeline_budget_and_dry_run(workspace):
    det = CountingDetector()
    texts = ["one two three", "four five", "six seven eight nine"]
    st = RunStats()
    score_texts(workspace, det, texts, dry_run=True, stats=st)
    assert det.calls == 0 and len(st.planned) == 3
    assert sum(p["cost"] for p in st.planned) == 9
    st = RunStats()
    res = score_texts(workspace, det, texts, max_spend=5, stats=st)
    assert st.stopped_for_budget and len(res) == 2 and st.spent == 5
    assert workspace.query("SELECT count(*) FROM scores")[0][0] == 2


def test_score_documents_links_submissions(workspace):
    workspace.con.execute(
        "INSERT INTO documents (doc_id, corpus, text, text_sha256, label) VALUES ('d1','c','hello there',?, 'human')",
        [text_sha256("hello there")])
    det = CountingDetector()
    out = score_documents(workspace, det)
    assert set(out) == {"d1"}
    rows = workspace.query("SELECT doc_id, submitted_sha256 FROM submissions")
    assert rows == [("d1", text_sha256("hello there"))]
    t = workspace.raw_scores()
    assert t.num_rows == 1 and t.column("text_differs").to_pylist() == [False]
