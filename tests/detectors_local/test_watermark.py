"""The watermark arm and detector (issue 27), on a tiny random Llama built in a fixture
(conftest ``llama_path``; no hub).

References, independent of veribench's code:

- KGW: transformers' own ``WatermarkDetector`` on the same token ids, and a plain loop over
  the green lists of transformers' ``WatermarkLogitsProcessor`` with the z formula of
  Kirchenbauer et al. 2023 §3 written out here.
- Unigram: MarkLLM's ``UnigramUtils`` (THU-BPM/MarkLLM ``watermark/unigram/unigram.py``,
  commit 0c0ebb425e5547ea9e38c35cab2c3cdbfadd73b9), its green-list draw and
  ``score_sequence`` transcribed below (:func:`markllm_mask`, :func:`markllm_z`).
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from veribench import registry
from veribench.cli.main import app
from veribench.detectors.local import watermark as wm
from veribench.detectors.local.models import load_causal_lm
from veribench.errors import SettingError
from veribench.llm.watermark import default_prompts
from veribench.store import Workspace

torch = pytest.importorskip("torch")

KEY = b"correct horse battery staple 42"
HUMAN = [
    "My grandmother kept bees behind the shed, and every August we spun the frames by hand in the kitchen "
    "while the radio played old songs and the whole house smelled of wax and smoke.",
    "The bus was late again this morning, so I walked the long way past the bakery and the closed cinema, "
    "counting the pigeons on the wires and wondering whether the rain would hold off until noon.",
    "We painted the fence twice because the first colour looked nothing like the sample card, and the "
    "neighbours laughed at us from their porch the entire weekend while we argued about shades of green.",
    "After the flood the library dried its books on every table and chair, page by page, and volunteers "
    "came in shifts to turn them until the smell of damp paper finally left the building in spring.",
    "Our teacher made us memorise the rivers of Europe in order, and I still recite them on long drives "
    "when the children fall asleep and the road is dark and empty for miles ahead of the car.",
    "The market stall sold only potatoes, eleven kinds of them, and the farmer could tell you the field "
    "and the week each one was dug, with a story about the weather that year for every single sack.",
]


def markllm_mask(vocab_size: int, gamma: float, hash_key: int) -> np.ndarray:
    """MarkLLM UnigramUtils.__init__ and _hash_fn (commit 0c0ebb4), transcribed."""
    x = np.int64(hash_key)
    seed = int.from_bytes(hashlib.sha256(x).digest()[:4], "little")
    mask = np.array([True] * int(gamma * vocab_size) + [False] * (vocab_size - int(gamma * vocab_size)))
    rng = np.random.default_rng(seed)
    rng.shuffle(mask)
    return mask


def markllm_z(mask: np.ndarray, ids: list[int], gamma: float) -> float:
    """MarkLLM UnigramUtils.score_sequence + _compute_z_score (commit 0c0ebb4), transcribed."""
    num_tokens_scored = len(ids)
    green_token_count = 0
    for idx in range(len(ids)):
        if mask[ids[idx]]:
            green_token_count += 1
    numer = green_token_count - gamma * num_tokens_scored
    denom = math.sqrt(num_tokens_scored * gamma * (1 - gamma))
    return numer / denom


def kgw_loop_z(ids: list[int], vocab_size: int, gamma: float, seed: int) -> tuple[float, int, int]:
    """Plain loop: token i is green when it is in the lefthash green list seeded by token i-1
    (transformers' WatermarkLogitsProcessor), z by Kirchenbauer et al. 2023 §3."""
    from transformers.generation.logits_process import WatermarkLogitsProcessor

    proc = WatermarkLogitsProcessor(vocab_size=vocab_size, device="cpu", greenlist_ratio=gamma, hashing_key=seed)
    t = torch.tensor(ids)
    green = sum(int(ids[i] in set(proc._get_greenlist_ids(t[:i]).tolist())) for i in range(1, len(ids)))
    n = len(ids) - 1
    return (green - gamma * n) / math.sqrt(n * gamma * (1 - gamma)), green, n


@pytest.fixture(scope="module")
def llama_path(tmp_path_factory) -> str:
    """A tiny random Llama over a word-level vocabulary (the words of :data:`HUMAN` and the
    default prompts): every token decodes to a whole word and a decoded text re-encodes to
    the same ids, as for a trained model's text (conftest's byte-level BPE model samples
    partial UTF-8 bytes, which decode to U+FFFD and re-encode as other tokens)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast


    words = sorted({w for t in HUMAN + [p["prompt"] for p in default_prompts(50)] for w in t.split()})
    vocab = {w: i for i, w in enumerate(["<pad>", "<s>", "</s>", "<unk>"] + words)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>",
                                   unk_token="<unk>")
    torch.manual_seed(3)
    cfg = LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256,
                      tie_word_embeddings=False, bos_token_id=1, eos_token_id=2, pad_token_id=0)
    m = LlamaForCausalLM(cfg)
    with torch.no_grad():
        m.lm_head.weight.normal_(0, 0.3)
    folder = tmp_path_factory.mktemp("word_llama")
    m.save_pretrained(folder)
    fast.save_pretrained(folder)
    return str(folder)


@pytest.fixture(scope="module")
def key_file(tmp_path_factory) -> Path:
    p = tmp_path_factory.mktemp("key") / "wm.key"
    p.write_bytes(KEY + b"\n")
    return p


def test_key_maps_to_seed_as_documented_and_never_shows(key_file, monkeypatch):
    assert wm.read_key(key_file) == KEY  # one trailing newline removed
    assert wm.key_fingerprint(KEY) == hashlib.sha256(KEY).hexdigest()
    want = int.from_bytes(hashlib.sha256(b"veribench-watermark-seed\x00" + KEY).digest()[:8], "big") % 2**63
    assert wm.hashing_key(KEY) == want
    # the fingerprint does not give the seed
    assert int(wm.key_fingerprint(KEY)[:16], 16) % 2**63 != want
    monkeypatch.delenv(wm.KEY_ENV, raising=False)
    with pytest.raises(SettingError, match="no watermark key"):
        wm.read_key(None)
    monkeypatch.setenv(wm.KEY_ENV, "from-env")
    assert wm.read_key(None) == b"from-env"
    empty = key_file.parent / "empty.key"
    empty.write_bytes(b"\n")
    with pytest.raises(SettingError, match="is empty"):
        wm.read_key(empty)


def test_unigram_green_list_equals_markllm(llama_path, key_file):
    lm = load_causal_lm(llama_path, device="cpu", dtype="float32")
    vocab = lm.model.config.vocab_size
    seed = wm.hashing_key(KEY)
    for gamma in (0.5, 0.25):
        ours = wm.unigram_green_mask(vocab, gamma, seed)
        assert ours.sum() == int(gamma * vocab)
        np.testing.assert_array_equal(ours, markllm_mask(vocab, gamma, seed))
    det = registry.create("detector", "watermark", {"scheme": "unigram", "key_file": str(key_file),
                                                   "model": llama_path})
    text = HUMAN[0]
    ids = det.token_ids(text)
    r = det.score_batch([text])[0]
    assert r.status == "ok"
    assert r.raw == pytest.approx(markllm_z(markllm_mask(vocab, 0.5, seed), ids, 0.5), abs=1e-12)
    from scipy.stats import norm

    assert r.detail["p_value"] == pytest.approx(norm.sf(r.raw), rel=1e-9)


@pytest.fixture(scope="module")
def roundtrip(tmp_path_factory, llama_path, key_file):
    """Watermarked (kgw, unigram) and plain texts from the tiny Llama, human texts, three
    RAID attacks, and an evaluation with the watermark detector beside ZipPy."""
    root = tmp_path_factory.mktemp("wm")
    ws_dir = root / "ws"
    runner = CliRunner()
    outputs = []

    def cli(*args: str) -> str:
        r = runner.invoke(app, list(args))
        assert r.exit_code == 0, r.output
        outputs.append(r.output)
        return r.output

    n = 8
    for scheme in ("kgw", "unigram", "none"):
        cli("watermark", "generate", "--scheme", scheme, "--key-file", str(key_file), "--model", llama_path,
            "--n", str(n), "--max-new-tokens", "48", "-w", str(ws_dir), "-q", "--no-progress")
    human = root / "human.jsonl"
    human.write_text("".join(json.dumps({"id": f"h{i}", "text": t, "label": "human", "arm": "A"}) + "\n"
                             for i, t in enumerate(HUMAN)), encoding="utf-8")
    cli("import", "jsonl", str(human), "-w", str(ws_dir), "-q")
    for i, attack in enumerate(("article_deletion", "upper_lower", "homoglyph")):
        cli("attack", attack, "-w", str(ws_dir), "--seed", str(i), "--no-progress")
    p = root / "p.toml"
    det = (f'[[detectors]]\nname = "watermark"\nlabel = "watermark (kgw)"\n'
           f'settings = {{ scheme = "kgw", key_file = "{key_file}", model = "{llama_path}" }}\n')
    zippy = ('[[detectors]]\nname = "zippy"\nlabel = "ZipPy"\n'
             'rule = { field = "raw", op = ">=", threshold = 0.0, source = "thinkst-zippy default" }\n')
    p.write_text('[protocol]\nname = "wm"\ntag = "WM"\n[tables]\nslices = ["arm", "tag:watermark"]\n' + det + zippy, encoding="utf-8")
    cli("protocol", "commit", str(p), "-w", str(ws_dir))
    cli("evaluate", "-w", str(ws_dir), "-p", str(p), "--json", str(root / "r.json"), "--out", str(root / "o"),
        "--no-progress")
    cli("publish", "-w", str(ws_dir), "--run", "WM", "--out", str(root / "bundle"), "--no-progress")
    cli("verify", str(root / "bundle"), "--no-progress")  # the bundle verifies with the fingerprint alone
    return {"root": root, "ws": ws_dir, "res": json.loads((root / "r.json").read_text()), "out": "\n".join(outputs)}


def _scores(ws_dir: Path) -> dict[str, tuple[str, float | None, dict]]:
    with Workspace(ws_dir) as w:
        rows = w.query("SELECT u.doc_id, c.status, c.raw, c.detail FROM submissions u "
                       "JOIN specs s ON s.spec_hash = u.spec_hash "
                       "JOIN scores c ON c.spec_hash = u.spec_hash AND c.text_sha256 = u.submitted_sha256 "
                       "WHERE s.name = 'watermark'")
    return {d: (st, raw, json.loads(det) if isinstance(det, str) else det) for d, st, raw, det in rows}


def test_roundtrip_watermarked_texts_are_detected_more_often_than_plain(roundtrip):
    sc = _scores(roundtrip["ws"])
    kgw = [sc[d][1] for d in sc if d.startswith("watermark/kgw/") and sc[d][0] == "ok"]
    plain = [sc[d][1] for d in sc if d.startswith("watermark/none/") and sc[d][0] == "ok"]
    assert len(kgw) >= 6 and len(plain) >= 6
    hit_wm = sum(z > 4 for z in kgw) / len(kgw)
    hit_plain = sum(z > 4 for z in plain) / len(plain)
    assert hit_wm > hit_plain and hit_wm >= 0.75, (kgw, plain)


def test_detector_z_equals_transformers_and_the_formula_on_the_same_tokens(roundtrip, llama_path, key_file):
    from transformers import WatermarkDetector, WatermarkingConfig

    det = registry.create("detector", "watermark", {"scheme": "kgw", "key_file": str(key_file), "model": llama_path})
    with Workspace(roundtrip["ws"]) as w:
        texts = [t for (t,) in w.query("SELECT text FROM documents WHERE doc_id LIKE 'watermark/%' "
                                       "AND json_extract_string(tags, '$.derivation') IS NULL ORDER BY doc_id")]
    assert len(texts) == 24
    seed = wm.hashing_key(KEY)
    cfg = WatermarkingConfig(greenlist_ratio=0.25, hashing_key=seed)
    ref = WatermarkDetector(model_config=det._load().model.config, device="cpu", watermarking_config=cfg)
    vocab = det._load().model.config.vocab_size
    checked = 0
    for text, r in zip(texts, det.score_batch(texts)):
        ids = det.token_ids(text)
        if r.status != "ok":
            assert r.status == "too_short" and len(ids) - 1 < det.min_tokens
            continue
        out = ref(torch.tensor([ids]), return_dict=True)
        assert r.raw == pytest.approx(float(out.z_score[0]), abs=1e-12)
        z, green, n = kgw_loop_z(ids, vocab, 0.25, seed)
        assert (r.detail["green_tokens"], r.detail["tokens_scored"]) == (green, n)
        assert r.raw == pytest.approx(z, abs=1e-9)
        assert r.detail["p_value"] == pytest.approx(0.5 * math.erfc(z / math.sqrt(2)), rel=1e-9)
        checked += 1
    assert checked >= 20


def test_watermarked_texts_form_a_tagged_arm_c_slice(roundtrip):
    with Workspace(roundtrip["ws"]) as w:
        rows = w.query("SELECT arm, label, json_extract_string(tags, '$.watermark'), generation FROM documents "
                       "WHERE doc_id LIKE 'watermark/%' AND json_extract_string(tags, '$.derivation') IS NULL")
    assert {(a, lab, t) for a, lab, t, _ in rows} == {("C", "ai", s) for s in ("kgw", "unigram", "none")}
    gen = json.loads(next(g for *_, g in rows if '"kgw"' in g))
    assert gen["settings"]["watermark"]["key_sha256"] == hashlib.sha256(KEY).hexdigest()


def test_the_watermark_tag_is_a_table2_slice(roundtrip):
    rows = [r for r in roundtrip["res"]["table2"] if r["slice_type"] == "tag:watermark"
            and r["detector"] == "watermark (kgw)"]
    by = {r["slice"]: r for r in rows}
    assert {"kgw", "unigram", "none"} <= set(by)
    sc = _scores(roundtrip["ws"])
    with Workspace(roundtrip["ws"]) as w:
        tag = dict(w.query("SELECT doc_id, json_extract_string(tags, '$.watermark') FROM documents "
                           "WHERE json_extract_string(tags, '$.derivation') IS NULL"))
    for s in ("kgw", "unigram", "none"):  # the generated texts of the tag (attacked ones are robustness rows)
        ok = [sc[d][1] for d in sc if tag.get(d) == s and sc[d][0] == "ok"]
        assert by[s]["ai_n"] == len(ok) and by[s]["detections"] == sum(z > 4 for z in ok), s


def test_robustness_rows_show_the_watermark_detector_beside_zippy(roundtrip):
    rows = roundtrip["res"]["robustness"]
    got = {(r["detector"], r["attack"], r["metric"]) for r in rows}
    for d in ("watermark (kgw)", "ZipPy"):
        for a in ("article_deletion", "upper_lower", "homoglyph"):
            assert (d, a, "catch_rate") in got and (d, a, "fpr") in got, (d, a)
    wm_rows = [r for r in rows if r["detector"] == "watermark (kgw)" and r["metric"] == "catch_rate"]
    assert all(r["n_pairs"] > 0 for r in wm_rows)
    # the same attacked texts: both detectors see the same derived documents
    zp = {r["attack"]: r["n_derived"] for r in rows if r["detector"] == "ZipPy" and r["metric"] == "catch_rate"}
    assert {r["attack"]: r["n_derived"] for r in wm_rows} == zp


def test_the_key_never_reaches_the_workspace_outputs_or_logs(roundtrip):
    root = roundtrip["root"]
    needles = [KEY, str(wm.hashing_key(KEY)).encode()]
    files = [p for p in root.rglob("*") if p.is_file() and p.name != "wm.key"]
    assert any(p.name == "veribench.duckdb" for p in files)
    assert any(p.parts[-2:] == ("bundle", "manifest.json") or "bundle" in p.parts for p in files)
    for p in files:
        data = p.read_bytes()
        for s in needles:
            assert s not in data, p
    for s in needles:
        assert s.decode() not in roundtrip["out"]
    # stored values may be compressed on disk (DuckDB's string compression, Parquet pages): read them back too
    import pyarrow.parquet as pq

    for p in files:
        if p.suffix == ".parquet":
            for s in needles:
                assert s.decode() not in json.dumps(pq.read_table(p).to_pylist(), default=str), p
    with Workspace(roundtrip["ws"]) as w:
        for (t,) in w.query("SELECT table_name FROM information_schema.tables"):
            dump = json.dumps(w.query(f"SELECT * FROM {t}"), default=str)
            for s in needles:
                assert s.decode() not in dump, t


def test_too_short_texts_are_not_scored(llama_path, key_file):
    det = registry.create("detector", "watermark", {"scheme": "kgw", "key_file": str(key_file), "model": llama_path})
    r = det.score_batch(["Too short."])[0]
    assert r.status == "too_short" and r.raw is None
    assert "the z-test needs at least 20" in r.detail["reason"]


def test_list_detectors_states_the_default_rule(key_file):
    r = CliRunner().invoke(app, ["list", "detectors"])
    assert r.exit_code == 0, r.output
    assert "watermark" in r.output and "z > 4" in r.output


def test_missing_key_is_one_line_without_the_key(tmp_path, monkeypatch):
    monkeypatch.delenv(wm.KEY_ENV, raising=False)
    r = CliRunner().invoke(app, ["watermark", "generate", "--scheme", "kgw", "-w", str(tmp_path / "ws")])
    assert r.exit_code != 0
    assert "no watermark key" in r.output and "Traceback" not in r.output
    assert not (tmp_path / "ws").exists()


def test_a_stored_spec_rebuilds_the_detector_only_with_the_same_key(llama_path, key_file, tmp_path, monkeypatch):
    det = registry.create("detector", "watermark", {"scheme": "kgw", "key_file": str(key_file), "model": llama_path})
    settings = dict(det.spec.settings)
    assert "key_file" not in settings and settings["key_sha256"] == hashlib.sha256(KEY).hexdigest()
    monkeypatch.setenv(wm.KEY_ENV, KEY.decode())
    again = registry.create("detector", "watermark", settings)
    assert again.spec.hash == det.spec.hash
    other = tmp_path / "other.key"
    other.write_bytes(b"another key")
    with pytest.raises(SettingError, match="does not match key_sha256") as e:
        registry.create("detector", "watermark", {**settings, "key_file": str(other)})
    assert "another key" not in str(e.value)


def test_bad_prompts_file_is_one_line_naming_file_record_and_field(tmp_path):
    bad = tmp_path / "prompts.json"
    bad.write_text(json.dumps(["Write about bees.", {"slug": "x"}]), encoding="utf-8")
    r = CliRunner().invoke(app, ["watermark", "generate", "--scheme", "none", "--prompts", str(bad),
                                 "-w", str(tmp_path / "ws")])
    assert r.exit_code == 1, r.output
    assert f"file {bad}, record 1, field 'prompt'" in r.output and "Traceback" not in r.output
