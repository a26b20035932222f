"""The protocol as a typed model: unknown keys refused with "did you mean", every value
range-checked, the arms / comparisons / gaps sections, the exported JSON Schema, and the
label-role table as data."""

from __future__ import annotations

import json
import tomllib
import typing
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from veribench import labels
from veribench.cli.main import app
from veribench.errors import ProtocolError
from veribench.protocol import roles
from veribench.protocol.model import json_schema, load_protocol, parse_protocol

REPO = Path(__file__).resolve().parents[2]
HEAD = {"protocol": {"name": "p"}}


def refused(data: dict) -> str:
    with pytest.raises(ProtocolError) as e:
        parse_protocol(data, path="p.toml")
    msg = str(e.value)
    assert msg.startswith("protocol p.toml") and "\n" not in msg
    return msg


@pytest.mark.parametrize("data,field,hint", [
    ({**HEAD, "metric": {}}, "metric", "did you mean 'metrics'"),
    ({**HEAD, "split": {"evrey": 5}}, "split.evrey", "did you mean 'every'"),
    ({**HEAD, "detectors": [{"name": "x", "setting": {}}]}, "detectors[0].setting", "did you mean 'settings'"),
    ({**HEAD, "metrics": {"confidence": 95}}, "metrics.confidence", "did you mean 0.95"),
    ({**HEAD, "metrics": {"tpr_at_fpr": [5]}}, "metrics.tpr_at_fpr", "did you mean 0.05"),
    ({**HEAD, "metrics": {"confidence": 0.2}}, "metrics.confidence", "[0.5, 1)"),
    ({**HEAD, "metrics": {"tpr_at_fpr": [0.05, 0.05]}}, "metrics.tpr_at_fpr", "repeated"),
    ({**HEAD, "metrics": {"bootstrap_n": 5}}, "metrics.bootstrap_n", "greater than or equal to 100"),
    ({**HEAD, "metrics": {"seed": -1}}, "metrics.seed", "greater than or equal to 0"),
    ({**HEAD, "metrics": {"auroc_ci": "delongg"}}, "metrics.auroc_ci", "did you mean 'delong'"),
    ({**HEAD, "split": {"every": 1}}, "split.every", "greater than or equal to 2"),
    ({**HEAD, "split": {"every": "5"}}, "split.every", "valid integer"),
    ({**HEAD, "split": {"rule": "random"}}, "split.rule", "'none' or 'hash'"),
    ({**HEAD, "tables": {"slices": ["subgrup"]}}, "tables.slices[0]", "did you mean 'subgroup'"),
    ({**HEAD, "selection": {"labels": ["AI"]}}, "selection.labels[0]", "did you mean 'ai'"),
    ({**HEAD, "selection": {"corpus": ["x"]}}, "selection.corpus", "did you mean 'corpora'"),
    ({**HEAD, "detectors": [{"name": "x", "rule": {"threshold": 50}}]}, "detectors[0].rule.threshold",
     "did you mean 0.5"),
    ({**HEAD, "detectors": [{"name": "x", "rule": {"op": ">"}}]}, "detectors[0].rule.threshold", "required"),
    ({**HEAD, "detectors": [{"name": "x", "rule": {"op": "=>", "threshold": 0.5}}]}, "detectors[0].rule.op",
     "did you mean '>'"),
    ({**HEAD, "detectors": [{"name": "x", "rule": {"fit": "magic"}}]}, "detectors[0].rule.fit", "not allowed"),
    ({**HEAD, "detectors": [{"name": "x", "rule": {"fit": "target_fpr"}}]}, "detectors[0].rule.target_fpr",
     "needs target_fpr"),
    ({**HEAD, "detectors": [{"name": "x", "rule": {"fit": "best_balanced_accuracy", "threshold": 0.3}}]},
     "detectors[0].rule.threshold", "takes no threshold"),
    ({**HEAD, "detectors": [{"name": "x", "rule": {"fit": "best_balanced_accuracy"}}]}, "detectors[0].rule.fit",
     "calibration split"),
    ({**HEAD, "detectors": [{"name": "x", "rule": {"treshold": 0.5}}]}, "detectors[0].rule.treshold",
     "did you mean 'threshold'"),
    ({**HEAD, "detectors": [{"name": "x"}, {"name": "x"}]}, "detectors", "duplicate detector labels"),
    ({**HEAD, "arms": {"C2": {"rol": "side"}}}, "arms.C2.rol", "did you mean 'role'"),
    ({**HEAD, "arms": {"C2": {"role": "sideline"}}}, "arms.C2.role", "did you mean 'side'"),
    ({**HEAD, "arms": {"C2": {"role": "side", "edit_budget": {"max_changed_word_share": 10}}}},
     "arms.C2.edit_budget.max_changed_word_share", "less than or equal to 1"),
    ({**HEAD, "arms": {"C2": {"role": "side", "on_violation": "move"}}}, "arms.C2.on_violation", "pattern"),
    ({**HEAD, "comparisons": {"correction": "holmes"}}, "comparisons.correction", "did you mean 'holm'"),
    ({**HEAD, "comparisons": {"alpha": 5}}, "comparisons.alpha", "less than or equal to 0.5"),
    ({**HEAD, "comparisons": {"metrics": ["aucroc"]}}, "comparisons.metrics[0]", "did you mean 'auroc'"),
    ({**HEAD, "tables": {"slices": ["subgroup"]}, "gaps": [{"slice": "subgroup", "group_a": "a", "group_b": "b",
                                                             "metric": "auroc"}]}, "gaps[0].metric", "not allowed"),
    ({**HEAD, "gaps": [{"slice": "tag:writer", "group_a": "a", "group_b": "b"}]}, "gaps[0].slice",
     "not in [tables] slices"),
    ({**HEAD, "tables": {"slices": ["subgroup"]}, "gaps": [{"slice": "subgroup", "group_a": "a", "group_b": "a"}]},
     "gaps[0].group_b", "both 'a'"),
    ({**HEAD, "amendments": [{"date": "yesterday", "summary": "x"}]}, "amendments[0].date", "ISO date"),
    ({"protocol": {}}, "protocol.name", "required"),
])
def test_refused_with_the_field_and_a_hint(data, field, hint):
    msg = refused(data)
    assert f"field {field!r}" in msg, msg
    assert hint in msg, msg


def test_valid_sections_reach_the_runtime_view():
    p = parse_protocol({
        **HEAD,
        "split": {"rule": "hash", "every": 4},
        "tables": {"slices": ["subgroup", "tag:writer"]},
        "arms": {"C2": {"role": "side", "edit_budget": {"max_changed_word_share": 0.1, "sentences_added": 0,
                                                         "sentences_removed": 0}, "on_violation": "move:C2-over-budget"},
                 "D": "headline"},
        "comparisons": {"enabled": True, "metrics": ["auroc", "fpr", "catch_rate"], "correction": "holm",
                        "family": "run", "alpha": 0.05},
        "gaps": [{"slice": "tag:writer", "group_a": "non-native", "group_b": "native", "label_a": "TOEFL",
                  "label_b": "US", "metric": "fpr"}],
        "detectors": [{"name": "zippy", "rule": {"fit": "target_fpr", "target_fpr": 0.05}},
                      {"name": "GPTZero", "rule": {"field": "verdict", "ai_values": ["AI", "Mixed"]}}],
        "amendments": [{"date": "2026-11-30", "summary": "why", "supersedes": "ab" * 32}],
    })
    assert p.arms == {"C2": "side", "D": "headline"} and p.arm_role("C2") == "side" and p.arm_role("D") == "headline"
    assert p.arm_role("A") == "headline" and p.arm_role("Z") == "side" and p.arm_role(None) == "headline"
    assert p.arm_specs["C2"].edit_budget.max_changed_word_share == 0.1
    assert p.arm_specs["C2"].on_violation == "move:C2-over-budget"
    assert p.comparisons.enabled and p.comparisons.correction == "holm" and p.comparisons.metrics == ["auroc", "fpr",
                                                                                                      "catch_rate"]
    assert p.gaps[0].group_a == "non-native" and p.gaps[0].metric == "fpr"
    assert parse_protocol(HEAD).comparisons is None  # no section: no comparisons planned
    assert parse_protocol({**HEAD, "comparisons": {}}).comparisons.enabled
    assert p.detectors[0].rule.fit == "target_fpr" and p.detectors[0].rule.target_fpr == 0.05
    assert p.detectors[1].rule.ai_values == ("ai", "mixed")
    assert p.split_every == 4 and p.slices == ("subgroup", "tag:writer")
    assert p.amendments == [{"date": "2026-11-30", "summary": "why", "supersedes": "ab" * 32}]


def test_examples_validate_and_the_schema_file_is_current():
    schema = json_schema()
    on_disk = json.loads((REPO / "docs" / "protocol.schema.json").read_text())
    assert on_disk == schema, "regenerate: python -m veribench.protocol.model > docs/protocol.schema.json"
    jsonschema = pytest.importorskip("jsonschema")
    for f in sorted((REPO / "examples" / "protocols").glob("*.toml")):
        load_protocol(f)
        jsonschema.validate(tomllib.loads(f.read_text()), schema)  # an independent validator agrees
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"protocol": {"name": "p"}, "metric": {}}, schema)


def test_commit_refuses_a_typo_through_the_cli(tmp_path):
    f = tmp_path / "p.toml"
    f.write_text('[protocol]\nname = "p"\n[split]\nevrey = 3\n')
    r = CliRunner().invoke(app, ["protocol", "commit", str(f), "--workspace", str(tmp_path / "ws")])
    assert r.exit_code == 1 and "did you mean 'every'" in r.output and "Traceback" not in r.output


def test_yaml_protocol_with_the_same_keys(tmp_path):
    f = tmp_path / "p.yaml"
    f.write_text("protocol: {name: y}\nmetrics: {tpr_at_fpr: [0.01]}\narms: {C2: side}\n")
    p = load_protocol(f)
    assert p.tpr_at_fpr == (0.01,) and p.arms == {"C2": "side"}


# --------------------------------------------------------------------------- the role table
def test_label_roles_are_one_table():
    from veribench.corpus import document
    from veribench.metrics import as_binary

    assert typing.get_args(document.Label) == labels.LABELS == document.LABELS
    assert document.POSITIVE_LABELS == labels.POSITIVE_LABELS == ("ai",)
    assert document.NEGATIVE_LABELS == labels.NEGATIVE_LABELS == ("human",)
    assert set(labels.SIDE_LABELS) == {"ai-edited-human", "mixed"}
    assert as_binary(["human", "ai"]).tolist() == [0, 1]
    for side in labels.SIDE_LABELS:
        with pytest.raises(ValueError, match="side labels"):
            as_binary(["human", side])


def test_roles_classify():
    r = roles.classify(["human", "ai", "ai", "ai", "ai-edited-human", "mixed", "ai", "unknown"],
                       ["A", "C", "C2", None, "C2", "X", "C", "A"],
                       [{}, {}, {}, {}, {}, {}, {"derivation": "attack", "attack": "homoglyph"}, {}],
                       {"X": "headline"})
    assert r.headline.tolist() == [True, True, False, True, False, False, False, False]
    assert r.table.tolist() == [True, True, False, True, True, True, False, False]
    assert list(r.side) == [None, None, "arm=C2", None, None, None, "derivation=attack:homoglyph", None]
    assert r.code.tolist()[-1] == roles.UNKNOWN_CODE
    assert r.y.tolist() == [0, 1, -1, 1, -1, -1, -1, -1]
    assert isinstance(r.code, np.ndarray)
