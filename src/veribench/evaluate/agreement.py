"""The agreement table (:func:`_agreement`): per slice and label, the texts flagged by at
least one and by every detector of a Table 1 group's agreement panel (docs/labels.md §8).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from veribench.evaluate.arrays import LABEL_ORDER


def _agreement(kinds: list[tuple[str, list[str], np.ndarray]], member: np.ndarray, lab: np.ndarray,
               counted: np.ndarray, flagged: np.ndarray, panel: np.ndarray, names: list[str],
               group: str | None = None) -> list[dict[str, Any]]:
    """Texts flagged by at least one and by every detector, per slice and label.

    ``panel``: the detectors that may take part (the group's agreement panel, each with a
    decision rule; docs/labels.md §8). A row's detectors are those of the panel that counted
    at least one text of the row; the row counts only the texts every one of them counted
    (``n``), and says how many texts some but not all of them counted (``n_partial``, left out)."""
    out: list[dict[str, Any]] = []
    use = np.flatnonzero(panel)
    if use.size == 0:
        return out
    C, F = counted[use], flagged[use] & counted[use]
    nl = len(LABEL_ORDER)
    for kind, values, codes in kinds:
        g = len(values)
        m = member & (codes >= 0) & (lab < nl)
        if not m.any():
            continue
        key = np.where(m, codes * nl + lab, -1)
        km = key[m]
        # participation[j, row]: detector j counted at least one text of the row
        part = np.zeros((use.size, g * nl), dtype=bool)
        for jj in range(use.size):
            part[jj] = np.bincount(km[C[jj][m]], minlength=g * nl) > 0
        P = part[:, km]  # (detectors, texts): detector takes part in the text's row
        Cm, Fm = C[:, m], F[:, m]
        n_part = P.sum(axis=0)
        all_counted = (n_part > 0) & ~(P & ~Cm).any(axis=0)
        some = (P & Cm).any(axis=0)
        by_any = all_counted & (P & Fm).any(axis=0)
        by_all = all_counted & ~(P & ~Fm).any(axis=0)
        n_r = np.bincount(km[all_counted], minlength=g * nl)
        partial_r = np.bincount(km[some & ~all_counted], minlength=g * nl)
        any_r = np.bincount(km[by_any], minlength=g * nl)
        all_r = np.bincount(km[by_all], minlength=g * nl)
        for r in np.flatnonzero(part.any(axis=0)):
            i, li = divmod(int(r), nl)
            dets_r = [names[use[jj]] for jj in range(use.size) if part[jj, r]]
            out.append({"subgroup": values[i], "slice_type": kind, "label": LABEL_ORDER[li],
                        "n": int(n_r[r]), "n_partial": int(partial_r[r]), "n_detectors": len(dets_r),
                        "detectors": dets_r, "flagged_by_any": int(any_r[r]), "flagged_by_all": int(all_r[r]),
                        "group": group})
    return out
