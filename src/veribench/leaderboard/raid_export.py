"""``veribench export raid-submission``: one detector's scores of a veribench run as RAID's
leaderboard files (``predictions.json`` and ``metadata.json``, :mod:`veribench.leaderboard.raid_format`).

The score written is the run's ranking score: the detector's native value oriented so that
higher means more likely AI (:func:`veribench.evaluate.ranking.ranking_scores`), which is
RAID's direction. A text the detector did not score (a failure, a refusal) has no score: it is
left out of ``predictions.json`` (RAID then reports no aggregate over the missing cells). A
text outside the detector's declared languages is left out too, whatever its scoring status,
by the rule of evaluation (:data:`OUT_OF_SCOPE_RULE`, docs/detectors.md), unless
``include_out_of_scope`` (``--include-out-of-scope``): then every text with a score is written
(:data:`OUT_OF_SCOPE_INCLUDED_RULE`), as a board that scores the whole set needs. The number
left out, or written though out of scope, and their reasons are returned, printed and, in the
metadata veribench writes, stated in ``additional_metadata``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from veribench.errors import InputError
from veribench.evaluate.reasons import outside_language
from veribench.evaluate.run import run_detector_scores
from veribench.leaderboard.raid_format import RaidMetadata, write_submission
from veribench.store.workspace import Workspace

#: What the export does with texts outside the detector's declared languages (printed and in
#: the metadata's ``additional_metadata.out_of_scope_rule``).
OUT_OF_SCOPE_RULE = ("texts outside the detector's declared languages are left out whatever their scoring status, "
                     "as evaluation excludes them from every rate (docs/detectors.md)")
#: The same with ``--include-out-of-scope``.
OUT_OF_SCOPE_INCLUDED_RULE = ("texts outside the detector's declared languages are written when they have a score "
                              "(--include-out-of-scope: a board needs a score for every text), though evaluation "
                              "excludes them from every rate (docs/detectors.md)")


@dataclass(frozen=True)
class RaidExport:
    """What :func:`export_raid_submission` wrote: the two paths, the run, the detector, the
    number of predictions, the texts left out (doc_id -> reason: the exclusion reason of a
    text outside the declared languages, else the status of a text without a score) and the
    texts written though outside the declared languages (doc_id -> exclusion reason; empty
    unless ``include_out_of_scope``)."""

    predictions: Path
    metadata: Path
    run_id: str
    run_tag: str
    detector: str
    n: int
    left_out: dict[str, str]
    included_out_of_scope: dict[str, str]

    @property
    def out_of_scope(self) -> dict[str, str]:
        """The texts left out for their language (doc_id -> reason)."""
        return {k: v for k, v in self.left_out.items() if outside_language(v) is not None}

    @property
    def unscored(self) -> dict[str, str]:
        """The texts in scope left out because they have no score (doc_id -> status)."""
        return {k: v for k, v in self.left_out.items() if outside_language(v) is None}


def export_raid_submission(ws: Workspace, run: str, out_dir: Path, *, detector: str | None = None,
                           metadata: RaidMetadata | None = None, contact_info: str | None = None,
                           detector_name: str | None = None, date_released: str | None = None,
                           include_out_of_scope: bool = False) -> RaidExport:
    """Write ``out_dir/predictions.json`` and ``out_dir/metadata.json`` for one detector of a run.

    Args:
        ws: the workspace (read).
        run: the run's tag or id.
        out_dir: the folder to write (created when missing; the two files are replaced).
        detector: the detector of the run (None: the run holds one).
        metadata: RAID metadata to write as given; None: built from ``contact_info``,
            ``detector_name`` (default the detector's name), ``date_released`` (default the
            run's date) and an ``additional_metadata`` naming the run, the score and the texts
            left out.
        include_out_of_scope: write every text with a score, also those outside the
            detector's declared languages (counted in ``included_out_of_scope``).

    Raises:
        InputError: an unknown run or detector, a run without rows, no score at all, or
            metadata missing ``contact_info`` (as :func:`run_detector_scores`,
            :func:`veribench.leaderboard.raid_format.write_submission`).
    """
    run_id, tag, det, scores, left_out = run_detector_scores(ws, run, detector)
    included: dict[str, str] = {}
    if include_out_of_scope:
        scores_all = run_detector_scores(ws, run_id, det, include_out_of_scope=True)[3]
        included = {k: v for k, v in left_out.items() if k in scores_all}
        scores, left_out = scores_all, {k: v for k, v in left_out.items() if k not in scores_all}
    if not scores:
        raise InputError(f"detector {det!r} has no score in run {run_id} (statuses: "
                         f"{', '.join(f'{k} {v}' for k, v in sorted(Counter(left_out.values()).items()))})",
                         field="--detector")
    if metadata is None:
        if not contact_info:
            raise InputError("RAID's metadata.json needs contact_info", field="--contact")
        when = ws.query("SELECT strftime(created_at, '%Y-%m-%d') FROM runs WHERE run_id = ?", [run_id])[0][0]
        statuses = dict(sorted(Counter(left_out.values()).items()))
        metadata = RaidMetadata(
            date_released=date_released or str(when), detector_name=detector_name or det, contact_info=contact_info,
            additional_metadata={"veribench_run": run_id, "veribench_run_tag": tag, "detector": det,
                                 "score": "ranking score: the native value oriented so that higher means more "
                                          "likely AI",
                                 "texts_left_out": len(left_out), "left_out_statuses": statuses,
                                 "out_of_scope_rule": OUT_OF_SCOPE_INCLUDED_RULE if include_out_of_scope
                                 else OUT_OF_SCOPE_RULE,
                                 "texts_out_of_scope": len(included) + sum(1 for v in left_out.values()
                                                                           if outside_language(v) is not None),
                                 "texts_out_of_scope_written": len(included)})
    p, m = write_submission(scores, metadata, out_dir)
    return RaidExport(p, m, run_id, tag, det, len(scores), left_out, included)
