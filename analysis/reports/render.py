"""One report, three renderings: plain text (golden-tested), HTML (one file, images inlined) and PDF
(reportlab). A report is a list of blocks; every renderer shows every block, so the three say the same."""

import base64
import dataclasses
import html
import io

from reportlab.lib import colors
from reportlab.lib.pagesizes import A4
from reportlab.lib.styles import ParagraphStyle, getSampleStyleSheet
from reportlab.lib.units import mm
from reportlab.platypus import (Image, PageBreak, Paragraph, Preformatted, SimpleDocTemplate, Spacer, Table,
                                TableStyle)

from results import safeio


@dataclasses.dataclass
class Title:
    text: str
    subtitle: str = ""
    banner: str = ""  # said on every page (PDF) and before everything (text, HTML): e.g. an emulated host


@dataclasses.dataclass
class Heading:
    text: str
    level: int = 1


@dataclasses.dataclass
class Para:
    text: str
    strong: bool = False


@dataclasses.dataclass
class TableBlock:
    columns: list
    rows: list  # lists of strings
    caption: str = ""


@dataclasses.dataclass
class Figure:
    path: str
    caption: str


@dataclasses.dataclass
class Code:
    text: str


@dataclasses.dataclass
class Break:
    pass


def to_text(blocks):
    out = []
    for b in blocks:
        if isinstance(b, Title):
            out += ([f"!! {b.banner} !!", ""] if b.banner else []) + [b.text, "=" * len(b.text)] + (
                [b.subtitle] if b.subtitle else []) + [""]
        elif isinstance(b, Heading):
            out += [b.text, ("-" if b.level == 1 else "~") * len(b.text), ""]
        elif isinstance(b, Para):
            out += [("** " + b.text + " **") if b.strong else b.text, ""]
        elif isinstance(b, TableBlock):
            widths = [max(len(str(c)), *(len(str(r[i])) for r in b.rows)) if b.rows else len(str(c))
                      for i, c in enumerate(b.columns)]
            if b.caption:
                out.append(b.caption)
            out.append("  ".join(str(c).ljust(w) for c, w in zip(b.columns, widths)).rstrip())
            out.append("  ".join("-" * w for w in widths))
            out += ["  ".join(str(v).ljust(w) for v, w in zip(r, widths)).rstrip() for r in b.rows]
            out.append("")
        elif isinstance(b, Figure):
            out += [f"[figure: {b.caption}]", ""]
        elif isinstance(b, Code):
            out += ["    " + line for line in b.text.splitlines()] + [""]
        elif isinstance(b, Break):
            continue
    return "\n".join(out).rstrip() + "\n"


_CSS = """body{font-family:sans-serif;max-width:60em;margin:2em auto;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em;font-size:.85em}td,th{border:1px solid #bbb;padding:.2em .5em}
th{background:#eceff1}caption{text-align:left;font-weight:bold;padding:.3em 0}pre{background:#f5f5f5;padding:.6em;
white-space:pre-wrap}figure{margin:1em 0}figcaption{font-size:.85em;color:#555}.strong{font-weight:bold}"""


def to_html(blocks, title):
    e = html.escape
    # An empty icon: a report opened from a web server asks it for nothing but the page.
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><title>{e(title)}</title>"
             f"<link rel='icon' href='data:,'><style>{_CSS}</style></head><body>"]
    for b in blocks:
        if isinstance(b, Title):
            if b.banner:
                parts.append(f"<p style='position:sticky;top:0;background:#b71c1c;color:white;padding:4px'>"
                             f"<b>{e(b.banner)}</b></p>")
            parts.append(f"<h1>{e(b.text)}</h1>" + (f"<p>{e(b.subtitle)}</p>" if b.subtitle else ""))
        elif isinstance(b, Heading):
            parts.append(f"<h{b.level + 1}>{e(b.text)}</h{b.level + 1}>")
        elif isinstance(b, Para):
            parts.append(f"<p class='strong'>{e(b.text)}</p>" if b.strong else f"<p>{e(b.text)}</p>")
        elif isinstance(b, TableBlock):
            head = "".join(f"<th>{e(str(c))}</th>" for c in b.columns)
            body = "".join("<tr>" + "".join(f"<td>{e(str(v))}</td>" for v in r) + "</tr>" for r in b.rows)
            caption = f"<caption>{e(b.caption)}</caption>" if b.caption else ""
            parts.append(f"<table>{caption}<tr>{head}</tr>{body}</table>")
        elif isinstance(b, Figure):
            with open(b.path, "rb") as f:
                data = base64.b64encode(f.read()).decode()
            parts.append(f"<figure><img alt='{e(b.caption)}' src='data:image/png;base64,{data}'>"
                         f"<figcaption>{e(b.caption)}</figcaption></figure>")
        elif isinstance(b, Code):
            parts.append(f"<pre>{e(b.text)}</pre>")
    parts.append("</body></html>\n")
    return "\n".join(parts)


_CHAR_MM, _PAD_MM = 1.45, 5.0  # a 7 pt Helvetica character, and a cell's padding


def _column_widths(block, width):
    """Each column as wide as its longest text (capped at 40 characters) when that fits; otherwise wide
    columns give way down to their longest word, so numbers and short values never wrap."""
    texts = [[str(c)] + [str(r[i]) for r in block.rows] for i, c in enumerate(block.columns)]
    natural = [(min(40, max(len(t) for t in col)) * _CHAR_MM + _PAD_MM) * mm for col in texts]
    minimum = [min(n, (max(len(w) for t in col for w in (t.split() or [""])) * _CHAR_MM + _PAD_MM) * mm)
               for n, col in zip(natural, texts)]
    if sum(natural) <= width:
        return [n * width / sum(natural) for n in natural]
    if sum(minimum) >= width:
        # Even the longest words do not fit side by side: share the width in their proportion (they wrap).
        return [m * width / sum(minimum) for m in minimum]
    spare = width - sum(minimum)
    give = sum(natural) - sum(minimum)
    return [m + (n - m) * spare / give for n, m in zip(natural, minimum)]


def to_pdf(blocks, path, title):
    styles = getSampleStyleSheet()
    cell = ParagraphStyle("cell", parent=styles["BodyText"], fontSize=7, leading=8.5)
    head = ParagraphStyle("head", parent=cell, fontName="Helvetica-Bold")
    caption = ParagraphStyle("caption", parent=styles["BodyText"], fontSize=8, textColor=colors.HexColor("#555555"))
    code = ParagraphStyle("code", parent=styles["Code"], fontSize=7, leading=8.5)
    e = html.escape
    story = []
    width = A4[0] - 30 * mm
    for b in blocks:
        if isinstance(b, Title):
            story += [Spacer(1, 40 * mm), Paragraph(e(b.text), styles["Title"])]
            if b.subtitle:
                story.append(Paragraph(e(b.subtitle), styles["Italic"]))
        elif isinstance(b, Heading):
            style = styles["Heading1" if b.level == 1 else "Heading2"]
            story.append(Paragraph(e(b.text), ParagraphStyle(f"{style.name}-kept", parent=style, keepWithNext=1)))
        elif isinstance(b, Para):
            story.append(Paragraph(f"<b>{e(b.text)}</b>" if b.strong else e(b.text), styles["BodyText"]))
        elif isinstance(b, TableBlock):
            if b.caption:
                story.append(Paragraph(f"<b>{e(b.caption)}</b>", styles["BodyText"]))
            data = [[Paragraph(e(str(c)), head) for c in b.columns]]
            data += [[Paragraph(e(str(v)), cell) for v in r] for r in b.rows]
            t = Table(data, repeatRows=1, colWidths=_column_widths(b, width))
            t.setStyle(TableStyle([("GRID", (0, 0), (-1, -1), 0.25, colors.grey),
                                   ("BACKGROUND", (0, 0), (-1, 0), colors.HexColor("#eceff1")),
                                   ("VALIGN", (0, 0), (-1, -1), "TOP")]))
            story += [t, Spacer(1, 4 * mm)]
        elif isinstance(b, Figure):
            img = Image(b.path)
            scale = min(1.0, width / img.imageWidth)
            img.drawWidth, img.drawHeight = img.imageWidth * scale, img.imageHeight * scale
            story += [img, Paragraph(e(b.caption), caption), Spacer(1, 3 * mm)]
        elif isinstance(b, Code):
            story.append(Preformatted(b.text, code, maxLineLength=110))
        elif isinstance(b, Break):
            story.append(PageBreak())
    # invariant: no creation time or random file id in the PDF, so the same report gives the same bytes.
    pdf = io.BytesIO()  # reportlab writes a file object; the one writer puts it in place
    doc = SimpleDocTemplate(pdf, pagesize=A4, title=title, author="tunelab", leftMargin=15 * mm,
                            rightMargin=15 * mm, topMargin=15 * mm, bottomMargin=15 * mm, invariant=True)

    banner = next((b.banner for b in blocks if isinstance(b, Title) and b.banner), "")

    def footer(canvas, document):
        canvas.saveState()
        canvas.setFont("Helvetica", 7)
        short = title if len(title) <= 150 else title[:147] + "..."  # the footer stays on the page
        canvas.drawString(15 * mm, 8 * mm, f"{short} - page {document.page}")
        if banner:  # on every page: a page printed alone still says it
            canvas.setFillColor(colors.HexColor("#b71c1c"))
            canvas.setFont("Helvetica-Bold", 10)
            canvas.drawCentredString(A4[0] / 2, A4[1] - 9 * mm, banner)
        canvas.restoreState()

    doc.build(story, onFirstPage=footer, onLaterPages=footer)
    safeio.write_bytes(path, pdf.getvalue())
    return path
