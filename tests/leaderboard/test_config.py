"""board.toml: defaults, paths, the database URL and its password, one-line refusals."""

from __future__ import annotations

import pytest

from veribench.errors import InputError
from veribench.leaderboard.config import PASSWORD_ENV, load_config


def _write(tmp_path, body: str):
    p = tmp_path / "board.toml"
    p.write_text(body, encoding="utf-8")
    return p


def test_defaults_and_paths_resolve_beside_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv(PASSWORD_ENV, "pw-not-for-sqlite")
    c = load_config(_write(tmp_path, '[board]\nname = "detect-2027"\n'))
    b = c.board
    assert (b.headline_metric, b.ladder_eta, b.min_cell_size, b.submission_limit, b.canaries) == (
        "tpr_at_fpr_5", 0.01, 30, 10, 0)
    assert c.in_sample and b.calibration == "raid_in_sample"
    assert c.workspace_path == (tmp_path / "workspace").resolve()
    url = c.database_url()
    assert url.drivername == "sqlite" and url.database == str(tmp_path.resolve() / "board.sqlite")
    assert url.password is None


def test_postgres_password_comes_from_the_environment_only(tmp_path, monkeypatch):
    p = _write(tmp_path, '[board]\nname = "b"\ndatabase_url = "postgresql+psycopg://board@db.internal/board"\n'
                         'calibration = { every = 4, salt = "s" }\n')
    monkeypatch.setenv(PASSWORD_ENV, "hunter2")
    c = load_config(p)
    assert not c.in_sample and c.board.calibration.every == 4
    url = c.database_url()
    assert url.password == "hunter2" and "hunter2" not in url.render_as_string(hide_password=True)
    monkeypatch.delenv(PASSWORD_ENV)
    assert load_config(p).database_url().password is None


@pytest.mark.parametrize(("body", "field", "words"), [
    ('[board]\nname = "b"\ndatabase_url = "postgresql+psycopg://board:hunter2@h/db"\n', "board.database_url",
     PASSWORD_ENV),
    ('[board]\nname = "b"\ndatabase_url = "mysql://u@h/db"\n', "board.database_url", "not supported"),
    ('[board]\nname = "b"\nheadline_metric = "accuracy"\n', "board.headline_metric", "tpr_at_fpr_5"),
    ('[board]\nname = "b"\nladder_eta = 0\n', "board.ladder_eta", "greater than 0"),
    ('[board]\nname = "b"\nsubmission_limit = 0\n', "board.submission_limit", "greater than or equal to 1"),
    ('[board]\nname = "B C"\n', "board.name", "pattern"),
    ('[board]\nname = "b"\nsalt = "x"\n', "board.salt", "Extra inputs"),
    ('[board]\nname = "b"\ncalibration = "in_sample"\n', "board.calibration", ""),
    ('[boards]\nname = "b"\n', "boards", "unknown table"),
])
def test_bad_settings_are_refused_in_one_line_naming_the_field(tmp_path, body, field, words):
    p = _write(tmp_path, body)
    with pytest.raises(InputError) as e:
        load_config(p)
    msg = str(e.value)
    assert e.value.field == field and str(p) in msg and words in msg and "\n" not in msg, msg
    assert "hunter2" not in msg


def test_a_missing_file_and_bad_toml_are_one_line_errors(tmp_path):
    with pytest.raises(InputError, match="no such file"):
        load_config(tmp_path / "absent.toml")
    with pytest.raises(InputError, match="not valid TOML"):
        load_config(_write(tmp_path, "[board\n"))
