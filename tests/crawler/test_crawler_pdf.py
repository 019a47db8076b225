"""PDFs: `busca add file.pdf` gives one document with its page offsets, scanned pages are
reported, and `busca context` cites the page (`file.pdf#page=N`)."""

from __future__ import annotations

import io
import json
from dataclasses import replace

import pytest

from busca.citation import cite
from busca.crawler.crawl import crawl
from busca.crawler.options import CrawlOptions
from busca.crawler.files import read_files
from busca.crawler.pdf import PdfError, read_pdf
from busca.crawler.files import Problem
from busca.crawler.store import Document
from busca.index.home.documents import Store
from busca.fixtures.common import Reply
from busca.fixtures.pdf import make_pdf
from busca.fixtures.server import FixtureSite, load_articles

pytest.importorskip("pypdf")

PAGES = ["Manual do cliente.\nEste manual explica a assinatura.",
         "Pagamentos por boleto compensam em até três dias úteis.",
         None,  # a scanned page: an image, no text
         "Reembolso. O prazo para o estorno aparecer na fatura é de até 7 dias úteis após a"
         " confirmação do cancelamento."]


def test_pages_and_their_offsets():
    pdf = read_pdf(make_pdf(PAGES, title="Manual"))
    assert pdf.title == "Manual" and pdf.pages == 4 and pdf.empty == (3,)
    assert [n for n, _ in pdf.starts] == [1, 2, 4]
    for (_number, start), page in zip(pdf.starts, [PAGES[0], PAGES[1], PAGES[3]]):
        assert pdf.text[start:].startswith(page.split("\n")[0])
    assert pdf.meta()["pages_without_text"] == [3]


def test_a_pdf_of_scans_only_is_refused_with_the_fix():
    with pytest.raises(PdfError, match=r"none of its 2 pages has text \(a scan\?\); run OCR"):
        read_pdf(make_pdf([None, None]))


def test_a_damaged_pdf_is_one_problem(tmp_path):
    path = tmp_path / "quebrado.pdf"
    path.write_bytes(b"%PDF-1.4\nnada aqui")
    [problem] = list(read_files([str(path)]))
    assert isinstance(problem, Problem) and "damaged or unreadable PDF" in problem.message


def test_a_page_saved_as_pdf_and_an_encrypted_pdf_say_what_to_do(tmp_path):
    from pypdf import PdfReader, PdfWriter

    page = tmp_path / "edital.pdf"
    page.write_bytes(b"<!doctype html><title>Edital</title>")
    locked, writer = tmp_path / "sigiloso.pdf", PdfWriter()
    writer.append(PdfReader(io.BytesIO(make_pdf(["Texto sigiloso."]))))
    writer.encrypt("senha")
    writer.write(locked)
    problems = list(read_files([str(page), str(locked)]))
    assert [p.message for p in problems] == [
        "not a PDF: it starts with '<!doctype ht', not %PDF-; give it the extension of what it"
        " is (.html, .txt) or fetch the PDF again",
        "the PDF is encrypted with a password; decrypt a copy first (e.g. qpdf"
        " --password=PASSWORD --decrypt in.pdf out.pdf) and add it"]


def test_cite_points_at_the_page_of_an_offset():
    meta = {"pages": [[1, 0], [2, 50], [4, 120]]}
    assert cite("file:///m.pdf", meta, 0) == "file:///m.pdf#page=1"
    assert cite("file:///m.pdf", meta, 119) == "file:///m.pdf#page=2"
    assert cite("file:///m.pdf", meta, 500) == "file:///m.pdf#page=4"
    assert cite("https://s.example/a", None, 10) == "https://s.example/a"


def test_add_a_pdf_then_context_cites_its_page(run, home, tmp_path, caplog):
    path = tmp_path / "manual.pdf"
    path.write_bytes(make_pdf(PAGES, title="Manual do cliente"))
    added = run("add", str(path))
    assert added.exit_code == 0, added.output
    assert "1 added" in added.stdout
    assert "1 of its 4 pages have no text (scanned?); page(s) 3 not stored" in caplog.text
    with Store(home) as store:
        [document] = list(store.documents())
    assert document.url == path.resolve().as_uri() and document.title == "Manual do cliente"
    assert [n for n, _ in document.meta["pages"]] == [1, 2, 4]
    assert run("index", "-q", "--size", "12", "--overlap", "4").exit_code == 0
    result = run("context", "prazo do estorno na fatura", "--json")
    assert result.exit_code == 0, result.output
    [passage] = json.loads(result.stdout)["passages"]
    assert passage["cite"] == document.url + "#page=4"
    prompt = run("context", "prazo do estorno na fatura")
    assert f"[fonte: {document.url}#page=4]" in prompt.stdout
    # a search hit says its page, not every page's offset (kilobytes on a long PDF)
    hits = [json.loads(line) for line in run("search", "prazo do estorno na fatura", "--json",
                                             "--method", "bm25").stdout.splitlines()]
    for hit in hits:  # the page its window starts on
        assert hit["meta"]["page"] == max(n for n, at in document.meta["pages"]
                                          if at <= hit["start"])
    assert {h["meta"]["page"] for h in hits} >= {2, 4} and hits[0]["meta"]["page_count"] == 4
    assert not {"pages", "pages_without_text"} & set(hits[0]["meta"])


def test_documents_without_pages_keep_their_url():
    doc = Document("https://s.example/a", "A", "texto")
    assert cite(doc.url, doc.meta, 3) == doc.url


class PdfSite(FixtureSite):
    """A plain site (no API, sitemap or feed) whose home page links a PDF."""

    def route(self, path, query, headers):
        if path == "/manual.pdf":
            return Reply(200, {"Content-Type": "application/pdf"}, make_pdf(PAGES))
        if path == "/":
            return Reply(200, {"Content-Type": "text/html; charset=utf-8"}, (
                "<html><body><main><h1>Início</h1><p>Leia o manual do cliente.</p>"
                '<a href="/manual.pdf">manual</a></main></body></html>').encode())
        return super().route(path, query, headers)


def test_crawl_reads_linked_pdfs_only_when_asked(tmp_path):
    site = PdfSite(load_articles()[:1], wordpress=False, sitemap=False, feed=False)
    with site, Store(tmp_path) as store:
        options = CrawlOptions(rate=1000, source="html")
        list(crawl(site.url, store, options=options))
        assert store.get(site.url + "manual.pdf") is None
        assert not site.hits("/manual.pdf")
        report = list(crawl(site.url, store, options=replace(options, pdfs=True)))[-1].report
        document = store.get(site.url + "manual.pdf")
    assert report.counts["added"] == 1 and document.title == "manual.pdf"
    assert [n for n, _ in document.meta["pages"]] == [1, 2, 4]
    assert "Reembolso" in document.text


def test_ligatures_become_the_letters_a_question_types():
    """A PDF's font gives "ﬁcha" (U+FB01): no question typed "ficha" found it."""
    pdf = read_pdf(make_pdf(["A ﬁcha de inscrição e o ﬂuxo de conﬁguração."]))
    assert pdf.text.startswith("A ficha de inscrição e o fluxo de configuração.")


def test_a_decompression_bomb_is_one_problem(tmp_path):
    """A 80 KB file whose page inflates to 80 MB: pypdf's limit, a traceback before."""
    path = tmp_path / "bomba.pdf"
    path.write_bytes(make_pdf(["Relatório"], padding=80 * 2 ** 20))
    assert path.stat().st_size < 200_000
    [problem] = list(read_files([str(path)]))
    assert isinstance(problem, Problem) and "too large to decompress" in problem.message


def test_a_word_hyphenated_at_a_line_break_is_one_word():
    """A justified PDF breaks "informa-" / "ção": no question typed "informação" found it.
    A compound the document spells with its hyphen elsewhere, and an enclitic, keep theirs."""
    pdf = read_pdf(make_pdf([
        "O regulamento de segurança da informa-\nção vale para a pró-\nreitoria e para a"
        " autentica-\nção. Cabe à pró-reitoria fazê-\nlo até a terça-\n-feira de orga-",
        "nização do calendário."]))
    text = pdf.text.replace("\n", " ")
    assert "segurança da informação vale" in text and "a autenticação." in text
    assert "para a pró-reitoria e" in text and "fazê-lo até a terça-feira" in text
    assert "de organização" in pdf.text.split("\n")[-2]  # the word ends its first page
    [(_, first), (_, second)] = pdf.starts
    assert pdf.text[second:].startswith("do calendário.")
    soft = read_pdf(make_pdf(["A avalia\u00ad\nção externa."]))  # a soft hyphen's break
    assert soft.text == "A avaliação\nexterna."


def test_running_headers_and_page_numbers_are_left_out():
    """A header and a "Página N de M" footer on every page were in every window: a search
    for the document's name matched each of its windows, and each snippet began with them.
    They stay once, where they first show."""
    body = ["O orçamento da pesquisa cresceu.", "A extensão atendeu 4.312 famílias.",
            "A avaliação externa foi positiva.", "Ata aprovada por unanimidade."]
    header = "Relatório Anual 2024 — Universidade Federal"
    pages = [f"{header}\n{line}\nPágina {n} de 4" for n, line in enumerate(body, start=1)]
    pdf = read_pdf(make_pdf(pages))
    assert pdf.text.split("\n") == [header, body[0], "Página 1 de 4", *body[1:]]
    assert [pdf.text[start:].split("\n")[0] for _, start in pdf.starts] == [header, *body[1:]]


def test_a_line_repeated_on_few_pages_is_text():
    pages = ["Relatório Anual 2024\nPrimeira parte.", "Segunda parte.", "Terceira parte.",
             "Relatório Anual 2024\nQuarta parte.", "Quinta parte.", "Sexta parte."]
    assert read_pdf(make_pdf(pages)).text.count("Relatório Anual 2024") == 2
