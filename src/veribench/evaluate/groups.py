"""Tables by corpus: which detectors share a Table 1, and which detectors an agreement row
counts. Pure: arrays in, groups out. The rules are stated in ``docs/labels.md`` §7-8.

**Table 1 groups.** Detectors are compared in one Table 1 only when they were scored on the
same texts. For each corpus of the main-table texts (test split, not derived: headline
texts, and side-label texts of any arm), its detectors are those with at least one score
row on its headline texts (any status; a corpus without headline texts: on its main-table
texts); a detector with no score row on any headline text belongs to the corpora its scope
covers. So a table holding headline texts is decided on them alone: relabelling side texts
never changes its corpora or detectors. A table without any (a side-labels-only corpus, or
the ``all`` table of a run without main-table texts) has no headline rate and is decided on
side texts.
Corpora with the same detectors are **combined** into one group only when every one of
those detectors scored (status ``ok``) exactly the same headline texts across them;
otherwise each corpus is a group of its own. A detector scored on several groups gets one Table 1 row per
group, computed over that group's texts only. A run over one corpus, or one where every
detector scored the same texts, has a single group, and one row per detector.

**Agreement panels.** An agreement row ("flagged by at least one / by every detector")
counts the detectors the protocol names for the row's texts: within a group, the detectors
whose protocol ``corpora`` list one of the group's corpora; when the protocol names no
detector for them (no detector lists those corpora), every detector of the group. Only
detectors with a decision rule take part, and a row counts only the texts every detector of
its panel that judged any text of the row judged (``n``; the rest ``n_partial``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

NO_CORPUS = "(no corpus)"


@dataclass
class Group:
    """One Table 1: ``corpora``, the detector indices, the member mask of its corpora
    (every document of those corpora), and the facts its JSON entry reports."""

    id: str
    title: str
    corpora: list[str]
    detectors: list[int]
    mask: np.ndarray
    documents: int
    same_texts: bool
    note: str
    panel: list[int] = field(default_factory=list)
    panel_rule: str = ""

    def to_dict(self, names: Sequence[str]) -> dict[str, Any]:
        return {"id": self.id, "title": self.title, "corpora": list(self.corpora),
                "detectors": [names[j] for j in self.detectors], "documents": self.documents,
                "same_texts": self.same_texts, "note": self.note,
                "agreement_detectors": [names[j] for j in self.panel], "agreement_rule": self.panel_rule}


def corpus_labels(corpus: np.ndarray) -> np.ndarray:
    """The corpus name of every document (``(no corpus)`` where it has none)."""
    return np.array([NO_CORPUS if c is None or str(c) == "" else str(c) for c in corpus], dtype=object)


def _plural(k: int, word: str) -> str:
    return f"{k} {word}" + ("" if k == 1 else "s")


def table1_groups(corpus: np.ndarray, member: np.ndarray, headline: np.ndarray, scope: Sequence[np.ndarray],
                  present: Sequence[np.ndarray], scored: Sequence[np.ndarray], named: Sequence[Sequence[str]],
                  has_rule: Sequence[bool]) -> list[Group]:
    """The Table 1 groups of a run (module docstring), in the order of their corpus names.

    Args:
        corpus: corpus label per document (:func:`corpus_labels`).
        member: bool, the document belongs to the main tables of the run (test split,
            not derived, and a headline text or a side-label text of any arm; as
            :func:`veribench.protocol.roles.classify`'s ``table``).
        headline: bool, ``member`` and a headline text (``human`` or ``ai``): the texts that
            decide who shares a table. A corpus with main-table texts but no headline text
            (side labels only) is a group of its own, decided on its main-table texts.
        scope, present, scored: per detector, bool arrays: in its scope; has a score row;
            scored with status ok (each within its scope).
        named: per detector, the corpora its protocol entry lists (empty: none named).
        has_rule: per detector, its decision rule is defined.

    Returns:
        Groups partitioning the corpora of the member documents (one group holding every
        detector when there is no member document).
    """
    k = len(scope)
    corpora = sorted({str(c) for c in corpus[member]})
    n_docs = len(corpus)
    if not corpora:
        g = Group("all", "Table 1: all texts", [], list(range(k)), np.ones(n_docs, bool), 0, True,
                  "no text of the main tables was selected")
        _panel(g, named, has_rule)
        return [g]
    head_corpora = {str(c) for c in corpus[headline]}
    # the texts that decide each corpus's detectors: its headline texts, else its main-table texts
    in_c = {c: (headline if c in head_corpora else member) & (corpus == c) for c in corpora}
    dets: dict[str, list[int]] = {c: [j for j in range(k) if (in_c[c] & present[j]).any()] for c in corpora}
    # A detector with no score row on any headline text belongs to the headline corpora its
    # scope covers (all of them when it covers none); a side-only corpus without any score
    # row to the detectors whose scope covers it (all when none does).
    heads = [c for c in corpora if c in head_corpora]
    for j in range(k):
        if heads and not any(j in dets[c] for c in heads):
            for c in [c for c in heads if (in_c[c] & scope[j]).any()] or heads:
                dets[c].append(j)
    for c in corpora:
        if c not in head_corpora and not dets[c]:
            dets[c] = [j for j in range(k) if (in_c[c] & scope[j]).any()] or list(range(k))
        dets[c].sort()
    classes: dict[tuple[int, ...], list[str]] = {}
    for c in corpora:
        classes.setdefault((c in head_corpora, *dets[c]), []).append(c)
    parts: list[list[str]] = []
    for key, cs in classes.items():
        if key[0] and len(cs) > 1:
            union = np.zeros(n_docs, bool)
            for c in cs:
                union |= in_c[c]
            if len({np.flatnonzero(union & scored[j]).tobytes() for j in key[1:]}) == 1:
                parts.append(cs)
                continue
        parts.extend([c] for c in cs)
    parts.sort()
    groups = []
    for cs in parts:
        mask = np.isin(corpus, cs)
        decide = np.zeros(n_docs, bool)
        for c in cs:
            decide |= in_c[c]
        js = dets[cs[0]]
        counts = [int((decide & scored[j]).sum()) for j in js]
        common = decide.copy()
        for j in js:
            common &= scored[j]
        same = len({np.flatnonzero(decide & scored[j]).tobytes() for j in js}) <= 1
        n_dec = int(decide.sum())
        what = "headline texts" if cs[0] in head_corpora else "texts (side labels only)"
        name = " + ".join(cs)
        if len(cs) > 1:
            title = f"Table 1: corpora {name} (combined)"
            note = f"Combined over {len(cs)} corpora: every detector scored the same {int(common.sum())} {what}."
        else:
            title = f"Table 1: corpus {name}"
            if same:
                note = f"Every detector scored the same {int(common.sum())} of the corpus's {n_dec} {what}."
            else:
                note = (f"The detectors scored different texts of this corpus (between {min(counts)} and "
                        f"{max(counts)} of its {n_dec} {what}; {int(common.sum())} scored by all): read each row "
                        "with its n and Excluded columns.")
        if len(parts) > 1:
            k = len(parts) - 1
            note += f" {_plural(k, 'other table')} {'holds' if k == 1 else 'hold'} the detectors scored on other texts."
        g = Group(f"corpus:{'+'.join(cs)}", title, list(cs), list(js), mask, int((member & mask).sum()), same, note)
        _panel(g, named, has_rule)
        groups.append(g)
    return groups


def _panel(g: Group, named: Sequence[Sequence[str]], has_rule: Sequence[bool]) -> None:
    """Set the group's agreement panel (module docstring)."""
    cs = set(g.corpora)
    by_name = [j for j in g.detectors if cs & set(named[j])]
    base = by_name or list(g.detectors)
    g.panel = [j for j in base if has_rule[j]]
    if by_name:
        g.panel_rule = ("the detectors the protocol names for " + ("this corpus" if len(cs) == 1 else "these corpora")
                        + " (their `corpora` list it), with a decision rule")
    else:
        g.panel_rule = "every detector of this table with a decision rule (the protocol names none for its corpora)"
