"""The board's minimum cell size applied to the per-slice keys of the bundle of all entries
(issue 26: "a minimum cell size for any slice shown").

At the reveal, ``results.json`` copies from the bundle of all entries (``bundles/all/
results.json``, an ordinary veribench evaluation result) the keys :data:`SLICE_KEYS`. Every
comparison, significance matrix, tier list and subgroup gap belongs to one or more slices
(``all`` or ``kind=value``, the names of :func:`veribench.evaluate.comparisons.slice_masks`);
:func:`suppress_slices` nulls every number of a row whose slice is under the board's minimum
cell size, or whose size the results do not give, as the per-entry grid does for its cells.

Slice sizes come from the same results: Table 1's rows for ``all`` and Table 2's rows for
``kind=value`` (``slice_type`` and ``slice``), each row giving one detector's ``human_n`` and
``ai_n`` (headline texts of each label in the slice). A slice's size is the smallest of those
counts over every detector's row: a slice is shown only when every label has at least
``min_cell_size`` texts for every entry.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeGuard

#: The keys of the bundle of all entries that ``results.json`` publishes, in its order.
SLICE_KEYS = ("tiers", "comparisons", "significance", "gaps", "corrections")

#: The keys of :data:`SLICE_KEYS` whose values are lists of per-slice rows (``corrections``
#: holds only family sizes and the correction's name: it is copied as it is).
ROW_KEYS = ("tiers", "comparisons", "significance", "gaps")

#: A suppressed row's fields that say which row it is (kept): slice, metric, the detectors
#: compared (``detectors`` in input order, not a ranking), a gap's groups, the metric's
#: direction and the tier rule's text.
IDENTITY_FIELDS = frozenset({"slice", "metric", "a", "b", "detector", "detectors", "group_a", "group_b",
                             "label_a", "label_b", "better", "rule"})

#: Counts of texts (kept in a suppressed row, also inside a nested block such as a
#: comparison's ``detail``): they say why the row is suppressed.
COUNT_FIELDS = frozenset({"n", "n_human", "n_ai", "human_n", "ai_n", "n_a", "n_b"})

#: The label counts of a Table 1 or Table 2 row (headline texts).
LABEL_COUNTS = ("human_n", "ai_n")


def small_reason(min_cell_size: int, where: str = "slice") -> str:
    """The ``suppressed_reason`` of a row of a slice (or grid ``cell``) with too few texts of a label."""
    return f"fewer than {min_cell_size} texts of a label in this {where} (the board's minimum cell size)"


#: The label counts of a row of RAID's grid (``veribench.evaluate.grid``) and of Tables 1 and 2.
CELL_COUNTS = ("n_human", "n_ai", *LABEL_COUNTS)


def suppress_cells(rows: Sequence[Mapping[str, Any]], min_cell_size: int) -> list[dict[str, Any]]:
    """Grid rows with every number of a cell computed on fewer than ``min_cell_size`` human or
    AI texts (:data:`CELL_COUNTS`) replaced by null, as is every ``*_reason`` of a number no
    longer shown (a reason such as "perfect separation" tells about the cell), and the reason in
    ``suppressed_reason`` (:func:`small_reason`; the counts and tag values stay). Rows in order,
    copies; the input is not changed."""
    out = []
    for r in rows:
        r = dict(r)
        sizes = [v for key, v in r.items() if key in CELL_COUNTS and _is_count(v)]
        if sizes and min(sizes) < min_cell_size:
            r = {key: None if isinstance(v, float | dict | list) or key.endswith("_reason") else v
                 for key, v in r.items()}
            r["suppressed_reason"] = small_reason(min_cell_size, "cell")
        out.append(r)
    return out


def unknown_reason(name: str) -> str:
    """The ``suppressed_reason`` of a row of a slice whose size the results do not give."""
    return (f"the size of slice {name!r} is unknown (no Table 1 or Table 2 row gives its human and AI "
            "counts): never shown")


def _is_count(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def slice_sizes(results: Mapping[str, Any]) -> dict[str, int | None]:
    """Each slice's size: the smallest count of a label (``human_n``, ``ai_n``) over every
    detector's row of the slice, ``None`` when a row does not give both as counts.

    Args:
        results: a veribench evaluation result as JSON values: ``table1`` rows give slice
            ``all``, ``table2`` rows slice ``f"{slice_type}={slice}"``.

    Returns:
        slice name -> smallest label count (texts, >= 0) or ``None``; a slice without a row
        is absent.
    """
    out: dict[str, int | None] = {}
    rows = [("all", r) for r in results.get("table1") or []]
    rows += [(f"{r.get('slice_type')}={r.get('slice')}", r) for r in results.get("table2") or []
             if isinstance(r, Mapping)]
    for name, row in rows:
        counts = [row.get(k) for k in LABEL_COUNTS] if isinstance(row, Mapping) else [None]
        ints = [c for c in counts if _is_count(c)]
        here = min(ints) if len(ints) == len(counts) else None
        if name not in out:
            out[name] = here
        else:
            before = out[name]
            out[name] = None if before is None or here is None else min(before, here)
    return out


def _row_slices(key: str, row: Mapping[str, Any]) -> list[str]:
    """The slices a row of ``key`` belongs to: its ``slice``, or for a gap (``slice`` is the
    kind) the slices of its two groups."""
    if key == "gaps":
        return [f"{row.get('slice')}={row.get(g)}" for g in ("group_a", "group_b")]
    return [str(row.get("slice"))]


def _reason(names: Iterable[str], sizes: Mapping[str, int | None], min_cell_size: int) -> str | None:
    """Why a row of slices ``names`` is not shown, or None when it is."""
    small = False
    for name in names:
        size = sizes.get(name)
        if size is None:
            return unknown_reason(name)
        small = small or size < min_cell_size
    return small_reason(min_cell_size) if small else None


def _blank_value(v: Any) -> Any:
    """A suppressed row's value of a field that is neither identity nor count: ``None``, or a
    block of counts (e.g. a comparison's ``detail``) with its counts kept and the rest null."""
    if isinstance(v, Mapping) and any(k in COUNT_FIELDS for k in v):
        return {k: x if k in COUNT_FIELDS and _is_count(x) else None for k, x in v.items()}
    return None


def _blank(row: Mapping[str, Any], reason: str) -> dict[str, Any]:
    out = {k: copy.deepcopy(v) if k in IDENTITY_FIELDS or (k in COUNT_FIELDS and _is_count(v)) else _blank_value(v)
           for k, v in row.items() if k != "suppressed_reason"}
    out["suppressed_reason"] = reason
    return out


def suppress_slices(all_results: Mapping[str, Any], min_cell_size: int) -> dict[str, Any]:
    """The keys :data:`SLICE_KEYS` of the bundle of all entries, with every row of a slice
    under the board's minimum cell size, or of unknown size, suppressed.

    A slice is under the minimum when some label (human or AI headline texts) has fewer than
    ``min_cell_size`` texts in it for some detector (:func:`slice_sizes`: Table 1 for
    ``all``, Table 2 for ``kind=value``); a slice with no such row (or, on a board of several
    Table 1 groups, a name prefixed with a group id) has unknown size and is never shown. A
    gap row belongs to the slices of both its groups (``f"{slice}={group_a}"`` and
    ``f"{slice}={group_b}"``).

    A suppressed row keeps its place and its fields: :data:`IDENTITY_FIELDS` and the counts
    :data:`COUNT_FIELDS` (also inside a nested block such as a comparison's ``detail``) as
    they are; every other value null (estimates, intervals, p-values, each detector's value,
    the significance ``cells`` and ``undefined`` reasons, the ``tiers`` and ``not_ranked``
    of a tier list, so no detector order of the slice leaks, reasons, test names, alpha);
    and ``suppressed_reason`` last (:func:`small_reason` or :func:`unknown_reason`). A row of
    a shown slice is a deep copy of the input row. ``corrections`` is copied as it is (family
    sizes, the correction's name, alpha: no per-slice number). A key absent from the input
    is ``None``; a value that is not a list of rows is copied as it is.

    Args:
        all_results: the bundle of all entries' ``results.json`` as JSON values.
        min_cell_size: the board's minimum cell size (texts of a label), an integer >= 1.

    Returns:
        ``{key: value}`` for each key of :data:`SLICE_KEYS`, in that order; the same input
        gives the same output, key order included (``json.dumps`` bytes equal). The input is
        not changed.

    Raises:
        ValueError: ``min_cell_size`` not an integer >= 1, or a row of a key of
            :data:`ROW_KEYS` that is not an object (the message names the key and the row).
    """
    if not _is_count(min_cell_size) or min_cell_size < 1:
        raise ValueError(f"min_cell_size: must be an integer >= 1, got {min_cell_size!r}")
    sizes = slice_sizes(all_results)
    out: dict[str, Any] = {}
    for key in SLICE_KEYS:
        value = all_results.get(key)
        if key not in ROW_KEYS or not isinstance(value, list):
            out[key] = copy.deepcopy(value)
            continue
        rows = []
        for i, row in enumerate(value):
            if not isinstance(row, Mapping):
                raise ValueError(f"{key}[{i}]: a row must be an object, got {type(row).__name__}")
            why = _reason(_row_slices(key, row), sizes, min_cell_size)
            rows.append(copy.deepcopy(dict(row)) if why is None else _blank(row, why))
        out[key] = rows
    return out
