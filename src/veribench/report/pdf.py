"""``veribench report --pdf``: the same pages as one printable PDF, through WeasyPrint.

Each report page becomes one section of the document (it starts on a new sheet and its
``h1`` is a top-level PDF bookmark), in the site's order. The sections are the pages'
``<main>`` content as written, so the PDF shows exactly the site's numbers; ids and links
are prefixed with the page name so that links between pages become links inside the PDF.
Charts stay vectors: WeasyPrint draws the site's SVG files as PDF paths. The print rules
live in the site's one stylesheet (``@media print``: A4 landscape, no navigation).

WeasyPrint needs Pango (Debian: ``libpango-1.0-0``, ``libpangoft2-1.0-0``) and fonts; the
``pdf`` extra installs the Python package (``pip install 'veribench[pdf]'``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from markupsafe import escape

from veribench.errors import VeribenchError

MAIN = re.compile(r'<main id="main">(.*)</main>', re.S)
TITLE = re.compile(r"<title>(.*?)</title>", re.S)


class PdfError(VeribenchError):
    """The PDF cannot be written (WeasyPrint or its system libraries are missing)."""


def _weasyprint():
    try:
        import weasyprint
    except (ImportError, OSError) as e:  # OSError: the Python package is there, Pango is not
        raise PdfError(f"`veribench report --pdf` needs WeasyPrint and Pango ({type(e).__name__}: {e}); install "
                       "them with `pip install 'veribench[pdf]'` and `apt-get install libpango-1.0-0 "
                       "libpangoft2-1.0-0` (or Debian's `weasyprint` package)") from None
    return weasyprint


def _rewrite(html: str, page: str, pages: set[str]) -> str:
    """Prefix ids and in-page links with ``page``; turn links to other pages into PDF-internal links."""
    html = re.sub(r'\b(id|aria-labelledby)="([^"]+)"', lambda m: f'{m[1]}="{page}--{m[2]}"', html)

    def href(m: re.Match) -> str:
        target = m[1]
        if target.startswith("#"):
            return f'href="#{page}--{target[1:]}"'
        name, _, frag = target.partition("#")
        stem = name.removesuffix(".html") if name.endswith(".html") else None
        if stem in pages:
            return f'href="#{stem}--{frag}"' if frag else f'href="#p-{stem}"'
        return m[0]

    return re.sub(r'href="([^"]*)"', href, html)


def page_sections(site: Path, names: Sequence[str]) -> list[tuple[str, str, str]]:
    """``(name, title, main HTML)`` of each written page, in order."""
    out = []
    stems = {n.removesuffix(".html") for n in names}
    for n in names:
        stem = n.removesuffix(".html")
        text = (site / f"{stem}.html").read_text(encoding="utf-8")
        m, t = MAIN.search(text), TITLE.search(text)
        if m is None:
            raise PdfError(f"{stem}.html: no <main> element (not a page of this report)")
        out.append((stem, t[1].strip() if t else stem, _rewrite(m[1], stem, stems)))
    return out


def write_pdf(site: Path, names: Sequence[str], target: Path) -> Path:
    """Write the pages ``names`` (``index.html``, ...) of the site folder ``site`` as one PDF.

    Raises:
        PdfError: WeasyPrint or Pango is missing, or a page is not a report page.
    """
    wp = _weasyprint()
    sections = page_sections(site, names)
    body = "\n".join(f'<section class="pdf-page" id="p-{escape(stem)}" data-page="{escape(stem)}.html">{main}</section>'
                     for stem, _title, main in sections)
    doc = ('<!doctype html><html lang="en"><head><meta charset="utf-8"><title>veribench report</title>'
           '<link rel="stylesheet" href="assets/report.css"></head>'
           f"<body><main>{body}</main></body></html>")
    target.parent.mkdir(parents=True, exist_ok=True)
    wp.HTML(string=doc, base_url=str(site) + "/").write_pdf(str(target))
    return target
