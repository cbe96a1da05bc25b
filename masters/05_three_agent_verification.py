# ---
# jupyter:
#   agentic_rag:
#     quick_parameters:
#       N_DRILL: 1
#       N_IN_KB: 1
#       N_OUT_OF_KB: 1
#   jupytext:
#     cell_metadata_filter: tags,-all
#     notebook_metadata_filter: agentic_rag,-jupytext.text_representation.jupytext_version
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown]
# # 05 · Three agents that check each other: relevance, research, verification
#
# | | |
# |---|---|
# | **You will learn** | how a document processor (Docling, header chunks, hybrid BM25 + dense search) feeds three agents with typed decisions: a **relevance checker** that can stop before anything is written, a **research agent** that answers from the context only and cites its chunks, and a **verification agent** that sees the question, the draft and the context and sends unsupported drafts back — capped; how to *test* a verifier by planting false claims; what all this costs per question |
# | **Prerequisites** | notebook 00 (structured output), 01 (the knowledge base and its gold set), 02 (hybrid retrieval), 04 (the grading loop) |
# | **Time** | ≈ 18 min offline on a 2-core laptop the first time (104 small model calls; measured 17.6 min with none cached), seconds on a re-run (cached; measured 7.5 s); with DeepSeek not measured |
# | **Numbers in the text** | produced offline with Qwen2.5-Coder-1.5B-Instruct Q4_K_M (temperature 0) and multilingual-e5-small (4-bit); every number below is computed by the cell above it |
#
# Notebook 04 put a grader *before* the generator. This one also puts a checker *after* it:
#
# ```
# question → document processor (hybrid retriever) → relevance checker ─ NO_MATCH → "not in these documents"
#                                                           │ CAN_ANSWER / PARTIAL
#                                                           ↓
#                                               research agent ─ cannot answer → "not in these documents"
#                                                           ↓ draft + cited chunks
#                                               verification agent + claim checks ─ nothing stands against it → answer
#                                                           └─ not: re-research with the verifier's feedback (capped)
# ```
#
# Every arrow is chosen by a **typed field** — a Pydantic `Literal` or list that the model must fill, its claims checked against the context —
# never by searching the model's prose for "supported". The round counter lives in the graph's state
# and is advanced by the research step, and the router cannot re-research at the cap, so the loop ends
# by construction.

# %% tags=["parameters"]
# Parameters (the test suite runs this notebook with smaller values)
N_IN_KB = 10              # answerable gold questions in the evaluation (balanced en/zh)
N_OUT_OF_KB = 6           # questions whose answer is in no document (balanced en/zh)
N_DRILL = 12              # gold questions whose reference answers become drill drafts (balanced en/zh)
K = 4                     # chunks the hybrid retriever hands to the agents
MAX_RESEARCH_ROUNDS = 2   # research rounds per question, the first included
MAX_TOKENS = 400          # cap on every reply of the chat model
SEED = 5

# %%
import tempfile
import time
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from lessons.corpus import CORPUS_DIR, load_gold, sample_by_language
from lessons.models import get_chat_model, model_banner
from lessons.usage import USAGE

pd.set_option("display.max_colwidth", 90)
print(model_banner())
llm = get_chat_model(max_tokens=MAX_TOKENS)
gold = load_gold()

# %% [markdown]
# ## 1. The document processor
#
# `lessons.document_processor.process_documents` chains what notebooks 01 and 02 built, for *any* set
# of files: Docling conversion with validation and the content-hash JSON cache
# (`lessons.ingest.ingest`), chunks cut at the Markdown headings and capped in size, de-duplicated
# by content hash, and a hybrid retriever — dense (Chroma) and BM25 fused by reciprocal rank fusion.
# On the course knowledge base it rebuilds exactly the chunks of the `kb` index, so nothing is
# embedded again.

# %%
from lessons.document_processor import process_documents

kb = process_documents(CORPUS_DIR, index_name="kb", k=K)
print(kb.summary())
pd.Series([c.metadata["source"] for c in kb.chunks]).value_counts().rename("chunks").to_frame().T

# %% [markdown]
# Bad input is skipped with a reason that names the file and the fix — an unsupported type, an empty
# file, a second copy of the same bytes. If *no* file is readable, `process_documents` raises
# `NoDocumentsError` listing every reason (the chat panel below shows that message instead of a
# traceback).

# %%
from lessons.document_processor import NoDocumentsError

with tempfile.TemporaryDirectory() as folder:
    folder = Path(folder)
    (folder / "notes.rtf").write_text("{\\rtf1 hello}")
    (folder / "empty.txt").write_text("")
    try:
        process_documents(folder)
    except NoDocumentsError as error:
        print(f"{type(error).__name__}: {error}")

# %%
example = next(q for q in gold if q.id == "en-052")  # the Team-plan price: the Q3 deck disagrees with the rest
print(example.question)
pd.DataFrame([{"source": d.metadata["source"], "page": d.metadata.get("page"), "fused score": round(d.metadata["score"], 4),
               "chunk": d.page_content[:110].replace("\n", " ")} for d in kb.retrieve(example.question)])

# %% [markdown]
# ## 2. The relevance checker
#
# `RelevanceCheck` has one field, `label: Literal["CAN_ANSWER", "PARTIAL", "NO_MATCH"]`, given for
# the top-k chunks **together**. The prompt says that *any* mention of the question's topic is
# `PARTIAL`: the checker is a cheap early exit for questions the documents do not touch at all, not a
# judge of whether the answer is there — that is the research agent's and the verifier's job.
# `NO_MATCH` goes straight to the honest "not in these documents" answer; nothing is written.

# %%
from lessons.three_agents import RelevanceCheck, check_relevance

print(RelevanceCheck.model_json_schema()["properties"]["label"])
probes = {
    "in the documents": next(q for q in gold if q.id == "en-001").question,
    "same company, not in the documents": next(q for q in gold if q.type == "out_of_kb" and q.language == "en").question,
    "unrelated": "What is the boiling point of ethanol at sea level?",
}
pd.DataFrame([{"question": text, "kind": kind, "label": check_relevance(llm, text, kb.retrieve(text))}
              for kind, text in probes.items()])

# %% [markdown]
# ## 3. The research agent
#
# `ResearchDraft` asks for the `answer` first, then `cited_chunks` (numbers of the context chunks it
# used), then `found` — the order notebook 04 found to matter for a small model. The context is
# numbered and each chunk carries its source and page, so a cited number maps back to a `Citation`
# (source, page, chunk id). A draft with `found = "no"` is never verified: it becomes the honest
# answer.

# %%
from lessons.three_agents import citations_for, research

question = next(q for q in gold if q.id == "en-001")
context = kb.retrieve(question.question)
draft = research(llm, question.question, context)
print(question.question)
print(draft)
citations_for(draft.cited_chunks, context)

# %% [markdown]
# ## 4. The verification agent
#
# The verifier sees the **question**, the draft and the same context. A verifier that is not shown the
# question cannot tell a true answer to a different question from a good one — a known bug in popular
# tutorials. Its verdict is typed: two lists (claims the context does not state, claims it
# contradicts), then `supported` and `relevant` as `Literal["yes", "no"]`. The lists come first so the
# model writes down what it found before it decides.
#
# A 1.5B verifier is a noisy witness, though (section 6 measures it): it lists phrases it copied from
# the context, sentences the draft never said, and the draft itself when the context says it in
# other words, and its yes/no fields said "no" to most *known-correct* drafts. So the workflow asks
# for **reasons and checks them** — with string matching, no model (`lessons.claim_check`):
#
# - a listed claim **stands** only if the draft says it and the context does not (a figure of the
#   claim missing from every chunk, or more than one of its words — two Chinese character pairs — missing);
# - every **figure** of the draft must occur in a chunk: a changed number is the most common
#   hallucination, and string matching catches it every time;
# - a draft **sentence** that shares almost nothing with the context (¾ of its words missing) is
#   flagged: a sentence added from elsewhere.
#
# A draft passes when nothing stands against it. `supported` and `relevant` stay in the report, but a
# "no" without a reason that stands does not send a draft back.
#
# ### Exercise 1 — write the verdict schema
#
# Write `MyVerdict`, a Pydantic model with `unsupported_claims` and `contradictions` (lists of
# strings, each with a `Field(description=...)`), then `supported` and `relevant`, each
# `Literal["yes", "no"]`. The check parses a scripted model reply into it.

# %% tags=["exercise"]
from typing import Literal

from pydantic import BaseModel, Field


class MyVerdict(BaseModel):
    ### BEGIN SOLUTION
    unsupported_claims: list[str] = Field(description="statements in the draft that the context does not state")
    contradictions: list[str] = Field(description="statements in the draft that the context contradicts")
    supported: Literal["yes", "no"] = Field(description="'yes' only if every statement is stated in the context")
    relevant: Literal["yes", "no"] = Field(description="'yes' if the draft answers the question asked")
    ### END SOLUTION


# %%
from checks.nb05 import check_verdict_schema

check_verdict_schema(MyVerdict)

# %% [markdown]
# The course's version is `lessons.three_agents.Verification`. Here it judges the draft above, and
# the same draft with its first figure changed (`plant_changed_figure`, section 6 uses it at scale):
# what the model listed (`model_verdict`) next to what still stands after the checks (`verify`).

# %%
from lessons.three_agent_eval import plant_changed_figure
from lessons.three_agents import model_verdict, verify

tampered = plant_changed_figure(draft.answer) or draft.answer + " It was approved by Marcus Lindqvist."
rows = []
for text in [draft.answer, tampered]:
    said, checked = model_verdict(llm, question.question, text, context), verify(llm, question.question, text, context)
    rows.append({"draft": text, "supported": said.supported, "relevant": said.relevant,
                 "the model listed": said.unsupported_claims + said.contradictions,
                 "what stands": checked.unsupported_claims + checked.contradictions, "passed": checked.passed})
pd.DataFrame(rows)


# %% [markdown]
# ## 5. The workflow, and the rule after verification
#
# After the verifier, three things can happen: **accept** (the draft passed), **re-research** (it did
# not, and rounds remain — the research agent gets the rejected draft and the verifier's findings),
# or **give up** at the cap (the last draft is returned, marked *unverified*, with the verification
# report, so a reader sees what was not supported).
#
# ### Exercise 2 — write the routing rule
#
# `verification` is the checked verdict (what `verify` returns: only claims that stand are left in
# its lists). Return `"accept"` when nothing is listed against the draft — both lists empty, whatever
# `supported` says; otherwise `"re_research"` while `research_round < max_rounds`, and `"give_up"` at
# (or past) the cap. (With a verifier you have measured to be reliable — DeepSeek, say — the course's
# `decide_after_verification(..., trust_yes_no=True)` and `run_three_agents(..., trust_yes_no=True)`
# also send back a draft called unsupported or irrelevant without a listed reason.)

# %% tags=["exercise"]
def route_after_verification(verification, research_round, max_rounds):
    ### BEGIN SOLUTION
    if not verification.unsupported_claims and not verification.contradictions:
        return "accept"
    return "give_up" if research_round >= max_rounds else "re_research"
    ### END SOLUTION


# %%
from checks.nb05 import check_routing_rule

check_routing_rule(route_after_verification)

# %% [markdown]
# `lessons.three_agents.build_three_agent_graph` wires the steps into a LangGraph graph with
# `decide_after_verification` as the rule; `run_three_agents(question, retriever=..., llm=...)` runs
# it and returns a `ThreeAgentResult`: answer, abstained, citations, the context the research agent
# read, the verification report and a trace of every step (notebook 06 evaluates it). The unit tests
# (`tests/test_three_agents.py`) run it with a scripted model: a rejected draft is re-researched with
# the feedback in the prompt, and a verifier that always rejects ends at the cap.

# %%
from lessons.three_agents import build_three_agent_graph, run_three_agents

graph = build_three_agent_graph(llm, kb.retrieve, MAX_RESEARCH_ROUNDS)
display(Markdown("```mermaid\n" + graph.get_graph().draw_mermaid() + "\n```"))


def show(result):
    display(pd.DataFrame([{"step": s.step, "round": s.round, "decision": s.decision, "detail": s.detail[:140],
                           "seconds": round(s.seconds, 1)} for s in result.trace]))
    print(f"→ {result.outcome}: {result.answer}")
    for c in result.citations:
        print(f"   cites {c.source}" + ("" if c.page is None else f", page {c.page}") + f" [{c.chunk_id}]")


show(run_three_agents(example.question, retriever=kb.retrieve, llm=llm, max_research_rounds=MAX_RESEARCH_ROUNDS))

# %% [markdown]
# ## 6. Does the verifier catch anything? A hallucination drill
#
# A verifier that says "supported" to everything looks fine on good answers. To test it, give it
# drafts whose truth we *know*: for each drill question, the context is the chunks that hold its gold
# evidence, and the drafts are
#
# - the **reference answer** (correct: a flag here is a *false alarm*);
# - the reference with its first figure raised by about 20% (`plant_changed_figure`: €45 → €54);
# - the reference plus a sentence crediting an invented person (`plant_invented_name`).
#
# A planted draft that is flagged is a **catch**. The table says who caught it: a claim the verifier
# listed that still stood after the checks, or the string checks alone (figures, added sentences) —
# and the last column shows what the model's own yes/no would have done (`supported` or `relevant`
# "no"), the rule this notebook does *not* use.

# %%
from lessons.three_agent_eval import drill_summary, run_drill
from lessons.document_processor import chunk_files


drill_questions = sample_by_language([q for q in gold if q.type in ("fact", "table")], N_DRILL, SEED)
cases = run_drill(llm, drill_questions, kb.chunks)
drill = pd.DataFrame(drill_summary(cases)).set_index("draft")
drill

# %%
catch_rate = drill.loc[["changed figure", "invented name"], "flagged"]
false_alarms = drill.loc["correct", "flagged"]
columns = ["flagged", "by the verifier's list", "by the string checks", "by the model's yes/no"]
ax = drill[columns].plot.barh(figsize=(8, 3.5), xlim=(0, 1.05))
ax.set_xlabel("share of drafts flagged (correct drafts: false alarms)")
ax.set_title("Hallucination drill: who catches what")
plt.tight_layout()
plt.show()
print(f"Catch rate: changed figure {catch_rate['changed figure']:.0%}, invented name {catch_rate['invented name']:.0%}; "
      f"false alarms on correct drafts {false_alarms:.0%} ({len(cases)} verifier calls).")

# %%
pd.DataFrame([{"id": c.id, "draft": c.kind, "flagged": c.flagged, "unsupported": " | ".join(c.unsupported)[:100],
               "text": c.draft[:90]} for c in cases])

# %% [markdown]
# **What our drill says** (12 questions, 6 English and 6 Chinese; 32 verifier calls — 8 of the
# reference answers had a figure to change):
#
# - **No false alarms with the checked lists: 0 of 12 correct drafts flagged.** The model's own
#   yes/no said "no" to 7 of the 12 (58%) — while saying "no" to 5 of 8 changed figures and only 3 of
#   12 invented names. A rule on `supported`/`relevant` would reject more than half of the correct
#   answers and still miss most planted names: no better than a coin.
# - **Changed figures: 6 of 8 caught**, all by the figure check; the verifier's list alone caught 2.
#   The two misses are instructive: 25 → 30 working days (30 occurs elsewhere in the context), and
#   L3/L4 → L4/L4 (a level label, also in the context). A string check knows *that* a figure is in the
#   context, not *where*.
# - **Invented names: 12 of 12 caught** by the sentence check (the added sentence shares almost nothing
#   with the context); the verifier's list named it in 4 of 12, all English — in Chinese never.
#
# The drill tests what it plants. A 1.5B verifier is a weak witness; cheap, deterministic checks on
# the draft carry most of the weight here — and they would stay useful next to a stronger model.

# %% [markdown]
# ## 7. The whole workflow on the gold set
#
# A seeded sample, balanced between English and Chinese, of answerable questions and out-of-KB
# questions, plus the **contradiction** question (the Q3 deck says the Team plan costs €54, the white
# paper and the FAQ say €45). Per question: the outcome, whether the answer is **correct** (judged
# against the reference answer by the same model, a typed yes/no — a 1.5B judge is lenient, read the
# table), whether the final draft was **fully supported** by the verifier, abstention on out-of-KB
# questions, research rounds, latency and tokens (the judge's tokens excluded).

# %%
from tqdm.auto import tqdm

from lessons.three_agent_eval import evaluate_question, summarise_runs

sample = sample_by_language([q for q in gold if q.answerable and q.type != "contradiction"], N_IN_KB, SEED) + \
         sample_by_language([q for q in gold if not q.answerable], N_OUT_OF_KB, SEED) + \
         [q for q in gold if q.type == "contradiction"]
start = time.perf_counter()
runs = [evaluate_question(q, retriever=kb.retrieve, llm=llm, max_research_rounds=MAX_RESEARCH_ROUNDS) for q in tqdm(sample)]
seconds = time.perf_counter() - start
print(f"{len(runs)} questions in {seconds:.0f} s")
summary = pd.DataFrame(summarise_runs(runs)).set_index("language")
summary.round(2).T

# %%
metrics = ["correct (in-KB)", "answered (in-KB)", "fully supported (of answered)", "abstention (out-of-KB)", "re-researched"]
fig, (ax, ax_time) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [3, 1.4]})
summary.loc[["en", "zh"], metrics].T.plot.barh(ax=ax)
ax.set_xlim(0, 1.05)
ax.set_xlabel("share of questions")
ax.set_title("Three agents on the gold sample, by language")
pd.DataFrame({"seconds": [r.seconds for r in runs], "outcome": [r.outcome for r in runs]}).boxplot(
    column="seconds", by="outcome", ax=ax_time, rot=20)
ax_time.set_title("Latency per question")
fig.suptitle("")
plt.tight_layout()
plt.show()
overall = summary.loc["all"]
print(f"Correct: {overall['correct (in-KB)']:.0%} of in-KB questions; fully supported: "
      f"{overall['fully supported (of answered)']:.0%} of answered; abstention on out-of-KB: {overall['abstention (out-of-KB)']:.0%}.")
print(f"Cost: {overall['seconds per question']:.0f} s, {overall['tokens per question']:.0f} tokens and "
      f"{overall['LLM calls per question']:.1f} LLM calls per question (cached calls count their tokens).")

# %%
pd.DataFrame([{"id": r.id, "type": r.type, "outcome": r.outcome, "correct": r.correct, "supported": r.supported,
               "rounds": r.research_rounds, "answer": r.answer[:110]} for r in runs])

# %% [markdown]
# ### The contradiction case
#
# Two sources disagree on a price. An acceptable answer states the conflict or follows the sources
# that agree with each other (€45); an answer that quotes only the Q3 deck's €54 is wrong.
# `contradiction_handling` reads which of these the answer did.

# %%
from lessons.three_agent_eval import contradiction_handling

contradiction = next(r for r in runs if r.type == "contradiction")
show(contradiction.result)
print("\nContradiction handling:", contradiction_handling(contradiction.answer))

# %% [markdown]
# **What our run says** (17 questions: 10 answerable, 6 out-of-KB, the contradiction; K = 4, two
# research rounds at most):
#
# - **Answerable questions: all answered, 82% correct** (9 of 11 with the contradiction question;
#   English 5 of 6, Chinese 4 of 5 — zh-034 named the edition but not the seats of a two-part
#   question). 91% of the answers passed the checks in the first or second round; one correct English
#   answer ("…which suggests a problem with the clock skew…") stayed *unverified* after two rounds:
#   its reasoning words are in no chunk.
# - **Out-of-KB: English 3 of 3 abstained, Chinese 0 of 3.** The research agent said `found = "no"`
#   to the English ones. The Chinese ones ask about customers the documents *do* describe (明湖银行's
#   upgrade hours, the year 林晓雯 joined, 江南物流's servers) and got "12 小时", "2026" and "1,200" —
#   figures that are in the context but answer other questions. Every check passed: they test that
#   an answer *comes from* the context, not that it *answers the question*, and the verifier's
#   `relevant` said "yes" each time. Notebook 04's grader failed on the same kind of question; a
#   relevance judgement of the question against the evidence is the open problem a stronger model
#   (DeepSeek) or notebook 06's evaluation should watch.
# - **The contradiction**: the answer gave €45 and cited the white paper *and the Q3 deck* — the chunk
#   that says €54 — without a word about the conflict. `contradiction_handling` says it followed the
#   consistent sources; the judge marked it wrong because the reference names the conflict. The
#   figure check passed (45 is in the context), and the verifier listed no contradiction.
# - **Cost**: 2.9 model calls and ≈ 3,200 tokens per question; 1 of 17 re-researched. On a 2-core
#   machine shared with another notebook run, 44 s per question (English 23 s, Chinese 68 s; the
#   Chinese prompts were longer, 3,800 tokens per question against 2,700).

# %% [markdown]
# ## 8. The chat panel
#
# Upload your own files (PDF, DOCX, PPTX, HTML, Markdown, text, XLSX, CSV) or ask about the course
# knowledge base. The panel shows the answer, its citations, the verification report and the agent
# trace; a bad file or a failing model shows up as a message in the panel. The callbacks are
# `lessons.chat_panel.ChatPanel.on_upload` / `on_ask`, tested without a browser in
# `tests/test_chat_panel.py`.

# %%
from lessons.chat_panel import ChatPanel

panel = ChatPanel(llm, retriever=kb.retrieve, max_research_rounds=MAX_RESEARCH_ROUNDS)
panel.question.value = example.question
panel

# %%
print(USAGE.report())
