"""Static SVG charts for the report (matplotlib, Agg backend; text drawn as paths, so no fonts are needed).

Every function takes aggregates only (never one point per document), writes one SVG
file and returns its path. Output is deterministic: no date in the metadata and a
fixed hash salt, so rebuilding a report from the same data gives byte-identical files.

Conventions every chart follows (checked by ``tests/report``, which parses the SVG):

* **Series styles come from one table**, :data:`SERIES_STYLES`: a colour-blind-safe
  colour, a marker and a hatch per series index, all three distinct for the first
  :data:`N_DISTINCT` (20) series. A chart gives each series the style of its index in
  the ``order`` it is handed, so one detector keeps one look across a run's charts.
* **Each series' artists carry the SVG id** ``vb-s<k>-<j>`` (series ``k``, artist ``j``),
  the axes background ``vb-axes-<i>`` and the legend ``vb-legend``, so a reader of the
  SVG can tell the series apart without guessing.
* **Every legend sits outside the plot** (right of it, or below it for narrow charts),
  with a frame, so it never covers data.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: Colour-blind-safe colours, in order: Okabe & Ito (2008) "Color Universal Design" (8),
#: then Paul Tol's "muted" (9) and three of his "bright" scheme that differ from all of
#: those (Tol 2021, "Colour Schemes", SRON/EPS/TN/09-002). 20 distinct colours.
SERIES_COLORS = (
    "#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000",
    "#332288", "#88CCEE", "#44AA99", "#117733", "#999933", "#DDCC77", "#CC6677", "#882255", "#AA4499",
    "#4477AA", "#EE6677", "#BBBBBB",
)
#: Matplotlib markers, 20 distinct shapes (15 filled, then 5 line markers).
SERIES_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*", "<", ">", "h", "p", "8", "d", "H", "x", "+", "1", "2", "3")
#: Hatches for bar and area series, 20 distinct patterns.
SERIES_HATCHES = ("", "//", "\\\\", "xx", "..", "oo", "++", "--", "||", "**",
                  "/", "\\", "x", ".", "o", "+", "-", "|", "O", "*")
#: Dark outline drawn around filled markers and bars so that light colours stay visible.
EDGE = "#333333"


def _edge(marker: str) -> dict[str, Any]:
    """Marker edge settings: a thin dark outline for filled markers; line markers (x, +, tri)
    are drawn in the series colour itself."""
    from matplotlib.lines import Line2D

    return {"mec": EDGE, "mew": 0.5} if marker in Line2D.filled_markers else {"mew": 1.3}


@dataclass(frozen=True)
class SeriesStyle:
    """How series ``index`` is drawn: colour, marker and hatch."""

    index: int
    color: str
    marker: str
    hatch: str


#: The style table: series ``i`` of any chart is drawn with ``SERIES_STYLES[i % N_STYLES]``.
SERIES_STYLES = tuple(SeriesStyle(i, c, m, h) for i, (c, m, h) in enumerate(zip(SERIES_COLORS, SERIES_MARKERS, SERIES_HATCHES)))
N_DISTINCT = len(SERIES_STYLES)

#: Colours of the two headline labels in distribution charts (styles 0 and 5 of the table).
HUMAN_COLOR, AI_COLOR = SERIES_COLORS[0], SERIES_COLORS[5]
#: Style index per text label in distribution charts.
LABEL_STYLE = {"human": 0, "ai": 5, "ai-edited-human": 1, "mixed": 2}

#: Most points drawn per curve; longer curves are thinned (the curve is monotone, so
#: keeping evenly spaced vertices plus both ends preserves its shape to the pixel).
MAX_CURVE_POINTS = 1000


def style(i: int) -> SeriesStyle:
    """The style of series ``i`` (cycling after :data:`N_DISTINCT`)."""
    return SERIES_STYLES[i % N_DISTINCT]


def color(i: int) -> str:
    return style(i).color


def _plt():
    import matplotlib

    matplotlib.use("Agg", force=True)
    import matplotlib.pyplot as plt

    plt.rcParams.update(
        {
            "svg.fonttype": "path",
            "svg.hashsalt": "veribench",
            "font.size": 9,
            "axes.spines.top": False,
            "axes.spines.right": False,
            "axes.grid": True,
            "grid.alpha": 0.3,
            "figure.dpi": 100,
            "hatch.linewidth": 0.6,
        }
    )
    return plt


def thin(xs: Sequence[float], ys: Sequence[float], max_points: int = MAX_CURVE_POINTS) -> tuple[list, list]:
    """At most ``max_points`` vertices of a curve, evenly spaced by index, both ends kept."""
    n = min(len(xs), len(ys))
    if n <= max_points:
        return list(xs[:n]), list(ys[:n])
    step = (n - 1) / (max_points - 1)
    idx = sorted({round(i * step) for i in range(max_points)} | {0, n - 1})
    return [xs[i] for i in idx], [ys[i] for i in idx]


def _save(fig, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    import warnings
    for i, ax in enumerate(a for a in fig.axes if a.get_visible() and a.get_label() != "<colorbar>"):
        ax.patch.set_gid(f"vb-axes-{i}")
    with warnings.catch_warnings():  # a label in a script the bundled font lacks is drawn as boxes, not an error
        warnings.filterwarnings("ignore", message="Glyph .* missing from font")
        fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


class _Gids:
    """Hands out ``vb-s<k>-<j>`` ids: series ``k``, its ``j``-th artist."""

    def __init__(self) -> None:
        self.n: dict[int, int] = {}

    def __call__(self, k: int, artist: Any) -> Any:
        for a in artist if isinstance(artist, (list, tuple)) else [artist]:
            if hasattr(a, "set_gid"):
                j = self.n.get(k, 0)
                a.set_gid(f"vb-s{k}-{j}")
                self.n[k] = j + 1
        return artist


def _legend(owner, handles: Sequence[Any], labels: Sequence[str], where: str = "right", ncol: int | None = None,
            title: str | None = None):
    """A framed legend outside the plot: ``right`` of the axes (or figure), or ``below`` it."""
    if not handles:
        return None
    kw: dict[str, Any] = {"fontsize": 7, "frameon": True, "fancybox": False, "edgecolor": "#cccccc",
                          "framealpha": 1.0, "title": title, "title_fontsize": 7}
    is_fig = hasattr(owner, "add_subplot")
    if where == "below" and not is_fig:
        # just under everything the axes draws (tick labels, rotated or not, and the axis label)
        import warnings

        fig = owner.figure
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", message="Glyph .* missing from font")
            bb = owner.get_tightbbox(fig.canvas.get_renderer())
        inv = fig.transFigure.inverted()
        (x0, y0), (x1, _) = inv.transform((bb.x0, bb.y0)), inv.transform((bb.x1, bb.y1))
        kw.update(loc="upper center", ncol=ncol or min(2, len(handles)), bbox_to_anchor=((x0 + x1) / 2, y0 - 0.01),
                  bbox_transform=fig.transFigure, borderaxespad=0.0)
        leg = fig.legend(handles, labels, **kw)
        leg.set_gid("vb-legend")
        return leg
    if where == "below":
        kw.update(loc="upper center", ncol=ncol or min(2, len(handles)), bbox_to_anchor=(0.5, 0.0), borderaxespad=0.2)
    elif where == "above":
        kw.update(loc="lower center", ncol=ncol or min(4, len(handles)), bbox_to_anchor=(0.5, 1.0 if is_fig else 1.02))
    else:
        kw.update(loc="upper left", ncol=ncol or 1, bbox_to_anchor=(1.0, 1.0) if is_fig else (1.02, 1.0),
                  borderaxespad=0.0)
    leg = owner.legend(handles, labels, **kw)
    leg.set_gid("vb-legend")
    return leg


def _dot(ax, gid: _Gids, k: int, st: SeriesStyle, v: float, y: float, ci: Any, ms: float = 5.0) -> None:
    """Series ``k``'s dot at ``v`` (a proportion, drawn in percent) on row ``y``, with its
    interval ``ci`` ([lo, hi] proportions) as a whisker when defined."""
    if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(_finite(c) for c in ci):
        gid(k, ax.errorbar(v * 100, y, xerr=[[max(0.0, (v - ci[0]) * 100)], [max(0.0, (ci[1] - v) * 100)]], fmt="none",
                           ecolor=st.color, lw=1.2, capsize=2).lines[2])
    gid(k, ax.plot(v * 100, y, st.marker, color=st.color, ms=ms, **_edge(st.marker)))


def _row_axes(ax, labels: Sequence[Any], xlabel: str, title: str | None, percent: bool = True) -> None:
    """One labelled row per entry, top to bottom; a 0-100 axis when ``percent``."""
    ax.set_yticks(range(len(labels)))
    ax.set_yticklabels([str(x) for x in labels], fontsize=8)
    ax.set_ylim(len(labels) - 0.5, -0.5)
    if percent:
        ax.set_xlim(-2, 102)
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title, fontsize=9)


def _marker_handle(st: SeriesStyle, ms: float = 5.0, line: bool = False):
    from matplotlib.lines import Line2D

    return Line2D([], [], ls="-" if line else "none", marker=st.marker, color=st.color, ms=ms, **_edge(st.marker))


def _series_index(order: Sequence[str] | None, names: Sequence[str]) -> dict[str, int]:
    """Style index per series name: its position in ``order`` (names not in it follow)."""
    out: dict[str, int] = {}
    for n in list(order or []) + list(names):
        if n not in out:
            out[n] = len(out)
    return out


def roc_curves(curves: dict[str, dict[str, list[float]]], path: Path, auroc: dict[str, float | None] | None = None,
               order: Sequence[str] | None = None, title: str | None = None) -> Path:
    """ROC curves, one line per detector. ``curves[detector] = {"fpr": [...], "tpr": [...]}`` in [0, 1].

    ``order``: the run's detector order (style index per detector).
    """
    plt = _plt()
    from matplotlib.lines import Line2D

    fig, ax = plt.subplots(figsize=(4.6, 4.4))
    ax.plot([0, 1], [0, 1], ls="--", color="#999", lw=0.8)
    idx = _series_index(order, list(curves))
    gid = _Gids()
    handles, labels = [], []
    for det, c in curves.items():
        st = style(idx[det])
        a = (auroc or {}).get(det)
        lab = f"{det} (AUROC {a:.3f})" if _finite(a) else det
        ln = ax.plot(c["fpr"], c["tpr"], color=st.color, lw=1.5, marker=st.marker, ms=4.5, markevery=0.12,
                     **_edge(st.marker))
        gid(idx[det], ln)
        handles.append(Line2D([], [], color=st.color, lw=1.5, marker=st.marker, ms=4.5, **_edge(st.marker)))
        labels.append(lab)
    handles.append(Line2D([], [], ls="--", color="#999", lw=0.8))
    labels.append("chance")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.01)
    ax.set_xlabel("false-positive rate (human texts flagged)")
    ax.set_ylabel("catch rate (AI texts flagged)")
    ax.set_aspect("equal")
    if title:
        ax.set_title(title, fontsize=9)
    _legend(ax, handles, labels, "right")
    return _save(fig, path)


def score_histograms(hists: dict[str, dict[str, list[float]]], path: Path,
                     axis_labels: Mapping[str, str] | None = None) -> Path:
    """Score distributions per label, one panel per detector, on each detector's own scale.

    ``hists[detector] = {"edges": [k+1 bin edges], "human": [k counts], "ai": [k counts], ...}``;
    each label is drawn as its share of that label's documents, so the two compare.
    ``axis_labels[detector]`` names the x axis (the detector's scale; default "score").
    """
    plt = _plt()
    from matplotlib.patches import Patch

    dets = list(hists)
    ncols = min(3, max(1, len(dets)))
    nrows = max(1, math.ceil(len(dets) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, 2.5 * nrows + 0.4), squeeze=False)
    gid = _Gids()
    seen: dict[str, Any] = {}
    for k, det in enumerate(dets):
        ax = axes[k // ncols][k % ncols]
        h = hists[det]
        edges = h.get("edges") or []
        for lab, si in LABEL_STYLE.items():
            counts = h.get(lab) or []
            tot = sum(counts)
            if not counts or tot <= 0 or len(edges) != len(counts) + 1:
                continue
            st = style(si)
            shares = [c / tot for c in counts]
            gid(si, ax.stairs(shares, edges, color=st.color, lw=1.3, fill=False))
            gid(si, ax.stairs(shares, edges, facecolor=st.color, alpha=0.18, fill=True, hatch=st.hatch,
                              edgecolor=st.color))
            seen.setdefault(lab, Patch(facecolor=st.color, edgecolor=st.color, alpha=0.5, hatch=st.hatch))
        ax.set_title(det, fontsize=9)
        ax.set_xlabel((axis_labels or {}).get(det, "score"), fontsize=7.5)
        ax.set_ylabel("share of label", fontsize=8)
    for k in range(len(dets), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    fig.tight_layout(rect=(0, 0, 1, 1 - 0.45 / (2.5 * nrows + 0.4)))
    _legend(fig, list(seen.values()), [f"{lab} texts" for lab in seen], "above", ncol=len(seen))
    return _save(fig, path)


def interval_dots(
    rows: Sequence[dict[str, Any]],
    path: Path,
    *,
    group_key: str,
    series_key: str,
    value_key: str,
    ci_key: str,
    xlabel: str,
    title: str | None = None,
    order: Sequence[str] | None = None,
    legend: str = "right",
    width: float = 6.4,
    compact: bool = False,
) -> Path:
    """Dot-and-whisker chart: one row per group, one dot per series, whiskers = interval.

    ``rows`` hold ``group_key`` (y label), ``series_key`` (legend), ``value_key`` (a
    proportion in [0, 1]) and ``ci_key`` ([lo, hi]). Rows with a null value are skipped
    (the group's label stays). ``order`` fixes the style index of each series; within a
    group the series it holds are spread around the group's row. ``compact``: tighter rows.
    """
    plt = _plt()

    groups = list(dict.fromkeys(r[group_key] for r in rows))
    series = list(dict.fromkeys(r[series_key] for r in rows))
    idx = _series_index(order, series)
    # each group spreads only the series it holds, centred on its row
    members = {g: [s for s in series if any(r[group_key] == g and r[series_key] == s for r in rows)] for g in groups}
    per_group = max([len(m) for m in members.values()] + [1])
    step = 0.8 / per_group
    height = max(1.8, (0.11 if compact else 0.13) * sum(len(m) for m in members.values())
                 + (0.22 if compact else 0.3) * len(groups) + 1.0)
    fig, ax = plt.subplots(figsize=(width, min(height, 14)))
    gid = _Gids()
    for r in rows:
        s, g = r[series_key], r[group_key]
        if not _finite(r.get(value_key)):
            continue
        st = style(idx[s])
        m = members[g]
        y = groups.index(g) + (m.index(s) - (len(m) - 1) / 2) * step
        _dot(ax, gid, idx[s], st, r[value_key], y, r.get(ci_key))
    _row_axes(ax, groups, xlabel, title)
    handles = [_marker_handle(style(idx[s])) for s in series]
    _legend(ax, handles, [str(s) for s in series], legend)
    return _save(fig, path)


def difference_intervals(rows: Sequence[dict[str, Any]], path: Path, *, xlabel: str, title: str | None = None,
                         width: float = 6.4, legend: str = "right", percent: bool = True) -> Path:
    """Differences with their intervals against a zero line, marked by whether they survive the
    multiple-comparison correction.

    ``rows``: ``{"label": str, "estimate": float | None, "ci95": [lo, hi] | None,
    "survives": bool | None}`` (``percent``: values are proportions, drawn in points).
    Rows without an estimate are listed with no dot.
    """
    plt = _plt()
    k = 100.0 if percent else 1.0
    cats = {True: ("survives the correction", 0), False: ("does not survive the correction", 19),
            None: ("test undefined", 7)}
    fig, ax = plt.subplots(figsize=(width, max(1.6, 0.3 * len(rows) + 1.0)))
    ax.axvline(0, color="#555555", lw=0.8)
    gid = _Gids()
    used: dict[Any, None] = {}
    for y, r in enumerate(rows):
        est, ci = r.get("estimate"), r.get("ci95")
        if not _finite(est):
            continue
        key = r.get("survives")
        _, si = cats[key]
        st = style(si)
        used.setdefault(key, None)
        if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(_finite(c) for c in ci):
            gid(si, ax.plot([ci[0] * k, ci[1] * k], [y, y], color=st.color, lw=1.4))
        gid(si, ax.plot(est * k, y, st.marker, color=st.color, ms=5.5, **_edge(st.marker)))
    _row_axes(ax, [r["label"] for r in rows], xlabel, title, percent=False)
    handles = [_marker_handle(style(cats[c][1]), 5.5, line=True) for c in used]
    _legend(ax, handles, [cats[c][0] for c in used], legend)
    return _save(fig, path)


def robustness_chart(rows: Sequence[dict[str, Any]], path: Path, *, xlabel: str, order: Sequence[str] | None = None,
                     title: str | None = None) -> Path:
    """Rate per attack per detector with whiskers, beside the same detector on the unattacked sources.

    ``rows``: ``{"attack": str, "detector": str, "rate": float | None, "ci95": [lo, hi] | None,
    "source_rate": float | None}``. Filled marker = attacked texts (whiskers = interval),
    hollow marker joined by a thin line = the same detector on the attacks' sources.
    """
    plt = _plt()
    from matplotlib.lines import Line2D

    attacks = list(dict.fromkeys(r["attack"] for r in rows))
    dets = list(dict.fromkeys(r["detector"] for r in rows))
    idx = _series_index(order, dets)
    n = max(1, len(dets))
    fig, ax = plt.subplots(figsize=(6.4, max(1.8, 0.16 * len(attacks) * n + 0.4 * len(attacks) + 1.0)))
    gid = _Gids()
    for di, det in enumerate(dets):
        st = style(idx[det])
        off = (di - (n - 1) / 2) * (0.8 / n)
        for r in rows:
            if r["detector"] != det:
                continue
            y = attacks.index(r["attack"]) + off
            v, src, ci = r.get("rate"), r.get("source_rate"), r.get("ci95")
            if _finite(src):
                if _finite(v):
                    gid(idx[det], ax.plot([src * 100, v * 100], [y, y], color=st.color, lw=0.7, alpha=0.7))
                gid(idx[det], ax.plot(src * 100, y, st.marker, mfc="white", mec=st.color, mew=1.0, ms=5, color=st.color))
            if _finite(v):
                _dot(ax, gid, idx[det], st, v, y, ci, ms=5.5)
    _row_axes(ax, attacks, xlabel, title)
    handles = [_marker_handle(style(idx[d]), 5.5) for d in dets]
    labels = list(dets)
    handles.append(Line2D([], [], ls="none", marker="o", mfc="white", mec="#555555", ms=5))
    labels.append("hollow: its unattacked sources")
    _legend(ax, handles, labels, "right")
    return _save(fig, path)


#: Cells of a significance matrix: symbol -> (legend text, style index).
SIGNIFICANCE_CELLS = {">": ("row detector significantly better", 2), "<": ("row detector significantly worse", 5),
                      "=": ("not separated by the test", 19), None: ("not compared (undefined)", 7)}


def significance_grid(detectors: Sequence[str], cells: Sequence[Sequence[str | None]], path: Path, *,
                      title: str | None = None, legend: str = "right", width: float | None = None) -> Path:
    """A significance matrix as a picture: row detector against column detector, one marker per cell.

    ``cells[i][j]``: ``">"`` (i significantly better than j), ``"<"`` (worse), ``"="`` (not
    separated), ``None`` (undefined or the diagonal, which is left empty).
    """
    plt = _plt()
    from matplotlib.lines import Line2D

    n = len(detectors)
    w = width or max(3.2, 0.42 * n + 2.2)
    fig, ax = plt.subplots(figsize=(w, max(2.2, 0.42 * n + 1.3)))
    gid = _Gids()
    marks = {">": "^", "<": "v", "=": "o", None: "x"}
    used: dict[Any, None] = {}
    for key, (_, si) in SIGNIFICANCE_CELLS.items():
        xs = [j for i in range(n) for j in range(n) if i != j and cells[i][j] == key]
        ys = [i for i in range(n) for j in range(n) if i != j and cells[i][j] == key]
        if not xs:
            continue
        used.setdefault(key, None)
        st = style(si)
        gid(si, ax.plot(xs, ys, ls="none", marker=marks[key], color=st.color, ms=9 if key != "=" else 7,
                        **_edge(marks[key])))
    ax.set_xticks(range(n))
    ax.set_xticklabels(detectors, rotation=40, ha="right", fontsize=7.5)
    ax.set_yticks(range(n))
    ax.set_yticklabels(detectors, fontsize=7.5)
    ax.set_xlim(-0.6, n - 0.4)
    ax.set_ylim(n - 0.4, -0.6)
    ax.set_aspect("equal")
    ax.grid(True, alpha=0.25)
    if title:
        ax.set_title(title, fontsize=9)
    handles = [Line2D([], [], ls="none", marker=marks[k], color=style(SIGNIFICANCE_CELLS[k][1]).color, ms=7,
                      **_edge(marks[k])) for k in used]
    _legend(ax, handles, [SIGNIFICANCE_CELLS[k][0] for k in used], legend)
    return _save(fig, path)


def stacked_bars(rows: Sequence[str], parts: Mapping[str, Sequence[float | None]], path: Path, *, xlabel: str,
                 width: float = 7.0) -> Path:
    """Horizontal stacked bars: one bar per row, one segment (colour and hatch) per part.

    ``parts[name][i]`` is part ``name``'s length on row ``i`` (None or non-finite: no
    segment). Rows with no finite part are drawn empty (the label stays).
    """
    plt = _plt()
    from matplotlib.patches import Patch

    fig, ax = plt.subplots(figsize=(width, 0.34 * len(rows) + 1.2))
    gid = _Gids()
    left = [0.0] * len(rows)
    handles, labels = [], []
    for k, (name, vals) in enumerate(parts.items()):
        st = style(k)
        ys = [i for i, v in enumerate(vals) if _finite(v) and v > 0]
        if ys:
            bars = ax.barh(ys, [vals[i] for i in ys], left=[left[i] for i in ys], color=st.color, hatch=st.hatch,
                           edgecolor=EDGE, lw=0.5, height=0.7)
            gid(k, list(bars))
            for i in ys:
                left[i] += vals[i]
        handles.append(Patch(facecolor=st.color, hatch=st.hatch, edgecolor=EDGE, lw=0.5))
        labels.append(name)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(list(rows), fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, max([*left, 0.0]) * 1.05 or 1.0)
    ax.set_xlabel(xlabel)
    _legend(ax, handles, labels, "right")
    return _save(fig, path)


def stacked_composite(rows: Sequence[dict[str, Any]], weights: dict[str, float], path: Path) -> Path:
    """Horizontal stacked bars: weighted sub-score contributions per humanizer, penalties in grey.

    ``rows`` hold ``slug``, ``scores`` (sub-scores in [0, 1] and ``composite``) and
    ``penalty_total`` (<= 0). ``weights`` maps sub-score -> points (they sum to 100).
    """
    plt = _plt()
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    fig, ax = plt.subplots(figsize=(7.0, 0.32 * len(rows) + 1.2))
    names = [r["slug"] for r in rows]
    gid = _Gids()
    pen_k = len(weights)
    pen_style = style(N_DISTINCT - 1)
    for i, r in enumerate(rows):
        left = 0.0
        for k, (sub, w) in enumerate(weights.items()):
            v = r["scores"].get(sub)
            if not _finite(v):
                continue
            st = style(k)
            gid(k, list(ax.barh(i, w * v, left=left, color=st.color, hatch=st.hatch, edgecolor=EDGE, lw=0.4, height=0.7)))
            left += w * v
        pen = r.get("penalty_total") or 0
        if pen:
            gid(pen_k, list(ax.barh(i, pen, left=left, color=pen_style.color, hatch=pen_style.hatch, edgecolor=EDGE,
                                    lw=0.4, height=0.7)))
        comp = r["scores"].get("composite")
        if _finite(comp):
            ax.plot(comp, i, "|", color="black", ms=12, mew=2)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(names, fontsize=8)
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xlim(0, 100)
    ax.set_xlabel("points")
    handles = [Patch(facecolor=style(k).color, hatch=style(k).hatch, edgecolor=EDGE, lw=0.4) for k in range(len(weights))]
    labels = [s.replace("_", " ") for s in weights]
    handles += [Patch(facecolor=pen_style.color, hatch=pen_style.hatch, edgecolor=EDGE, lw=0.4),
                Line2D([], [], ls="none", marker="|", color="black", ms=10, mew=2)]
    labels += ["penalties (drawn back)", "published composite"]
    _legend(ax, handles, labels, "right")
    return _save(fig, path)


def heatmap(matrix: Sequence[Sequence[float | None]], rows: Sequence[str], cols: Sequence[str], path: Path, *, label: str) -> Path:
    """Annotated heatmap of values in [0, 1] (None = blank cell); the colour bar sits outside the plot."""
    plt = _plt()
    import numpy as np

    m = np.array([[np.nan if not _finite(v) else float(v) for v in r] for r in matrix], dtype=float)
    fig, ax = plt.subplots(figsize=(0.9 * len(cols) + 2.2, 0.32 * len(rows) + 1.4))
    # pcolormesh, not imshow: quads stay vectors in the SVG (and in the PDF), where imshow embeds a PNG
    im = ax.pcolormesh(np.arange(len(cols) + 1) - 0.5, np.arange(len(rows) + 1) - 0.5, np.ma.masked_invalid(m),
                       vmin=0, vmax=1, cmap="cividis", shading="flat")
    ax.set_ylim(len(rows) - 0.5, -0.5)
    ax.set_xticks(range(len(cols)))
    ax.set_xticklabels(cols, rotation=30, ha="right", fontsize=8)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(rows, fontsize=8)
    ax.grid(False)
    for i in range(m.shape[0]):
        for j in range(m.shape[1]):
            if np.isfinite(m[i, j]):
                ax.text(j, i, f"{m[i, j]:.2f}", ha="center", va="center", fontsize=6.5,
                        color="white" if m[i, j] < 0.55 else "black")
    cb = fig.colorbar(im, ax=ax, label=label, shrink=0.8)
    cb.solids.set_rasterized(False)  # vectors, like the rest of the chart
    cb.ax.set_label("<colorbar>")
    return _save(fig, path)


def trend_lines(series: dict[str, list[tuple[str, float | None]]], path: Path, *, ylabel: str, ylim: tuple[float, float] | None = None) -> Path:
    """One line per key across ordered x labels (cycles). ``series[name] = [(x_label, y), ...]``."""
    plt = _plt()
    from matplotlib.lines import Line2D

    xs = list(dict.fromkeys(x for pts in series.values() for x, _ in pts))
    fig, ax = plt.subplots(figsize=(5.6, 4.2))
    gid = _Gids()
    handles, labels = [], []
    for i, (name, pts) in enumerate(series.items()):
        px = [xs.index(x) for x, y in pts if _finite(y)]
        py = [y for _, y in pts if _finite(y)]
        st = style(i)
        if py:
            gid(i, ax.plot(px, py, "-", marker=st.marker, color=st.color, ms=5, lw=1.4, **_edge(st.marker)))
            handles.append(Line2D([], [], marker=st.marker, color=st.color, ms=5, lw=1.4, **_edge(st.marker)))
            labels.append(name)
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels(xs)
    if len(xs) > 1:
        ax.set_xlim(-0.3, len(xs) - 0.7)
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_ylabel(ylabel)
    _legend(ax, handles, labels, "right")
    return _save(fig, path)


def bar_panels(panels: dict[str, dict[str, dict[str, float | None]]], path: Path, *, ylabel: str,
               ylim: tuple[float, float] = (0, 1)) -> Path:
    """Side-by-side grouped bar panels: ``panels[title][series][category] = value``; one colour and hatch per series."""
    plt = _plt()
    from matplotlib.patches import Patch

    widths = [max(2, len({c for g in groups.values() for c in g})) for groups in panels.values()] or [1]
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(0.55 * sum(widths) + 2.0, 3.3), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    gid = _Gids()
    names: dict[str, int] = {}
    for ax, (title, groups) in zip(axes[0], panels.items()):
        cats = list(dict.fromkeys(c for g in groups.values() for c in g))
        n = max(1, len(groups))
        w = 0.8 / n
        for s in groups:
            names.setdefault(s, len(names))
        for si, (s, vals) in enumerate(groups.items()):
            st = style(names[s])
            xs = [ci + (si - (n - 1) / 2) * w for ci, c in enumerate(cats) if _finite(vals.get(c))]
            ys = [vals[c] for c in cats if _finite(vals.get(c))]
            gid(names[s], list(ax.bar(xs, ys, width=w, color=st.color, hatch=st.hatch, edgecolor=EDGE, lw=0.4)))
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels(cats, rotation=30, ha="right", fontsize=8)
        ax.set_ylim(*ylim)
        ax.set_title(title, fontsize=9)
    axes[0][0].set_ylabel(ylabel)
    handles = [Patch(facecolor=style(k).color, hatch=style(k).hatch, edgecolor=EDGE, lw=0.4) for k in names.values()]
    _legend(axes[0][-1], handles, list(names), "right")
    return _save(fig, path)
