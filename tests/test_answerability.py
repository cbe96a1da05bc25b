"""The answerability check: the judge shows its evidence, code verifies it (lessons.agents.answerability)."""

from langchain_core.documents import Document

from lessons.agents.answerability import (
    CROSS_ENCODER_KEY,
    AnswerabilityCheck,
    AnswerabilityThresholds,
    Evidence,
    common_names,
    focus_missing,
    focus_terms,
    locate_quote,
    occurs,
    question_specifics,
    verify_evidence,
)
from lessons.core.fakes import ScriptedChatModel

REVIEW = Document(
    "| Metric | Q3 2026 |\n|---|---|\n| Gross margin | 71% |\n| Net revenue retention | 118% |\n\n"
    "Net revenue retention reached 118% in the third quarter, driven by expansions.",
    metadata={"source": "q3_2026_business_review.pptx", "context_header": "q3_2026_business_review.pptx > Slide 4"},
)
HANDBOOK = Document(
    "Employees in the Rotterdam office receive sixteen weeks of paid parental leave. The office opens at 8:30.",
    metadata={"source": "employee_handbook.docx"},
)
RELEASES = Document(
    "Atlas 4.2.0 was released on 2 September 2026. Atlas 4.2.1 fixed the memory leak in the indexer.",
    metadata={"source": "release_notes.md", "context_header": "release_notes.md > 4.2.1"},
)


def check_with(
    quote: str, answer: str = "x", asks_for: str = "", **kwargs
) -> tuple[AnswerabilityCheck, ScriptedChatModel]:
    model = ScriptedChatModel(responses=[Evidence(asks_for=asks_for, quote=quote, answer=answer)])
    return AnswerabilityCheck(model, **{"subject": {"tidewell", "atlas"}, **kwargs}), model


def test_an_answer_quoted_verbatim_with_the_specifics_is_answerable():
    check, model = check_with("Net revenue retention reached 118% in the third quarter", "118%")
    verdict = check("What was Tidewell's net revenue retention in Q3 2026?", [HANDBOOK, REVIEW])
    assert verdict.answerable, verdict
    assert verdict.document == 1 and verdict.coverage == 1.0 and verdict.missing == ()
    assert len(model.calls) == 1 and model.calls[0]["tools"] == ["Evidence"]


def test_near_miss_on_topic_but_the_metric_absent_is_caught_by_code():
    # The judge quotes a true, on-topic row: it answers a neighbouring question (gross margin, not EBITDA).
    check, _ = check_with("Gross margin | 71%", "71%")
    verdict = check("What was Tidewell's EBITDA margin in Q3 2026?", [REVIEW])
    assert not verdict.answerable
    assert verdict.reason == "specifics missing" and verdict.missing == ("EBITDA",)
    assert verdict.coverage == 1.0  # the quote itself is genuine: only the specifics check catches this


def test_a_real_quote_about_something_else_is_caught_by_what_is_asked():
    # On topic (the handbook), verbatim, no figure or name to miss: only the words naming what is asked are absent.
    question = "What is the vesting schedule of Tidewell's employee stock options?"
    check, _ = check_with("The office opens at 8:30.", "8:30", asks_for="vesting schedule")
    verdict = check(question, [HANDBOOK])
    assert verdict.reason == "asked-for missing" and verdict.missing == ("vest", "schedule")
    evidence = Evidence(asks_for="vesting schedule", quote="The office opens at 8:30.", answer="8:30")
    assert (
        verify_evidence(question, evidence, [HANDBOOK], {"tidewell"}, focus_share=0.0)[0] == "answerable"
    )  # the check without it


def test_what_is_asked_counts_only_the_questions_own_words_and_half_of_them_suffice():
    question = "In which languages can customers write support tickets?"
    # "dialect" is the judge's word, not the question's
    assert focus_terms(question, "languages dialect") == ["languag"]
    # how it asks is not what it asks for: "how much", 多少, 哪些
    assert focus_terms("How much does the Team plan cost?", "how much Team plan") == ["team", "plan"]
    assert focus_terms("Team 版每个用户多少钱？", "多少钱") == ["钱"]
    assert focus_terms("支持哪些版本？", "哪些版本") == ["版本"]
    assert focus_terms("When did Tidewell open its Lisbon office?", "Tidewell Lisbon office", {"Tidewell"}) == [
        "lisbon",
        "office",
    ]
    faq = "do you offer support in languages other than english? yes. tickets can be written in english or dutch."
    assert focus_missing(["languag", "support", "ticket"], faq) == []
    assert focus_missing(["languag", "support", "portal"], faq) == []  # two of three
    assert focus_missing(["customer", "portal", "ticket"], faq) == ["customer", "portal"]
    assert focus_missing([], "anything") == []


def test_a_floor_on_the_questions_words_refuses_a_quote_about_something_else():
    question = "On which day does the Matplotlib team hold its weekly developer meeting?"
    chunk = Document("Matplotlib is a comprehensive library for creating static, animated and interactive plots.")
    evidence = Evidence(quote=chunk.page_content, answer="a library", asks_for="what it asks for")
    assert (
        verify_evidence(question, evidence, [chunk], {"matplotlib"})[0] == "answerable"
    )  # the floor is off by default
    reason, *_, coverage = verify_evidence(question, evidence, [chunk], {"matplotlib"}, min_terms=0.15)
    assert reason == "too few of the question's words" and coverage < 0.15


def test_near_miss_other_office_is_caught():
    check, _ = check_with("Employees in the Rotterdam office receive sixteen weeks of paid parental leave.")
    verdict = check("How many weeks of paid parental leave do employees in the Lisbon office receive?", [HANDBOOK])
    assert verdict.reason == "specifics missing" and verdict.missing == ("Lisbon",)


def test_near_miss_other_version_is_caught_and_the_right_one_passes():
    check, _ = check_with("Atlas 4.2.0 was released on 2 September 2026.")
    assert check("When was Atlas 4.3.0 released?", [RELEASES]).missing == ("4.3.0",)
    check, _ = check_with("Atlas 4.2.1 fixed the memory leak in the indexer.")
    assert check("Which Atlas release fixed the memory leak, 4.2.1?", [RELEASES]).answerable


def test_an_invented_quote_is_not_evidence():
    check, _ = check_with("The EBITDA margin was 18% in Q3 2026.", "18%")
    verdict = check("What was Tidewell's EBITDA margin in Q3 2026?", [REVIEW])
    assert verdict.reason == "quote not in the documents" and not verdict.answerable


def test_an_empty_quote_abstains():
    check, _ = check_with("", "")
    assert check("What is the dress code in the Rotterdam office?", [HANDBOOK]).reason == "no quote"


def test_chinese_question_forms_match_english_evidence():
    question = "潮汐分析 2026年第三季度的净收入留存率是多少？"
    check, _ = check_with("Net revenue retention reached 118% in the third quarter", "118%")
    assert check(question, [REVIEW]).answerable
    check, _ = check_with("Net revenue retention reached 118% in the third quarter", "118%")
    verdict = check("潮汐分析 2026年第四季度的净收入留存率是多少？", [REVIEW])
    assert verdict.reason == "specifics missing" and verdict.missing == ("第四季度",)


def test_chinese_date_matches_english_date_and_a_different_day_does_not():
    dated = Document("On September 19 the bank upgraded to 4.2.1 overnight; the window was planned for 6 hours.")
    check, _ = check_with("On September 19 the bank upgraded to 4.2.1 overnight")
    assert check("明湖银行 9 月 19 日升级到 4.2.1 计划用了多少小时？", [dated]).answerable
    check, _ = check_with("On September 19 the bank upgraded to 4.2.1 overnight")
    assert check("明湖银行 9 月 20 日升级到 4.2.1 计划用了多少小时？", [dated]).missing == ("9 月 20 日",)


def test_a_near_verbatim_quote_passes_and_a_paraphrase_does_not():
    assert locate_quote("Employees in the Rotterdam office receive 16 weeks of paid parental leave", [HANDBOOK])
    near = locate_quote("Employees in the Rotterdam office receive sixteen weeks of paid parental leave!", [HANDBOOK])
    assert near.coverage >= 0.9
    loose = locate_quote("Staff at Rotterdam get four months of parental leave with pay", [HANDBOOK])
    assert loose is None or loose.coverage < 0.9


def test_relevance_thresholds_apply_per_language_and_read_the_rerankers_score():
    scored = Document(REVIEW.page_content, metadata={**REVIEW.metadata, CROSS_ENCODER_KEY: 0.4})
    thresholds = {"en": AnswerabilityThresholds(p_yes=0.8), "zh": AnswerabilityThresholds(cross_encoder=0.5)}
    quote = "Net revenue retention reached 118% in the third quarter"
    check, _ = check_with(quote, thresholds=thresholds)
    low = check("What was Tidewell's net revenue retention in Q3 2026?", [scored], p_yes=[0.6])
    assert low.reason == "P(yes) below threshold" and low.evidence_ok and low.p_yes == 0.6
    check, _ = check_with(quote, thresholds=thresholds)
    assert check("What was Tidewell's net revenue retention in Q3 2026?", [scored], p_yes=[0.9]).answerable
    check, _ = check_with(quote, thresholds=thresholds)
    zh = check("潮汐分析 2026年第三季度的净收入留存率是多少？", [scored])
    assert zh.reason == "cross-encoder below threshold" and zh.cross_encoder == 0.4


def test_specifics_of_questions():
    kinds = {(s.kind, s.text) for s in question_specifics("Is Tidewell certified to ISO 27001, and since when?")}
    assert kinds == {("figure", "27001"), ("name", "Tidewell"), ("name", "ISO")}
    assert [s.kind for s in question_specifics("What changed in Q3 2026?")] == ["quarter", "year"]
    year = question_specifics("2026年的收入是多少？")[0]
    assert year.kind == "year" and occurs(year, "revenue in 2026 was")
    assert not occurs(year, "revenue in 20260 was")
    version = question_specifics("What does 2.9 change?")[0]
    assert occurs(version, "release v2.9 adds") and not occurs(version, "release 12.9 adds")
    assert not occurs(version, "release 1.2.9 adds")


def test_subject_names_are_the_corpus_s_not_the_question_s_specifics():
    chunks = [
        Document(f"Tidewell {topic} text about Atlas.", metadata={"source": f"{n}.md"})
        for n, topic in enumerate(["leave", "pricing", "security", "Lisbon office"])
    ]
    assert common_names(chunks) == {"tidewell", "atlas"}
    assert common_names(chunks[:2]) == set()  # two files cannot tell a subject from a specific
    check, _ = check_with("Net revenue retention reached 118% in the third quarter", subject=())
    verdict = check("What was Tidewell's net revenue retention in Q3 2026?", [REVIEW])
    assert verdict.missing == ("Tidewell",)  # without the subject list, the company name is asked of every chunk


# ---------------------------------------------------------------- the check where it is used


def judge_by_schema(quote: str, extra: dict | None = None) -> ScriptedChatModel:
    """A scripted model that answers each structured request by its schema: the judge's evidence is `quote`."""
    replies = {
        "Evidence": {"quote": quote, "answer": "71%"},
        "DraftAnswer": {"answer": "The margin was 71%.", "found": "yes"},
        "RewrittenQuery": {"query": "EBITDA margin third quarter", "new_keywords": ["EBITDA"]},
        "ResearchDraft": {"answer": "The margin was 71%.", "cited_chunks": [1], "found": "yes"},
        **(extra or {}),
    }
    # plain-text requests are the relevance gate's one-token judge: "yes" (no log-probabilities: P(yes) = 1.0)
    return ScriptedChatModel(default=lambda messages, tools: replies[tools[0]] if tools else "yes")


class PassingGate:
    """A relevance gate that calls every document relevant with P(yes) 0.9: the near miss is on topic."""

    def __call__(self, question, documents):
        from lessons.agents.grading import Grade, GradeDocuments

        return [Grade(GradeDocuments(binary_score="yes"), 0.9, None) for _ in documents]


NEAR_MISS = "What was Tidewell's EBITDA margin in Q3 2026?"


def test_the_grading_loop_refuses_a_near_miss_that_the_relevance_gate_alone_answers():
    from lessons.agents.grading import AnswerabilityGate, build_grading_loop

    model = judge_by_schema("| Gross margin | 71% |")
    plain = build_grading_loop(model, lambda q: [REVIEW], max_rounds=1, grader=PassingGate())
    assert plain.invoke({"question": NEAR_MISS})["outcome"] == "answered"  # the hallucination the check exists for
    checked = AnswerabilityGate(PassingGate(), AnswerabilityCheck(model, subject={"tidewell"}))
    state = build_grading_loop(model, lambda q: [REVIEW], max_rounds=1, grader=checked).invoke({"question": NEAR_MISS})
    assert state["outcome"] == "not_in_kb"
    assert state["trace"][0].check.missing == ("EBITDA",) and state["trace"][0].grades == ("no",)


def test_the_grading_loop_answers_when_the_evidence_holds_and_passes_the_check_s_p_yes_to_it():
    from lessons.agents.grading import AnswerabilityGate, build_grading_loop

    model = judge_by_schema("Net revenue retention reached 118% in the third quarter")
    check = AnswerabilityCheck(
        model, {"en": AnswerabilityThresholds(p_yes=0.95), "zh": AnswerabilityThresholds()}, subject=["tidewell"]
    )
    question = "What was Tidewell's net revenue retention in Q3 2026?"
    state = build_grading_loop(model, lambda q: [REVIEW], max_rounds=1, grader=AnswerabilityGate(PassingGate(), check))
    assert state.invoke({"question": question})["outcome"] == "not_in_kb"  # the gate's P(yes) 0.9 < 0.95
    check = AnswerabilityCheck(
        model, {"en": AnswerabilityThresholds(p_yes=0.85), "zh": AnswerabilityThresholds()}, subject=["tidewell"]
    )
    loop = build_grading_loop(model, lambda q: [REVIEW], max_rounds=1, grader=AnswerabilityGate(PassingGate(), check))
    assert loop.invoke({"question": question})["outcome"] == "answered"


def test_three_agents_catch_a_draft_that_answers_a_different_question():
    from lessons.agents.three_agents import run_three_agents

    model = judge_by_schema("| Gross margin | 71% |")
    result = run_three_agents(NEAR_MISS, retriever=lambda q: [REVIEW], llm=model, relevance=lambda q, d: "CAN_ANSWER",
                              answerability=AnswerabilityCheck(model, subject={"tidewell"}))  # fmt: skip
    assert result.abstained and result.outcome == "cannot_answer"
    assert [s.step for s in result.trace][-2:] == ["answerability_check", "not_in_documents"]
    assert ["Verification"] not in [c["tools"] for c in model.calls]  # the verifier never saw the wrong draft


def test_the_deep_research_agent_does_not_stop_on_evidence_for_another_question():
    from lessons.agents.deep_research import DeepResearchAgent, Observation, PageStore

    def search(query):
        return Observation("search", f"search({query!r})", (REVIEW,))

    decide = {
        "ResearchDecision": {"reason": "enough", "action": "answer", "query": "", "source_id": "", "page_index": 0}
    }
    model = judge_by_schema("| Gross margin | 71% |", decide)
    agent = DeepResearchAgent(
        model, search, PageStore([]), answerability=AnswerabilityCheck(model, subject={"tidewell"})
    )
    result = agent.research(NEAR_MISS)
    assert not result.found and ["ResearchDraft"] not in [c["tools"] for c in model.calls]
    model = judge_by_schema("Net revenue retention reached 118% in the third quarter", decide)
    agent = DeepResearchAgent(
        model, search, PageStore([]), answerability=AnswerabilityCheck(model, subject={"tidewell"})
    )
    assert agent.research("What was Tidewell's net revenue retention in Q3 2026?").found


def test_the_service_serves_the_gated_loop_and_abstains_on_a_near_miss():
    from service.pipeline import answer

    model = judge_by_schema("| Gross margin | 71% |")
    reply = answer(model, NEAR_MISS, lambda q: [REVIEW], frozenset({"tidewell"}), max_rounds=1).as_json()
    assert reply["abstained"] and reply["answerability"]["missing"] == ["EBITDA"] and reply["citations"] == []
    assert ["DraftAnswer"] not in [c["tools"] for c in model.calls]  # no answer was written
    model = judge_by_schema("Net revenue retention reached 118% in the third quarter")
    good = answer(model, "What was Tidewell's net revenue retention in Q3 2026?", lambda q: [REVIEW],
                  frozenset({"tidewell"}), max_rounds=1)  # fmt: skip
    assert not good.abstained and good.answer == "The margin was 71%." and good.answerability["reason"] == "answerable"
    assert [c.source for c in good.citations] == ["q3_2026_business_review.pptx"]


def test_a_chinese_term_is_not_asked_of_english_evidence_but_a_figure_is():
    readme = Document("LangChain Core provides modular abstractions. Version 0.3 added streaming.")
    check, _ = check_with("LangChain Core provides modular abstractions.", subject=())
    verdict = check("LangChain Core 的“模块化”具体指什么？", [readme])
    assert verdict.answerable and "模块化" in verdict.specifics and verdict.missing == ()
    check, _ = check_with("LangChain Core provides modular abstractions.", subject=())
    assert check("LangChain Core 0.4 的“模块化”具体指什么？", [readme]).missing == ("0.4",)


def test_the_answer_check_refuses_an_answer_that_repeats_the_question_or_is_not_stated():
    """A verbatim, on-topic quote with an answer that only repeats the question ("Profiling API" for "Which version
    introduced the Profiling API?"), or states a figure no chunk has, passes the quote check; the answer check
    (`check_answer`, measured in benchmarks/bench_answerability.py) refuses both and keeps a stated answer."""
    from lessons.agents.answerability import answer_problem, verify_evidence

    profiling = Document("In docling-core, the Profiling API extracts statistics from documents.", metadata={})
    question = "Which version of docling-core introduced the Profiling API?"
    repeated = Evidence(quote="the Profiling API extracts statistics from documents", answer="Profiling API")
    assert verify_evidence(question, repeated, [profiling])[0] == "answerable"  # the quote check alone
    assert verify_evidence(question, repeated, [profiling], check_answer=True)[0] == "answer repeats the question"
    invented = Evidence(quote="Employees in the Rotterdam office receive sixteen weeks", answer="24 weeks")
    leave = "How many weeks of parental leave do Rotterdam employees get?"
    assert verify_evidence(leave, invented, [HANDBOOK])[0] == "answerable"
    assert verify_evidence(leave, invented, [HANDBOOK], check_answer=True)[0] == "answer not in the documents"
    stated = Evidence(quote="Employees in the Rotterdam office receive sixteen weeks", answer="sixteen weeks")
    assert verify_evidence(leave, stated, [HANDBOOK], check_answer=True)[0] == "answerable"
    assert answer_problem(leave, "", [HANDBOOK]) == "no answer"


# ---------------------------------------------------------------- causes measured on the stored judge quotes


def test_common_names_are_names_not_words_capitalised_where_a_sentence_starts():
    """The subject list held every word some sentence or bullet starts with ("And", "Check", "Console" where the
    prose says "console"), so those words were never asked of the evidence; a name is written capitalised."""
    chunks = [
        Document(
            f"Tidewell Atlas {topic}. Check the console and check the logs. And restart the console if needed.",
            metadata={"source": f"{n}.md"},
        )
        for n, topic in enumerate(["leave", "pricing", "security", "support"])
    ]
    assert common_names(chunks) == {"tidewell", "atlas"}


JUPYTER = Document(
    "### Weekly Dev Meeting\n\nWe have video conference meetings every week where we discuss what we have been "
    "working on.\n\n- When: Wednesdays 9:00 AM Pacific Time (USA)\n- Where: `jovyan` Zoom\n- What: Meeting notes",
    metadata={"source": "jupyterlab", "context_header": "jupyterlab > JupyterLab > Development > Weekly Dev Meeting"},
)


def test_a_quote_framed_with_the_question_s_words_is_located_and_the_question_alone_is_not_evidence():
    """The judge often restates the question around the copied fragment (a stored row of the dev sample); those words
    are copied from the question, not invented. A quote that only repeats the question adds nothing, even when a
    chunk holds the question verbatim (an FAQ heading)."""
    question = "When does the JupyterLab weekly dev meeting take place?"
    framed = "The JupyterLab weekly dev meeting takes place on Wednesdays 9:00 AM Pacific Time (USA)."
    check, _ = check_with(framed, "Wednesdays 9:00 AM", subject=())
    verdict = check(question, [JUPYTER])
    assert verdict.answerable, verdict
    assert locate_quote(framed, [JUPYTER]).coverage < 0.9  # without the question: "not in the documents"
    faq = Document("### How do I contact support?\n\nOpen a ticket at support.tidewell.io.", metadata={})
    check, _ = check_with("How do I contact support?", "support")
    assert check("How do I contact support?", [faq]).reason == "quote repeats the question"
    check, _ = check_with("Open a ticket at support.tidewell.io.", "a ticket")
    assert check("How do I contact support?", [faq]).answerable
    check, _ = check_with("The meeting takes place on Mondays 9:00 AM Pacific Time.", subject=())
    assert check(question, [JUPYTER]).reason == "quote not in the documents"  # framing does not excuse invention


def test_how_many_weeks_is_not_answered_by_a_row_that_counts_days():
    """The near miss of the dev sample that framing alone would pass: asked for weeks of parental leave in Lisbon, the
    judge quotes Lisbon's annual-leave row (days). The unit a "how many" asks for is a specific, in both languages."""
    leave = Document(
        "| Office | Annual leave |\n|---|---|\n| Lisbon | 25 working days per year, including the 22 statutory days |",
        metadata={"source": "employee_handbook.docx", "context_header": "employee_handbook > Annual leave"},
    )
    quote = "Lisbon office: 25 working days per year, including the 22 statutory days"
    check, _ = check_with(quote, "25", subject=())
    verdict = check("How many weeks of paid parental leave do employees in the Lisbon office receive?", [leave])
    assert verdict.reason == "specifics missing" and verdict.missing == ("How many weeks",)
    check, _ = check_with(quote, "25", subject=())
    assert check("How many days of annual leave do employees in the Lisbon office get?", [leave]).answerable
    row = "Lisbon | 25 working days per year, including the 22 statutory days"
    check, _ = check_with(row, "25", subject=())
    assert check("里斯本办公室的员工每年有多少天年假？", [leave]).answerable  # 天 ↔ days
    check, _ = check_with(row, "25", subject=())
    assert check("里斯本办公室的员工有几周带薪育儿假？", [leave]).missing == ("几周",)


def test_the_check_can_apply_the_answer_check_where_it_is_used():
    """`AnswerabilityCheck(check_answer=True)`: the quote is genuine and on topic, the short answer only repeats the
    question (a dev row: "Which version of docling-core introduced the Profiling API?" -> "Profiling API")."""
    profiling = Document("In docling-core, the Profiling API extracts statistics from documents.", metadata={})
    question = "Which version of docling-core introduced the Profiling API?"
    quote = "the Profiling API extracts statistics from documents"
    check, _ = check_with(quote, "Profiling API", subject=())
    assert check(question, [profiling]).answerable  # the quote check alone passes it
    check, _ = check_with(quote, "Profiling API", subject=(), check_answer=True)
    verdict = check(question, [profiling])
    assert verdict.reason == "answer repeats the question" and not verdict.answerable


def test_a_short_quote_that_adds_the_asked_figure_is_evidence_not_a_repeat_of_the_question():
    from lessons.agents.answerability import verify_evidence

    chunk = Document(page_content="atlas.md paragraph 0 says the marker is atlas-7420. Filler words here.")
    reason, match, *_ = verify_evidence(
        "What is the marker of atlas?", Evidence(quote="marker is atlas-7420", answer="atlas-7420"), [chunk]
    )
    assert reason == "answerable" and match is not None
    repeat = verify_evidence(
        "What is the marker of atlas?", Evidence(quote="the marker of atlas", answer="atlas"), [chunk]
    )[0]
    assert repeat == "quote repeats the question"
