"""Static SVG charts for the report (matplotlib, Agg backend; text drawn as paths, so no fonts are needed).

Every function takes aggregates only (never one point per document), writes one SVG
file and returns its path. Output is deterministic: no date in the metadata and a
fixed hash salt, so rebuilding a report from the same data gives byte-identical files.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Sequence

#: Okabe & Ito (2008) colour-blind-safe palette, "Color Universal Design".
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000"]
HUMAN_COLOR, AI_COLOR = "#0072B2", "#D55E00"

#: Most points drawn per curve; longer curves are thinned (the curve is monotone, so
#: keeping evenly spaced vertices plus both ends preserves its shape to the pixel).
MAX_CURVE_POINTS = 1000


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
        }
    )
    return plt


def color(i: int) -> str:
    return PALETTE[i % len(PALETTE)]


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
    fig.savefig(path, format="svg", bbox_inches="tight", metadata={"Date": None})
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def roc_curves(curves: dict[str, dict[str, list[float]]], path: Path, auroc: dict[str, float | None] | None = None) -> Path:
    """ROC curves, one line per detector. ``curves[detector] = {"fpr": [...], "tpr": [...]}`` in [0, 1]."""
    plt = _plt()
    fig, ax = plt.subplots(figsize=(5.2, 4.6))
    ax.plot([0, 1], [0, 1], ls="--", color="#999", lw=0.8, label="chance")
    for i, (det, c) in enumerate(curves.items()):
        a = (auroc or {}).get(det)
        lab = f"{det} (AUROC {a:.3f})" if _finite(a) else det
        ax.plot(c["fpr"], c["tpr"], color=color(i), lw=1.6, label=lab, drawstyle="default")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1.01)
    ax.set_xlabel("false-positive rate (human texts flagged)")
    ax.set_ylabel("catch rate (AI texts flagged)")
    ax.set_aspect("equal")
    ax.legend(loc="lower right", fontsize=7, frameon=False)
    return _save(fig, path)


def score_histograms(hists: dict[str, dict[str, list[float]]], path: Path) -> Path:
    """Score distributions per label, one panel per detector.

    ``hists[detector] = {"edges": [k+1 bin edges], "human": [k counts], "ai": [k counts]}``;
    each label is drawn as its share of that label's documents, so the two compare.
    """
    plt = _plt()
    dets = list(hists)
    ncols = min(3, max(1, len(dets)))
    nrows = max(1, math.ceil(len(dets) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(3.3 * ncols, 2.4 * nrows), squeeze=False)
    for k, det in enumerate(dets):
        ax = axes[k // ncols][k % ncols]
        h = hists[det]
        edges = h.get("edges") or []
        for lab, col in (("human", HUMAN_COLOR), ("ai", AI_COLOR)):
            counts = h.get(lab) or []
            tot = sum(counts)
            if not counts or tot <= 0 or len(edges) != len(counts) + 1:
                continue
            shares = [c / tot for c in counts]
            ax.stairs(shares, edges, color=col, lw=1.4, fill=False, label=f"{lab} (n={tot:g})")
            ax.stairs(shares, edges, color=col, alpha=0.15, fill=True)
        ax.set_title(det, fontsize=9)
        ax.set_xlabel("AI probability", fontsize=8)
        ax.set_ylabel("share of label", fontsize=8)
        ax.legend(fontsize=7, frameon=False)
    for k in range(len(dets), nrows * ncols):
        axes[k // ncols][k % ncols].set_visible(False)
    fig.tight_layout()
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
) -> Path:
    """Dot-and-whisker chart: one row per group, one coloured dot per series, whiskers = interval.

    ``rows`` hold ``group_key`` (y label), ``series_key`` (legend), ``value_key`` (a
    proportion in [0, 1]) and ``ci_key`` ([lo, hi]). Rows with a null value are skipped.
    """
    plt = _plt()
    groups = list(dict.fromkeys(r[group_key] for r in rows))
    series = list(dict.fromkeys(r[series_key] for r in rows))
    fig, ax = plt.subplots(figsize=(6.4, max(1.6, 0.42 * len(groups) * max(1, min(len(series), 4)) / 2 + 1.0)))
    width = 0.7
    for si, s in enumerate(series):
        off = (si - (len(series) - 1) / 2) * (width / max(1, len(series)))
        for r in rows:
            if r[series_key] != s or not _finite(r.get(value_key)):
                continue
            y = groups.index(r[group_key]) + off
            v = r[value_key] * 100
            ci = r.get(ci_key)
            if isinstance(ci, (list, tuple)) and len(ci) == 2 and all(_finite(c) for c in ci):
                ax.errorbar(v, y, xerr=[[v - ci[0] * 100], [ci[1] * 100 - v]], fmt="none", ecolor=color(si), lw=1.2, capsize=2)
            ax.plot(v, y, "o", color=color(si), ms=4.5)
        ax.plot([], [], "o", color=color(si), label=str(s))
    ax.set_yticks(range(len(groups)))
    ax.set_yticklabels(groups, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(-2, 102)
    ax.set_xlabel(xlabel)
    if title:
        ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _save(fig, path)


def stacked_composite(rows: Sequence[dict[str, Any]], weights: dict[str, float], path: Path) -> Path:
    """Horizontal stacked bars: weighted sub-score contributions per humanizer, penalties in grey.

    ``rows`` hold ``slug``, ``scores`` (sub-scores in [0, 1] and ``composite``) and
    ``penalty_total`` (<= 0). ``weights`` maps sub-score -> points (they sum to 100).
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.0, 0.32 * len(rows) + 1.2))
    names = [r["slug"] for r in rows]
    for i, r in enumerate(rows):
        left = 0.0
        for k, (sub, w) in enumerate(weights.items()):
            v = r["scores"].get(sub)
            if not _finite(v):
                continue
            ax.barh(i, w * v, left=left, color=color(k), height=0.7, label=sub if i == 0 else None)
            left += w * v
        pen = r.get("penalty_total") or 0
        if pen:
            ax.barh(i, pen, left=left, color="#bbbbbb", edgecolor="#555555", height=0.7, label="penalties")
        comp = r["scores"].get("composite")
        if _finite(comp):
            ax.plot(comp, i, "|", color="black", ms=12, mew=2)
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(names, fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 100)
    ax.set_xlabel("points (black tick = published composite)")
    handles, labels = ax.get_legend_handles_labels()
    seen: dict[str, Any] = {}
    for h, l in zip(handles, labels):
        seen.setdefault(l, h)
    ax.legend(seen.values(), seen.keys(), fontsize=7, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.12 - 0.6 / max(1, len(rows))), ncol=3)
    return _save(fig, path)


def heatmap(matrix: Sequence[Sequence[float | None]], rows: Sequence[str], cols: Sequence[str], path: Path, *, label: str) -> Path:
    """Annotated heatmap of values in [0, 1] (None = blank cell)."""
    plt = _plt()
    import numpy as np

    m = np.array([[np.nan if not _finite(v) else float(v) for v in r] for r in matrix], dtype=float)
    fig, ax = plt.subplots(figsize=(0.9 * len(cols) + 2.2, 0.32 * len(rows) + 1.4))
    im = ax.imshow(m, vmin=0, vmax=1, cmap="cividis", aspect="auto")
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
    fig.colorbar(im, ax=ax, label=label, shrink=0.8)
    return _save(fig, path)


def trend_lines(series: dict[str, list[tuple[str, float | None]]], path: Path, *, ylabel: str, ylim: tuple[float, float] | None = None) -> Path:
    """One line per key across ordered x labels (cycles). ``series[name] = [(x_label, y), ...]``."""
    plt = _plt()
    xs = list(dict.fromkeys(x for pts in series.values() for x, _ in pts))
    fig, ax = plt.subplots(figsize=(6.4, 4.2))
    for i, (name, pts) in enumerate(series.items()):
        px = [xs.index(x) for x, y in pts if _finite(y)]
        py = [y for _, y in pts if _finite(y)]
        if py:
            ax.plot(px, py, "-o", color=color(i), ms=4, lw=1.4, label=name)
    ax.set_xticks(range(len(xs)))
    ax.set_xticklabels(xs)
    if ylim:
        ax.set_ylim(*ylim)
    ax.set_ylabel(ylabel)
    ax.legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _save(fig, path)


def bar_panels(panels: dict[str, dict[str, dict[str, float | None]]], path: Path, *, ylabel: str,
               ylim: tuple[float, float] = (0, 1)) -> Path:
    """Side-by-side grouped bar panels: ``panels[title][series][category] = value``; one colour per series."""
    plt = _plt()
    widths = [max(2, len({c for g in groups.values() for c in g})) for groups in panels.values()] or [1]
    fig, axes = plt.subplots(1, max(1, len(panels)), figsize=(0.55 * sum(widths) + 2.0, 3.3), squeeze=False,
                             gridspec_kw={"width_ratios": widths})
    for ax, (title, groups) in zip(axes[0], panels.items()):
        cats = list(dict.fromkeys(c for g in groups.values() for c in g))
        n = max(1, len(groups))
        w = 0.8 / n
        for si, (s, vals) in enumerate(groups.items()):
            xs = [ci + (si - (n - 1) / 2) * w for ci, c in enumerate(cats) if _finite(vals.get(c))]
            ys = [vals[c] for c in cats if _finite(vals.get(c))]
            ax.bar(xs, ys, width=w, color=color(si), label=s)
        ax.set_xticks(range(len(cats)))
        ax.set_xticklabels(cats, rotation=30, ha="right", fontsize=8)
        ax.set_ylim(*ylim)
        ax.set_title(title, fontsize=9)
    axes[0][0].set_ylabel(ylabel)
    if any(len(g) > 1 for g in panels.values()):
        axes[0][-1].legend(fontsize=7, frameon=False, loc="center left", bbox_to_anchor=(1.0, 0.5))
    return _save(fig, path)
