"""The knowledge base and its gold set: coverage the techniques need, and every quote findable."""

from collections import Counter

import pytest

from lessons.ingest.corpus import find_evidence, load_corpus, load_gold


@pytest.fixture(scope="module")
def corpus():
    return {doc.source: doc for doc in load_corpus().documents}


@pytest.fixture(scope="module")
def gold():
    return load_gold()


def test_the_corpus_is_bilingual_and_multi_format(corpus):
    assert 10 <= len(corpus) <= 14
    languages = Counter(doc.language for doc in corpus.values())
    assert languages["zh"] * 3 >= len(corpus), languages
    assert {"pdf", "docx", "pptx", "html", "md", "txt"} <= {doc.format for doc in corpus.values()}


def test_pdf_headings_and_pages_survive_offline_conversion(corpus):
    pdf = corpus["atlas_whitepaper.pdf"]
    headings = [line for line in pdf.markdown.splitlines() if line.startswith("#")]
    assert len(headings) >= 5, headings
    assert len(pdf.pages) >= 5 and [number for number, _ in pdf.pages] == list(range(1, len(pdf.pages) + 1))


def test_the_planned_contradiction_is_there(corpus):
    assert "€54" in corpus["q3_2026_business_review.pptx"].markdown
    assert "€45" in corpus["atlas_whitepaper.pdf"].markdown
    assert "€45" in corpus["support_faq.html"].markdown


def test_the_gold_set_covers_what_the_techniques_need(gold):
    types = Counter(q.type for q in gold)
    assert len(gold) >= 80
    assert sum(q.language == "zh" for q in gold) >= 30
    assert types["out_of_kb"] >= 20
    assert types["contradiction"] >= 1
    assert min(types["table"], types["multi_hop"], types["paraphrase"]) >= 8, types
    multi_hop = [q for q in gold if q.type == "multi_hop"]
    assert all(len({s.file for s in q.sources}) >= 2 for q in multi_hop)


def test_every_gold_quote_is_found_in_its_converted_source(corpus, gold):
    missing = []
    for question in gold:
        for source in question.sources:
            assert source.file in corpus, f"{question.id}: unknown source {source.file}"
        for quote in question.evidence:
            if not any(find_evidence(quote, corpus[s.file].markdown) for s in question.sources):
                missing.append(f"{question.id}: {quote!r}")
    assert not missing, "quotes not found after conversion:\n" + "\n".join(missing)


def test_pages_in_the_gold_set_are_where_the_quotes_start(corpus, gold):
    for question in gold:
        for source in question.sources:
            if source.page is None:
                continue
            pages = dict(corpus[source.file].pages)
            # A quote may start at the foot of its page and run onto the next one.
            page_text = pages[source.page] + " " + pages.get(source.page + 1, "")
            assert any(find_evidence(quote, page_text) for quote in question.evidence), (question.id, source.page)


def test_the_sampler_is_seeded_and_balanced_on_the_gold_set():
    from lessons.ingest.corpus import load_gold
    from lessons.ingest.questions import balanced_sample

    gold = load_gold()
    sample = balanced_sample(gold, 7, seed=3)
    assert [q.language for q in sample] == ["en"] * 3 + ["zh"] * 4  # Chinese takes the odd one
    assert sample == balanced_sample(gold, 7, seed=3) and sample != balanced_sample(gold, 7, seed=4)
    few = [q for q in gold if q.language == "zh"][:2]
    assert balanced_sample(few, 6, seed=0) == balanced_sample(few, 6, seed=0) and len(balanced_sample(few, 6, 0)) == 2
