"""Each detector plug-in's default decision rule, in words: the rule evaluation applies
wherever no protocol states one (:func:`veribench.evaluate.run.default_rule` applies it to
the scores: P(AI) > 0.5, else the detector's own verdict, else none), shown by
``veribench list detectors`` and printed per detector by ``veribench protocol commit``.
One function, so that what the help says is what a run does."""

from __future__ import annotations

from typing import Any

from veribench.detectors.local.hf_classifier import KNOWN_CLASSIFIERS
from veribench.detectors.local.zeroshot import BINOCULARS_THRESHOLDS, FAST_DETECTGPT_CALIBRATION, STATISTICS
from veribench.protocol.model import AI_VERDICTS, DEFAULT_THRESHOLD


def default_rule(kind: str, name: str, factory: Any) -> tuple[str, str, list[str]]:
    """(rule, source, notes) of a plug-in's default decision rule, from the data it lives in.

    A third-party plug-in may declare ``default_rule = {"rule": ..., "source": ...}`` on its
    factory. ``kind`` is ``"detector"``, ``"humanizer"``, ...; ``factory`` the registry's
    (unwrapped) factory."""
    declared = getattr(factory, "default_rule", None)
    if isinstance(declared, dict) and declared.get("rule"):
        return str(declared["rule"]), str(declared.get("source", "declared by the plug-in")), []
    if kind != "detector":
        if kind == "humanizer":
            return ("none (a humanizer makes no decision)",
                    "its outputs are judged by detectors and by the cycle's flag rules (veribench.cycles.flags)", [])
        return "none", "", []
    prob = (f"ai_probability > {DEFAULT_THRESHOLD:g}",
            "veribench's rule when no protocol names one (veribench.protocol.model.DEFAULT_THRESHOLD; "
            "Liang et al. 2023 use score > 0.5 for every detector)")
    verdict_src = "veribench.evaluate.run: a detector that reports no probability is judged by its own verdict"
    notes: list[str] = []
    info = getattr(factory, "info", None)
    if info is not None:  # commercial API
        notes.append(f"P(AI) from the response: {info.rule}; native scale {info.scale} ({info.direction})")
        notes.append(f"facts from: {info.source}")
        notes += [f"unconfirmed: {u}" for u in info.unconfirmed]
        return prob[0], prob[1], notes
    module = getattr(factory, "__module__", "")
    if name == "zippy" or module.endswith(".zippy"):
        return ("verdict = AI (ZipPy's own rule: signed compression delta > 0)", verdict_src +
                "; upstream rule: thinkst/zippy zippy.py run_on_text_chunked", ["no probability: none is invented"])
    if name == "binoculars":
        modes = ", ".join(f"{k}: B < {v:.4f}" for k, v in BINOCULARS_THRESHOLDS.items())
        return (f"verdict = AI when the Binoculars score B is below the mode's threshold ({modes}; setting mode)",
                verdict_src + "; thresholds: ahans30/Binoculars binoculars/detector.py (falcon-7b pair, bf16)", [])
    if name == "fast-detectgpt":
        pairs = ", ".join(f"{a}/{b}" for a, b in FAST_DETECTGPT_CALIBRATION)
        return (f"{prob[0]} for the model pairs with a published mapping ({pairs}); otherwise none: declare a "
                "threshold in a protocol or fit one on the calibration split",
                prob[1] + "; mapping: baoguangsheng/fast-detect-gpt scripts/local_infer.py", [])
    if name == "hf-classifier":
        own = "; ".join(f"{m}: P(AI) >= {r['threshold']:g} ({r['source']})" for m, r in KNOWN_CLASSIFIERS.items())
        return prob[0], prob[1], [f"the model's own verdict threshold (stored as verdict): {own}"]
    if module.endswith(".zeroshot"):
        st = STATISTICS.get(name)
        src = st.source if st else "the statistic's paper"
        return ("none: no published threshold for this statistic; declare one in a protocol "
                "(rule = {field = \"raw\", op = \">\", threshold = ...}) or fit it on the calibration split "
                "(rule = {fit = \"best_balanced_accuracy\"})",
                f"statistic: {src}; metrics rank the raw statistic ({st.direction if st else 'see scale'})", [])
    if name == "imported":
        return (f"{prob[0]}, else the recorded verdict in {sorted(AI_VERDICTS)}", prob[1] + "; " + verdict_src,
                ["the imported file's own rule, if any, belongs in the protocol"])
    return prob[0] + " (or its verdict, when it reports no probability)", prob[1] + "; " + verdict_src, notes
