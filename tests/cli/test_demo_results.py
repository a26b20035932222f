"""``veribench demo`` gives the results it gave before issue 23 (the single write path, the
workspace schema and the layer moves): ``results.json`` equal to the stored baseline except
the event hashes and times (tests/data/demo-results/README.md). The baseline's TPR-at-FPR
interval fields (``ci95``, ``ci_method``, ``run.tpr_ci.method``) were regenerated for issue
25's exact bootstrap draws (a new random stream, the same law); its point estimates were not."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from tests.cli.demo_baseline import baseline, differences
from veribench.cli.main import app


def test_demo_without_models_gives_the_results_of_f6c21e4(tmp_path):
    r = CliRunner().invoke(app, ["demo", "--no-models", "--workspace", str(tmp_path / "ws"),
                                 "--out", str(tmp_path / "out")], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output[-3000:]
    new = json.loads((tmp_path / "out" / "results.json").read_text())
    assert differences(baseline("no-models"), new) == []


def test_the_comparison_finds_a_changed_number_a_key_and_a_string():
    old = {"run": {"run_id": "a", "n": 3}, "t": [{"fpr": 0.25, "d": "ZipPy"}]}
    assert differences(old, {"run": {"run_id": "b", "n": 3}, "t": [{"fpr": 0.25, "d": "ZipPy"}]}) == []
    assert differences(old, {"run": {"run_id": "a", "n": 4}, "t": [{"fpr": 0.25, "d": "ZipPy"}]}) == \
        ["/run/n: 3 != 4 (number)"]
    assert differences(old, {"run": {"run_id": "a", "n": 3}, "t": [{"fpr": 0.25 + 1e-9, "d": "ZipPy"}]}) != []
    assert differences(old, {"run": {"run_id": "a", "n": 3}, "t": [{"fpr": 0.25, "d": "Zippy"}]}) != []
    assert differences(old, {"run": {"run_id": "a"}, "t": [{"fpr": 0.25, "d": "ZipPy"}]}) != []
    m = {"t": [{"d": "LRR (SmolLM2-135M)", "auroc": 0.91}]}
    assert differences(m, {"t": [{"d": "LRR (SmolLM2-135M)", "auroc": 0.92}]}, skip_model_numbers=True) == []
    assert differences(m, {"t": [{"d": "LRR (SmolLM2-135M)", "auroc": 0.92}]}) != []
