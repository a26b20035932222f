"""Arm rules enforced at import (issue 25; spec 002 arms A, B, C, C2; ``veribench.protocol.arm_rules``).

Each breach is refused with the file, the record, the field and the rule named, and nothing
stored (the workspace's files and tables byte-identical); a protocol committed with an
explicit relaxation accepts the case; an undated arm-A text is stored as "date unknown" and
counted in every run's tables; a corpus's declared date bound is applied.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from tests.corpus.test_hostile_inputs import snapshot
from veribench.commit import commit
from veribench.corpus.importers import import_documents
from veribench.errors import InputError, ProtocolError
from veribench.evaluate import evaluate_workspace
from veribench.evaluate.tables import html_page, markdown, print_tables
from veribench.protocol.arm_rules import ARM_RULES, RULE_IDS, check, latest_day
from veribench.protocol.model import load_protocol, parse_protocol
from veribench.store import Workspace

TEXT = "The committee met on Tuesday to discuss the budget for the coming year and the plans for the library."


def _doc(i: int, **kw) -> dict:
    return {"id": f"d{i}", "text": f"{TEXT} ({i})", **kw}


def _good() -> list[dict]:
    return [_doc(0, label="human", arm="A", provenance={"published": "2019-05-01"}),
            _doc(1, label="ai", arm="C"),
            _doc(2, label="human", arm="B", provenance={"attestation": "att-1"})]


def _write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


#: The four cases of issue 25: (record, field, rule).
CASES = {
    "ai-in-arm-A": (_doc(7, label="ai", arm="A"), "label", "A.labels"),
    "arm-A-dated-2025": (_doc(7, label="human", arm="A", provenance={"published": "2025-03-01"}),
                         "provenance.published", "A.max_date"),
    "human-in-arm-C": (_doc(7, label="human", arm="C"), "label", "C.labels"),
    "arm-B-unattested": (_doc(7, label="human", arm="B"), "provenance.attestation", "B.attestation"),
}

#: The protocol that relaxes each case explicitly.
RELAX = {
    "ai-in-arm-A": 'relax = ["A.labels"]',
    "arm-A-dated-2025": 'A.max_date = "2025-12-31"',
    "human-in-arm-C": 'relax = ["C.labels"]',
    "arm-B-unattested": 'relax = ["B.attestation"]',
}


def _protocol(path: Path, arm_rules: str | None, name: str = "arms") -> Path:
    body = f'[protocol]\nname = "{name}"\ntag = "T"\n'
    if arm_rules is not None:
        body += f"\n[arm_rules]\n{arm_rules}\n"
    path.write_text(body)
    return path


def _seeded(tmp_path: Path) -> tuple[Path, tuple]:
    """A workspace holding the good documents, and its snapshot."""
    ws_path = tmp_path / "ws"
    with Workspace(ws_path) as ws:
        import_documents(ws, _write(tmp_path / "good.jsonl", _good()))
    return ws_path, snapshot(ws_path)


@pytest.mark.parametrize("case", sorted(CASES))
def test_breach_refused_with_rule_named_and_nothing_stored(case, tmp_path):
    bad, field, rule = CASES[case]
    ws_path, before = _seeded(tmp_path)
    f = _write(tmp_path / "essays.jsonl", [_good()[0] | {"id": "new0"}, bad])
    with Workspace(ws_path) as ws, pytest.raises(InputError) as e:
        import_documents(ws, f)
    msg = str(e.value)
    assert "\n" not in msg
    assert e.value.file == str(f) and e.value.record == "d7" and e.value.field == field
    assert f"rule {rule}" in msg and "[arm_rules]" in msg
    assert snapshot(ws_path) == before  # no document, no import, no event


@pytest.mark.parametrize("case", sorted(CASES))
def test_streamed_import_refuses_with_file_and_line(case, tmp_path):
    """The streaming path (``StreamWriter``) applies the same rule, naming the line."""
    from veribench.corpus.importers._stream import StreamWriter
    from veribench.corpus.report import ImportReport

    bad, field, rule = CASES[case]
    ws_path, before = _seeded(tmp_path)
    with Workspace(ws_path) as ws, pytest.raises(InputError) as e:
        with StreamWriter(ws, ImportReport(kind="jsonl", source="big.jsonl", corpus="big"), progress=False) as w:
            w.add(_good()[0] | {"id": "new0"}, record="line 1", set_name="s", file="big.jsonl")
            w.add(bad, record="line 2", set_name="s", file="big.jsonl")
    assert (e.value.file, e.value.record, e.value.field) == ("big.jsonl", "line 2", field)
    assert f"rule {rule}" in str(e.value)
    # a streamed import commits its batches and removes them on failure: every table as it was
    assert snapshot(ws_path)[1] == before[1]


@pytest.mark.parametrize("case", sorted(CASES))
def test_relaxed_protocol_accepts_the_case(case, tmp_path):
    bad, _, rule = CASES[case]
    proto = _protocol(tmp_path / "p.toml", RELAX[case])
    with Workspace(tmp_path / "ws") as ws:
        commit(ws, proto)
        rep = import_documents(ws, _write(tmp_path / "essays.jsonl", _good() + [bad]))
        assert rep.documents == 4
        res = evaluate_workspace(ws, load_protocol(proto), allow_scoring=False, record=False)
    a = res["run"]["arm_rules"]
    relaxed = a["relaxed"] + list(a["changed"])
    assert rule in relaxed
    assert "ARM RULES RELAXED" in markdown(res)


def test_evaluate_rechecks_under_the_protocol(tmp_path):
    """A document stored under one protocol's relaxation is refused by the commit of a protocol
    that does not relax the rule, and by a run under the built-in rules, naming the document."""
    bad = CASES["ai-in-arm-A"][0]
    with Workspace(tmp_path / "ws") as ws:
        commit(ws, _protocol(tmp_path / "loose.toml", 'relax = ["A.labels"]', name="loose"))
        import_documents(ws, _write(tmp_path / "essays.jsonl", _good() + [bad]))
        strict = _protocol(tmp_path / "strict.toml", None, name="strict")
        with pytest.raises(ProtocolError, match=r"document d7, field 'label'.*rule A\.labels"):
            commit(ws, strict)
        with pytest.raises(InputError, match=r"rule A\.labels") as e:
            evaluate_workspace(ws, None, allow_scoring=False, record=False)  # the built-in rules
        assert e.value.record == "d7"


def test_undated_arm_a_text_stored_as_unknown_and_counted(tmp_path):
    rows = _good() + [_doc(5, label="human", arm="A"), _doc(6, label="human", arm="A")]
    with Workspace(tmp_path / "ws") as ws:
        import_documents(ws, _write(tmp_path / "essays.jsonl", rows))
        prov = {r[0]: json.loads(r[1]) for r in ws.query("SELECT doc_id, provenance FROM documents")}
        res = evaluate_workspace(ws, None, allow_scoring=False, record=False)
    assert prov["d5"]["date_status"] == "unknown" and prov["d6"]["date_status"] == "unknown"
    assert "date_status" not in prov["d0"]  # dated
    a = res["run"]["arm_rules"]
    assert (a["arm_a_undated"], a["arm_a_texts"]) == (2, 3)
    assert a["relaxed"] == [] and a["statement"] is None
    line = "UNDATED ARM-A TEXTS: 2 of 3 arm-A texts"
    assert line in markdown(res) and line in html_page(res)
    out = io.StringIO()
    print_tables(res, Console(file=out, width=300))
    assert line in out.getvalue()  # the terminal


def test_declared_corpus_date_bound_applied(tmp_path, liang_dir):
    """Liang et al. (2023): the Hewlett (ASAP, 2012) essays take their declared bound; the TOEFL
    and college essays have no documented date and are stored, and counted, as undated."""
    from veribench.corpus.importers import import_liang2023

    with Workspace(tmp_path / "ws") as ws:
        import_liang2023(ws, liang_dir)
        rows = ws.query("SELECT subgroup, provenance FROM documents WHERE arm = 'A'")
        res = evaluate_workspace(ws, None, allow_scoring=False, record=False)
    by_set: dict[str, set] = {}
    for sub, prov in rows:
        p = json.loads(prov)
        by_set.setdefault(sub, set()).add((p.get("date_bound"), p.get("date_status")))
    assert by_set["HewlettStudentEssay_real_88"] == {("2012", None)}
    assert by_set["TOEFL_real_91"] == {(None, "unknown")}
    undated = sum(1 for sub, _ in rows if not sub.startswith("Hewlett"))
    assert res["run"]["arm_rules"]["arm_a_undated"] == undated > 0


def test_declared_bound_after_the_arm_date_is_refused(tmp_path):
    """A corpus bound that does not show the text predates 2022 is a breach like a date."""
    row = _doc(3, label="human", arm="A", provenance={"date_bound": "2023-04-06"})
    with Workspace(tmp_path / "ws") as ws, pytest.raises(InputError, match=r"after arm A's date bound 2021-12-31"):
        import_documents(ws, _write(tmp_path / "x.jsonl", [row]))


def test_rule_table_and_dates():
    assert set(ARM_RULES) == {"A", "B", "C", "C2"}
    assert RULE_IDS == ("A.labels", "A.max_date", "B.labels", "B.attestation", "C.labels", "C2.labels")
    # partial dates: compared by the last day they can denote (a plain loop of calendar facts)
    assert str(latest_day("2021")) == "2021-12-31" and str(latest_day("2024-02")) == "2024-02-29"
    assert str(latest_day("2021-12-31T23:00:00Z")) == "2021-12-31"
    assert check({"label": "human", "arm": "A", "provenance": {"published": "2021"}}) is None
    assert check({"label": "human", "arm": "A", "provenance": {"published": "2022"}}).rule == "A.max_date"
    # edited AI belongs in C2; derived texts keep their source's date
    assert check({"label": "ai-edited-human", "arm": "C2"}) is None
    assert check({"label": "human", "arm": "A", "derived": True, "provenance": {"published": "2026"}}) is None
    assert check({"label": "ai", "arm": "my-own-arm"}) is None


def test_protocol_arm_rules_validated_with_did_you_mean():
    with pytest.raises(ProtocolError, match=r"did you mean 'A\.labels'"):
        parse_protocol({"protocol": {"name": "x"}, "arm_rules": {"relax": ["A.label"]}})
    with pytest.raises(ProtocolError, match=r"did you mean 'relax'"):
        parse_protocol({"protocol": {"name": "x"}, "arm_rules": {"relx": []}})
    with pytest.raises(ProtocolError, match=r"YYYY-MM-DD"):
        parse_protocol({"protocol": {"name": "x"}, "arm_rules": {"A": {"max_date": "June 2022"}}})
    p = parse_protocol({"protocol": {"name": "x"}, "arm_rules": {"A": {"max_date": "2022-06-30"}}})
    assert p.arm_rules.bound("A") == "2022-06-30"
    assert p.arm_rules.statement() == "A.max_date moved from 2021-12-31 to 2022-06-30"


def test_a_stored_protocol_that_no_longer_parses_relaxes_nothing(tmp_path):
    """Import reads the relaxations from the committed protocols' stored bytes; bytes that no
    longer parse relax nothing: the built-in rules hold."""
    with Workspace(tmp_path / "ws") as ws:
        commit(ws, _protocol(tmp_path / "loose.toml", 'relax = ["A.labels"]', name="loose"))
        with ws.transaction() as c:
            c.execute("UPDATE protocols SET content = 'not = [toml'")
        with pytest.raises(InputError, match=r"rule A\.labels"):
            import_documents(ws, _write(tmp_path / "x.jsonl", [CASES["ai-in-arm-A"][0]]))
