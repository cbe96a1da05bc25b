"""The deterministic claim checks of notebook 05 (lessons/agents/claim_check.py)."""

from langchain_core.documents import Document

from lessons.agents.claim_check import (
    claim_in_draft,
    claim_is_grounded,
    content_tokens,
    figures,
    unsupported_figures,
)

CONTEXT = [
    Document(
        page_content="Atlas Server exposes the REST and gRPC APIs on port 7420 by default. "
        "| server.port | 7420 | Port for the REST API |"
    ),
    Document(
        page_content="The Team plan costs €45 per seat and month; 1,200 customers use it. Support answers in three languages."
    ),
    Document(page_content="团队版每席位每月 45 欧元，客户可在三十天内取消。明湖银行是我们的客户。"),
]


def test_figures_drop_thousands_separators_but_keep_decimals():
    assert figures("1,200 users, 2.5 GB, port 7420.") == ["1200", "2.5", "7420"]
    assert figures("１２００ 个") == ["1200"]  # full-width digits


def test_unsupported_figures_finds_a_changed_figure_only():
    assert unsupported_figures("The Team plan costs €54 per seat.", CONTEXT) == ["54"]
    assert unsupported_figures("Port 7420; 1200 customers; 45 euros.", CONTEXT) == []
    assert unsupported_figures("It answers in 3 languages.", CONTEXT) == []  # "three" in the context


def test_a_paraphrase_of_the_context_is_grounded():
    assert claim_is_grounded("The Atlas Server exposes its APIs by default on port 7420.", CONTEXT)
    assert claim_is_grounded("Atlas Server listens on port 7420 by default", CONTEXT)  # one new word
    assert claim_is_grounded("server.port", CONTEXT)
    assert claim_is_grounded("团队版每月 45 欧元", CONTEXT)


def test_an_invented_name_or_figure_is_not_grounded():
    assert not claim_is_grounded("The figure was confirmed by Chief Operating Officer Marcus Lindqvist.", CONTEXT)
    assert not claim_is_grounded("该数据已由首席运营官林志远确认。", CONTEXT)
    assert not claim_is_grounded("The Team plan costs €54 per seat", CONTEXT)
    assert not claim_is_grounded("...", CONTEXT)  # nothing to find


def test_a_claim_must_be_something_the_draft_says():
    draft = "The Team plan costs €45 per seat and month."
    assert claim_in_draft("Team plan costs €45", draft)
    assert claim_in_draft("45", draft)
    assert not claim_in_draft("19 hires and 6 departures in the quarter", draft)
    assert not claim_in_draft("明湖银行是我们的客户", draft)


def test_content_tokens_are_stemmed_words_and_chinese_pairs():
    assert content_tokens("The servers exposed APIs") == ["server", "expos", "api"]
    assert content_tokens("团队版 Atlas") == ["atla", "团队", "队版"]  # a light stem: a prefix found in the text


def test_an_added_sentence_the_context_does_not_hold_is_flagged_not_a_paraphrase():
    from lessons.agents.claim_check import sentences, unsupported_sentences

    assert sentences("Version 4.3 ships in May. It costs €45! 团队版每月 45 欧元。好。") == [
        "Version 4.3 ships in May.",
        "It costs €45!",
        "团队版每月 45 欧元。",
        "好。",
    ]
    planted = "Atlas Server listens on port 7420. The figure was confirmed by Chief Operating Officer Marcus Lindqvist."
    assert unsupported_sentences(planted, CONTEXT) == [
        "The figure was confirmed by Chief Operating Officer Marcus Lindqvist."
    ]
    assert unsupported_sentences("团队版每席位每月 45 欧元。该数据已由首席运营官林志远确认。", CONTEXT) == [
        "该数据已由首席运营官林志远确认。"
    ]
    assert unsupported_sentences("Atlas Server answers on port 7420 unless configured.", CONTEXT) == []
    assert unsupported_sentences("Yes, 7420.", CONTEXT) == []  # too short to judge


def test_words_of_the_question_are_not_claims_but_its_figures_must_be_in_the_context():
    claim = "The update that stopped the server from hogging RAM was port 7420"
    question = "Which update stopped the server from hogging RAM?"
    assert not claim_is_grounded(claim, CONTEXT)
    assert claim_is_grounded(claim, CONTEXT, question=question)
    assert not claim_is_grounded("It stopped hogging RAM in 2031", CONTEXT, question="Did it stop hogging RAM in 2031?")
