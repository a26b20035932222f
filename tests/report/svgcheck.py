"""Independent checker for the report's SVG charts (standard library XML parser, no veribench code).

A chart's series are the groups with id ``vb-s<k>-<j>``; for each series it collects the
colours it is drawn in (fills and strokes, resolving hatch patterns to their base colour,
ignoring the dark marker outline, white and "none") and its glyphs (the shapes of the markers
it places, and the hatch patterns of its bars). The legend (``vb-legend``) and axes
backgrounds (``vb-axes-<i>``) are read as bounding boxes of their frame paths.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

SVG = "{http://www.w3.org/2000/svg}"
XLINK = "{http://www.w3.org/1999/xlink}href"
SERIES = re.compile(r"^vb-s(\d+)-\d+$")
IGNORED = {"#333333", "#ffffff", "none"}
NUM = re.compile(r"-?\d+(?:\.\d+)?")


def _style(el: ET.Element) -> dict[str, str]:
    out = {}
    for part in (el.get("style") or "").split(";"):
        if ":" in part:
            k, v = part.split(":", 1)
            out[k.strip()] = v.strip().lower()
    for k in ("fill", "stroke"):
        if el.get(k):
            out.setdefault(k, el.get(k).lower())
    return out


def _bbox(d: str) -> tuple[float, float, float, float]:
    xs = [float(x) for x in NUM.findall(d)]
    px, py = xs[0::2], xs[1::2]
    return min(px), min(py), max(px), max(py)


@dataclass
class Series:
    colors: set[str] = field(default_factory=set)
    glyphs: set[str] = field(default_factory=set)
    elements: int = 0


@dataclass
class Chart:
    path: Path
    series: dict[int, Series]
    legend: tuple[float, float, float, float] | None
    axes: list[tuple[float, float, float, float]]


def read_chart(path: Path) -> Chart:
    root = ET.parse(path).getroot()
    by_id = {el.get("id"): el for el in root.iter() if el.get("id")}

    def pattern(ref: str) -> tuple[str | None, str]:
        pat = by_id.get(ref)
        if pat is None:
            return None, ref
        base = next((r.get("fill", "").lower() for r in pat.iter(f"{SVG}rect")), None)
        d = " ".join(p.get("d", "") for p in pat.iter(f"{SVG}path"))
        return base, "hatch:" + " ".join(d.split())

    series: dict[int, Series] = {}
    for el in root.iter(f"{SVG}g"):
        m = SERIES.match(el.get("id") or "")
        if not m:
            continue
        s = series.setdefault(int(m.group(1)), Series())
        for sub in el.iter():
            if sub.tag not in (f"{SVG}path", f"{SVG}use", f"{SVG}rect"):
                continue
            if sub.tag == f"{SVG}path" and sub.get("id"):  # a marker definition, not a drawn element
                continue
            s.elements += 1
            st = _style(sub)
            for k in ("fill", "stroke"):
                v = st.get(k)
                if not v or v in IGNORED:
                    continue
                ref = re.match(r"url\(#([^)]+)\)", v)
                if ref:
                    base, glyph = pattern(ref.group(1))
                    s.glyphs.add(glyph)
                    if base and base not in IGNORED:
                        s.colors.add(base)
                else:
                    s.colors.add(v)
            if sub.tag == f"{SVG}use":
                target = by_id.get((sub.get(XLINK) or "").lstrip("#"))
                if target is not None:
                    s.glyphs.add("marker:" + " ".join((target.get("d") or "").split()))
    legend = None
    leg = by_id.get("vb-legend")
    if leg is not None:
        frame = next(iter(leg.iter(f"{SVG}path")), None)
        legend = _bbox(frame.get("d")) if frame is not None else None
    axes = []
    for k, el in by_id.items():
        if k.startswith("vb-axes-"):
            p = el if el.tag == f"{SVG}path" else next(iter(el.iter(f"{SVG}path")), None)
            if p is not None:
                axes.append(_bbox(p.get("d")))
    return Chart(path, series, legend, axes)


def _overlap(a, b) -> bool:
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def check_chart(path: Path) -> Chart:
    """Assert every series has its own colour and its own glyph, and the legend covers no axes."""
    ch = read_chart(path)
    seen_colors: dict[str, int] = {}
    seen_glyphs: dict[str, int] = {}
    for k, s in ch.series.items():
        assert s.colors, f"{path.name}: series {k} has no colour"
        for c in s.colors:
            assert seen_colors.setdefault(c, k) == k, f"{path.name}: series {k} and {seen_colors[c]} share colour {c}"
        for g in s.glyphs or {"plain (no marker, no hatch)"}:
            assert seen_glyphs.setdefault(g, k) == k, f"{path.name}: series {k} and {seen_glyphs[g]} share a glyph {g[:40]}"
    if len(ch.series) > 1:
        assert ch.legend is not None, f"{path.name}: several series and no legend"
    if ch.legend is not None:
        assert ch.axes, f"{path.name}: no axes found"
        for ax in ch.axes:
            assert not _overlap(ch.legend, ax), f"{path.name}: the legend {ch.legend} lies over the plot {ax}"
    return ch
