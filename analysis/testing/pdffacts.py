"""What a written PDF holds, read back as a reader sees it: the reports' tests share it."""

import numpy
import pypdfium2


def pdf_facts(path):
    """(pages, text of every page, figures per page, share of non-white pixels per rendered page)."""
    pdf = pypdfium2.PdfDocument(path)
    texts, images, ink = [], [], []
    for page in pdf:
        texts.append(page.get_textpage().get_text_range())
        images.append(sum(1 for _ in page.get_objects(filter=[pypdfium2.raw.FPDF_PAGEOBJ_IMAGE])))
        gray = numpy.asarray(page.render(scale=1).to_pil().convert("L"))
        ink.append(float((gray < 200).mean()))
    return len(pdf), texts, images, ink
