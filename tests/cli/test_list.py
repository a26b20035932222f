"""``veribench list detectors|humanizers|corpora``: every plug-in with its settings, its default
decision rule and where that rule comes from, read from the data the rules live in."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from veribench import registry
from veribench.cli.main import app


def _json(*args: str):
    r = CliRunner().invoke(app, ["list", *args, "--format", "json"])
    assert r.exit_code == 0, r.output
    return json.loads(r.output)


def test_every_detector_is_listed_with_settings_rule_and_source():
    from veribench.detectors.api import vendors
    from veribench.detectors.local.zeroshot import BINOCULARS_THRESHOLDS, STATISTICS
    from veribench.protocol.model import DEFAULT_THRESHOLD

    rows = {r["name"]: r for r in _json("detectors")}
    assert set(rows) == set(registry.names("detector"))
    for name, r in rows.items():
        assert r["rule"] and r["rule_source"], name
    # commercial detectors: the no-protocol default, and the vendor's own facts from VendorInfo
    for name in ("gptzero", "originality", "copyleaks", "winston", "zerogpt", "sapling", "pangram"):
        info = registry.get("detector", name).info
        r = rows[name]
        assert r["rule"] == f"ai_probability > {DEFAULT_THRESHOLD:g}" and "DEFAULT_THRESHOLD" in r["rule_source"]
        assert any(info.rule in n for n in r["notes"]) and any(info.source in n for n in r["notes"])
        names = {s["name"]: s for s in r["settings"]}
        assert names["base_url"]["default"] == info.base_url and names["base_url"]["spec"] is True
        assert names["timeout"]["spec"] is False  # operational: never in the spec
        assert any(f"VERIBENCH_{name.upper()}_API_KEY" in n for n in r["notes"])
    assert {s["name"]: s["default"] for s in rows["gptzero"]["settings"]}["p_ai_rule"] == \
        vendors.GPTZero.vendor_settings["p_ai_rule"]
    # local detectors: thresholds and sources from their own tables
    assert f"{BINOCULARS_THRESHOLDS['accuracy']:.4f}" in rows["binoculars"]["rule"]
    assert "ahans30/Binoculars" in rows["binoculars"]["rule_source"]
    assert rows["zippy"]["rule"].startswith("verdict") and "thinkst/zippy" in rows["zippy"]["rule_source"]
    for stat in STATISTICS:
        assert rows[stat]["rule"].startswith("none") and STATISTICS[stat].source in rows[stat]["rule_source"]
        assert {s["name"] for s in rows[stat]["settings"]} >= {"model", "max_tokens", "device", "dtype"}
    assert {s["name"]: s["default"] for s in rows["zippy"]["settings"]} == {"engine": "lzma", "chunk_size": 1500,
                                                                               "canonicalize": "none"}


def test_a_third_party_plugin_declares_its_rule():
    class Mine:
        """A detector from elsewhere."""

        default_rule = {"rule": "raw >= 7", "source": "the vendor's manual, p. 3"}

        def __init__(self, depth: int = 3):
            self.depth = depth

    registry.register("detector", "third-party-x", Mine)
    try:
        rows = {r["name"]: r for r in _json("detectors")}
        r = rows["third-party-x"]
        assert r["rule"] == "raw >= 7" and r["rule_source"] == "the vendor's manual, p. 3"
        assert r["settings"] == [{"name": "depth", "default": 3},
                                 {"name": "canonicalize", "default": "none", "spec": True, "choices": ["none", "skeleton"]}] and r["summary"] == "A detector from elsewhere."
    finally:
        registry._REGISTERED["detector"].pop("third-party-x")


def test_humanizers_and_text_output():
    rows = {r["name"]: r for r in _json("humanizers")}
    assert set(rows) == set(registry.names("humanizer"))
    und = {s["name"]: s["default"] for s in rows["undetectable"]["settings"]}
    assert und["base_url"] == registry.get("humanizer", "undetectable").default_base_url
    r = CliRunner().invoke(app, ["list", "detectors"])
    assert r.exit_code == 0
    for name in registry.names("detector"):
        assert f"\n{name}\n" in "\n" + r.output
    assert r.output.count("default decision rule:") == len(registry.names("detector"))


def test_corpora_lists_importers_and_the_workspace(tmp_path, liang_dir):
    r = CliRunner().invoke(app, ["import", "liang2023", str(liang_dir), "-w", str(tmp_path / "ws"), "-q"])
    assert r.exit_code == 0, r.output
    info = _json("corpora", "-w", str(tmp_path / "ws"))
    imps = {i["name"]: i for i in info["importers"]}
    assert {"jsonl", "csv", "parquet", "liang2023", "fastdetectgpt", "scores", "generated", "humanized",
            "cycle"} <= set(imps)
    assert imps["liang2023"]["rule"].startswith("score > 0.5") and "Liang" in imps["liang2023"]["rule_source"]
    assert {s["name"] for s in imps["cycle"]["settings"]} >= {"--corpus", "--arm", "--humanized-arm"}
    (c,) = info["corpora"]
    assert c["corpus"] == "liang2023" and c["documents"] == 490
    # the seven bundled sets: two GPT sets of 31, two AI-edited sets (88, 91), three human sets (70, 88, 91)
    assert c["labels"] == {"ai": 31 + 31, "ai-edited-human": 88 + 91, "human": 70 + 88 + 91}
    assert c["arms"] == {"C": 62, "AI-edited": 179, "A": 249}


def test_list_detectors_names_each_detectors_declared_languages():
    """``veribench list detectors`` gives each detector's declared languages at its default
    settings (a zero-shot detector's follow its default model), and labels a detector without
    them "languages not declared", in text and JSON (issue 27)."""
    import json as _json

    from typer.testing import CliRunner

    from veribench import registry
    from veribench.cli.main import app

    r = CliRunner().invoke(app, ["list", "detectors", "--format", "json"])
    assert r.exit_code == 0, r.output
    got = {d["name"]: (d["languages"], d["languages_reason"]) for d in _json.loads(r.stdout)}
    assert got["sapling"] == (["en"], None) and got["zippy"] == (["en"], None)
    assert got["fast-detectgpt"] == (["en"], None) and got["binoculars"] == (["en", "fr"], None)
    for name in ("gptzero", "originality", "winston", "zerogpt", "hf-classifier", "imported"):
        assert got[name] == (None, registry.NOT_DECLARED), name
    text = CliRunner().invoke(app, ["list", "detectors"]).stdout
    block = text.split("\ngptzero\n", 1)[1].split("\n\n", 1)[0]
    assert "  languages: languages not declared" in block
    assert "  languages: en (docs/detectors.md)" in text.split("\nsapling\n", 1)[1].split("\n\n", 1)[0]
