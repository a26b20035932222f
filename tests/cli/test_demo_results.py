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
    out = tmp_path / "out"
    out.mkdir()  # what an earlier demo wrote: flat tables and a raw page; the demo replaces them
    (out / "index.html").write_text('<html><body><pre>{"run": {}}</pre></body></html>')
    (out / "tables.md").write_text("# old\n")
    r = CliRunner().invoke(app, ["demo", "--no-models", "--workspace", str(tmp_path / "ws"),
                                 "--out", str(out)], env={"COLUMNS": "200"})
    assert r.exit_code == 0, r.output[-3000:]
    new = json.loads((out / "results.json").read_text())
    assert differences(baseline("no-models"), new) == []
    # issue 25: the report folder is the site `veribench report` builds, the tables beside it
    (run_page,) = out.glob("run-*.html")
    assert (out / ".veribench-report").is_file() and (out / "data" / f"{run_page.stem}.json").is_file()
    index = (out / "index.html").read_text()
    assert "NOT PRE-REGISTERED" in index and "<pre>" not in index and '"run":' not in index
    assert "How to pre-register" in run_page.read_text()
    assert (out / "tables.md").read_text() != "# old\n" and (out / "table1.csv").is_file()
    assert f"open {out / 'index.html'}" in " ".join(r.output.split())


def test_demo_refuses_a_folder_it_may_not_replace_before_any_work(tmp_path):
    out = tmp_path / "mine"
    out.mkdir()
    (out / "thesis.docx").write_text("not the demo's")
    r = CliRunner().invoke(app, ["demo", "--no-models", "--workspace", str(tmp_path / "ws"), "--out", str(out)])
    assert r.exit_code != 0 and "Traceback" not in r.output
    assert str(out) in r.output and "not empty" in r.output, r.output
    assert (out / "thesis.docx").read_text() == "not the demo's" and not (tmp_path / "ws").exists()


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
