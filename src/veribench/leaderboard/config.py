"""``board.toml``: one leaderboard's settings (pydantic; unknown keys refused).

Example::

    [board]
    name = "detect-2027"
    workspace = "workspace"                 # folder, relative to board.toml's folder
    database_url = "sqlite:///board.sqlite"  # default; or postgresql+psycopg://user@host/db
    headline_metric = "tpr_at_fpr_5"
    ladder_eta = 0.01
    min_cell_size = 30
    submission_limit = 10
    calibration = { rule = "hash", every = 5, salt = "detect-2027" }   # or "raid_in_sample"
    canaries = 20
    reveal_at = 2027-03-01T00:00:00Z

The PostgreSQL password is never written in the file: it is read from the environment
variable :data:`PASSWORD_ENV` (a URL holding a password is refused, naming the field and
not the value).
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from veribench.errors import InputError
from veribench.protocol.model import Gap

#: The environment variable holding the database password (never the file).
PASSWORD_ENV = "VERIBENCH_BOARD_DB_PASSWORD"

#: Headline metrics the organiser may name: results key in a Table 1 row, and how a value
#: is read from it (``tpr`` of a TPR-at-FPR block, else the number itself). Higher is
#: better for every one of them (the Ladder's direction).
HEADLINES: dict[str, str] = {
    "tpr_at_fpr_5": "TPR at 5% FPR (the catch rate at the threshold that flags 5% of human texts)",
    "tpr_at_fpr_1": "TPR at 1% FPR (the catch rate at the threshold that flags 1% of human texts)",
    "auroc": "AUROC",
    "balanced_accuracy": "balanced accuracy at the entry's fitted threshold",
}

#: Headlines read at the entry's decision rule: undefined without one (RAID's in-sample rule).
RULE_HEADLINES = frozenset({"balanced_accuracy"})

#: The target FPR of each TPR-at-FPR headline: the headline is undefined on a set with fewer
#: than ``1 / target`` human headline texts (no threshold flags that share of them).
HEADLINE_TARGET_FPR: dict[str, float] = {"tpr_at_fpr_5": 0.05, "tpr_at_fpr_1": 0.01}

_NAME = r"^[a-z0-9][a-z0-9-]{0,47}$"


class CalibrationSplit(BaseModel):
    """The declared calibration split: a hash split (``protocol.model.Split``'s rule): one
    in ``every`` documents goes to calibration, by SHA-256 of ``salt`` and the document's group key."""

    model_config = ConfigDict(extra="forbid")
    rule: Literal["hash"] = "hash"
    every: int = Field(5, ge=2, le=1000)
    salt: str = Field(min_length=1)


class BoardModel(BaseModel):
    """The ``[board]`` table (see the module docstring)."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=_NAME, description="board name: lower-case letters, digits and '-'")
    workspace: str = Field("workspace", min_length=1)
    database_url: str | None = None
    headline_metric: str = "tpr_at_fpr_5"
    ladder_eta: float = Field(0.01, gt=0.0, lt=1.0, allow_inf_nan=False)
    min_cell_size: int = Field(30, ge=1)
    submission_limit: int = Field(10, ge=1)
    calibration: Literal["raid_in_sample"] | CalibrationSplit = "raid_in_sample"
    canaries: int = Field(0, ge=0, le=10_000)
    reveal_at: datetime | None = None
    grid: list[str] = Field(default_factory=list, description="tags of RAID's grid shown at the reveal")
    gaps: list[Gap] = Field(default_factory=list, description="subgroup gaps of every entry (the protocol's "
                            "[[gaps]]: slice, group_a, group_b, metric fpr or catch_rate), shown at the reveal")
    tsa_url: str | None = None


@dataclass(frozen=True)
class BoardConfig:
    """A loaded ``board.toml``: the model plus the folder it lives in (paths resolve there)."""

    path: Path
    board: BoardModel

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def workspace_path(self) -> Path:
        return (self.folder / self.board.workspace).resolve()

    @property
    def in_sample(self) -> bool:
        """True under RAID's in-sample rule (thresholds from the test set's own human texts)."""
        return self.board.calibration == "raid_in_sample"

    @property
    def threshold_rule(self) -> str:
        """How thresholds are fitted, as every output states it."""
        if self.in_sample:
            return ("RAID's in-sample rule: thresholds fitted on the test set's own human texts (optimistic; "
                    "no calibration split)")
        cal = self.board.calibration
        assert not isinstance(cal, str)
        return (f"declared calibration split: 1 in {cal.every} documents (a hash split whose salt stays secret until "
                "the reveal) fits the thresholds; the numbers are on the rest")

    def database_url(self) -> Any:
        """The SQLAlchemy URL (``sqlalchemy.engine.URL``); the password, if any, from
        :data:`PASSWORD_ENV`. Default: ``sqlite:///<board folder>/board.sqlite``."""
        from sqlalchemy.engine import make_url

        raw = self.board.database_url or f"sqlite:///{self.folder / 'board.sqlite'}"
        url = make_url(raw)
        if url.drivername.startswith("sqlite") and url.database and not Path(url.database).is_absolute():
            url = url.set(database=str(self.folder / url.database))
        pw = os.environ.get(PASSWORD_ENV)
        if pw and not url.drivername.startswith("sqlite"):
            url = url.set(password=pw)
        return url


def load_config(path: str | Path) -> BoardConfig:
    """Read and validate ``board.toml``.

    Raises:
        InputError: missing or unreadable file, bad TOML, unknown or invalid field, an
            unknown headline metric, a headline that needs a decision rule under RAID's in-sample
            rule (which has none), a database URL holding a password, or an unsupported
            database driver; one line naming the file and the field.
    """
    p = Path(path)
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError("no such file", file=str(p)) from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"cannot read it ({e.__class__.__name__})", file=str(p)) from None
    except tomllib.TOMLDecodeError as e:
        raise InputError(f"not valid TOML ({e})", file=str(p)) from None
    if set(data) != {"board"}:
        extra = sorted(set(data) - {"board"})
        raise InputError(f"unknown table [{extra[0]}]" if extra else "missing table [board]", file=str(p),
                         field=extra[0] if extra else "board")
    try:
        m = BoardModel.model_validate(data["board"])
    except ValidationError as e:
        err = e.errors()[0]
        loc = ".".join(str(x) for x in err["loc"] if not str(x).startswith(("function-", "literal[")))
        raise InputError(str(err["msg"]), file=str(p), field=f"board.{loc}" if loc else "board") from None
    if m.headline_metric not in HEADLINES:
        raise InputError(f"unknown headline metric {m.headline_metric!r}; one of {', '.join(HEADLINES)}",
                         file=str(p), field="board.headline_metric")
    if m.headline_metric in RULE_HEADLINES and m.calibration == "raid_in_sample":
        raise InputError(f"headline {m.headline_metric!r} needs a decision rule, and under RAID's in-sample rule "
                         "there is none (submitted scores have no fixed scale): declare a calibration split "
                         f"(calibration = {{ every = 5, salt = \"...\" }}) or choose "
                         f"{', '.join(h for h in HEADLINES if h not in RULE_HEADLINES)}",
                         file=str(p), field="board.headline_metric")
    slices = ("subgroup", "arm", *(f"tag:{t}" for t in m.grid))
    for i, g in enumerate(m.gaps):
        if m.calibration == "raid_in_sample":
            raise InputError("a gap compares FPR or catch rate at the entries' decision rule, and under RAID's "
                             "in-sample rule there is none: declare a calibration split", file=str(p),
                             field=f"board.gaps[{i}]")
        if g.slice not in slices:
            raise InputError(f"slice {g.slice!r} is not one the board shows ({', '.join(slices)}; a tag slice "
                             "needs its tag in board.grid)", file=str(p), field=f"board.gaps[{i}].slice")
    if m.database_url is not None:
        _check_url(m.database_url, str(p))
    return BoardConfig(p.resolve(), m)


def _check_url(raw: str, file: str) -> None:
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        url = make_url(raw)
    except ArgumentError:
        raise InputError("not a database URL (sqlite:///PATH or postgresql+psycopg://USER@HOST/DB)", file=file,
                         field="board.database_url") from None
    if url.password is not None or re.search(r"://[^/@]*:[^/@]*@", raw):
        raise InputError(f"holds a password: give it in the environment variable {PASSWORD_ENV} instead",
                         file=file, field="board.database_url")
    if url.drivername not in ("sqlite", "sqlite+pysqlite", "postgresql+psycopg"):
        raise InputError(f"driver {url.drivername!r} is not supported (sqlite or postgresql+psycopg)", file=file,
                         field="board.database_url")
