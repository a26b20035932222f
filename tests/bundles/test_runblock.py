"""The run labels a bundle shows, held to the log and the protocol (veribench.bundles.runblock)."""

from __future__ import annotations

from types import SimpleNamespace

from veribench.bundles import runblock

PROTO = SimpleNamespace(tag="T-1", split_rule="hash")


def _event(**kw):
    p = {"tag": "T-1", "run_id": "T-1-20261001T120000Z-abc123", "created_at": "2026-10-01T12:00:05+00:00",
         "chain_head": {"seq": 1}}
    p.update(kw)
    return {"seq": 2, "at": "2026-10-01T12:00:06.000000Z", "type": "run", "payload": p}


EVENTS = [{"seq": 1, "at": "2026-10-01T11:59:00.000000Z", "type": "import", "payload": {}}]


def _run(**kw):
    r = {"run_id": "T-1-20261001T120000Z-abc123", "tag": "T-1", "created_at": "2026-10-01T12:00:05+00:00",
         "veribench_version": "0.1.0", "protocol": {"path": "p.toml"}}
    r.update(kw)
    return r


def _fields(problems):
    return [p.field for p in problems]


def test_labels_as_logged_pass():
    assert runblock.label_problems(_run(), _event(), PROTO, ["p.toml"], EVENTS) == []


def test_a_relabelled_tag_is_refused_in_the_results_and_in_the_run_event():
    assert _fields(runblock.label_problems(_run(tag="OFFICIAL"), _event(), PROTO, ["p.toml"], EVENTS)) == ["run.tag"]
    got = _fields(runblock.label_problems(_run(tag="OFFICIAL"), _event(tag="OFFICIAL"), PROTO, ["p.toml"], EVENTS))
    assert got == ["run event tag", "run.tag"]


def test_run_id_of_another_tag_or_time_is_refused():
    got = runblock.label_problems(_run(run_id="OFFICIAL-20261001T120000Z-abc123"),
                                  _event(run_id="OFFICIAL-20261001T120000Z-abc123"), PROTO, ["p.toml"], EVENTS)
    assert "run event run_id" in _fields(got)
    # the time in the id more than RUN_ID_SLACK_S before the creation time
    late = "T-1-20261001T115000Z-abc123"
    got = runblock.label_problems(_run(run_id=late), _event(run_id=late), PROTO, ["p.toml"], EVENTS)
    assert _fields(got) == ["run event run_id"]


def test_backdated_creation_time_and_free_text_version_and_path():
    early = "2026-10-01T11:00:00+00:00"
    got = runblock.label_problems(_run(created_at=early), _event(created_at=early), PROTO, ["p.toml"], EVENTS)
    assert "run event created_at" in _fields(got)
    got = runblock.label_problems(_run(veribench_version="0.1.0 OFFICIAL", protocol={"path": "audited.toml"}),
                                  _event(), PROTO, ["p.toml"], EVENTS)
    assert _fields(got) == ["run.veribench_version", "run.protocol.path"]


def test_expected_run_drops_keys_nothing_re_derives():
    run = _run(audited_by="a lab", protocol={"path": "p.toml", "audited": True, "declared_split": False})
    got = runblock.expected_run(run, _event(), PROTO)
    assert "audited_by" not in got and "audited" not in got["protocol"]
    assert got["protocol"]["declared_split"] is True  # the protocol's split rule, not the published flag
    assert got["tag"] == "T-1" and got["run_id"] == _event()["payload"]["run_id"]
