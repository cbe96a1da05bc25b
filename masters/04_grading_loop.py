# ---
# jupyter:
#   agentic_rag:
#     quick_parameters:
#       CANDIDATES: 6
#       K: 2
#       MAX_ROUNDS: 2
#       N_CALIBRATION: 2
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
# # 04 · The grading loop: grade, rewrite, cap, and say "not in the knowledge base"
#
# | | |
# |---|---|
# | **You will learn** | how a relevance gate decides what the generator sees — and why it needs two judges: a relevance model (the cross-encoder) and the chat model's calibrated yes/no probability; why one relevant document is enough to stop; how a query rewrite and a retry cap make a loop that always ends; how an explicit "not in the knowledge base" answer beats one made up from the model's own knowledge — measured against the same pipeline without the gate, with the uncertainty a small sample carries |
# | **Prerequisites** | notebook 00 (structured output), notebook 01 (the knowledge base and its gold set), notebook 02 (hybrid search, the cross-encoder, P(yes) from log-probabilities) |
# | **Time** | offline on a 2-core laptop, a first Run All from an empty cache folder: **19.4 min** measured (1163 s, 102 chat-model calls; `benchmarks/bench_notebooks.py`, 1 Dec 2026, the course run in order, over the 10-minute budget; the test suite's notebook runs shared the machine (load average 5.5 at its end)); seconds on a re-run from the LLM cache; with DeepSeek not measured (no network where the course was written) |
# | **Numbers in the text** | computed by this run: offline with Qwen2.5-Coder-1.5B-Instruct Q4_K_M (temperature 0), multilingual-e5-small (4-bit) and ms-marco-MiniLM-L-12-v2 |
#
# A retriever always returns *something*. Ask the knowledge base about the CFO's name — which no
# document mentions — and you still get the chunks that look most like the question. A generator
# handed those chunks will often answer anyway. This notebook puts a **gate** between retrieval and
# generation:
#
# 1. **grade** every retrieved chunk: does it answer the question? (`yes` / `no`, a typed field — never a parsed
#    sentence; decided by calibrated scores rather than a small model's forced yes/no)
# 2. **stop** as soon as one chunk is relevant, and answer from the relevant chunks only;
# 3. otherwise **rewrite** the query (new keywords) and retrieve again — at most `MAX_ROUNDS` rounds;
# 4. at the cap, answer **"the knowledge base has no information on this"** — on its own path, not as a
#    prompt instruction the model may ignore.

# %% tags=["parameters"]
# Parameters (the test suite runs this notebook with smaller values)
N_IN_KB = 8         # answerable gold questions in the evaluation (balanced en/zh)
N_OUT_OF_KB = 8     # questions whose answer is in no document (balanced en/zh)
N_CALIBRATION = 6   # in-KB and out-of-KB questions (each, en/zh) to choose the gate on — never evaluated
MIN_ABSTENTION = 0.95  # the abstention goal the gate is chosen for
MIN_FIRST_ROUND = 0.90  # the goal for in-KB questions answered in the first round
MAX_ROUNDS = 2      # retrieval rounds before the loop gives up
K = 3               # chunks graded per round (the reranked top K)
CANDIDATES = 20     # hybrid results the cross-encoder reranks
SEED = 7

# %%
import time

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display
from langchain_classic.retrievers import ContextualCompressionRetriever

from lessons.ingest import load_gold, sample_by_language
from lessons.retrieval import build_index, chunk_knowledge_base
from lessons.core import get_chat_model, model_banner
from lessons.retrieval import default_reranker
from lessons.retrieval import bm25_retriever, dense_retriever, hybrid_retriever
from lessons.core import USAGE

pd.set_option("display.max_colwidth", 80)
print(model_banner())
llm = get_chat_model()
chunks = chunk_knowledge_base()
store = build_index(chunks)
search = ContextualCompressionRetriever(  # notebook 02's best: hybrid top 20, reranked by language, the top K kept
    base_retriever=hybrid_retriever(dense_retriever(store, CANDIDATES), bm25_retriever(chunks, CANDIDATES), k=CANDIDATES),
    base_compressor=default_reranker(top_n=K))


def retrieve(query):
    return search.invoke(query)


gold = load_gold()
in_kb = [q for q in gold if q.answerable]
out_of_kb = [q for q in gold if not q.answerable]
sample = sample_by_language(in_kb, N_IN_KB, SEED) + sample_by_language(out_of_kb, N_OUT_OF_KB, SEED)  # evaluated in section 5
held_out = [q for q in gold if q not in sample]
calibration = sample_by_language([q for q in held_out if q.answerable], N_CALIBRATION, SEED) + \
              sample_by_language([q for q in held_out if not q.answerable], N_CALIBRATION, SEED)
print(f"{len(chunks)} chunks indexed; {len(gold)} gold questions: {len(sample)} to evaluate, "
      f"{len(calibration)} others to calibrate the gate")

# %% [markdown]
# ## 1. Three graders on the same chunks
#
# `GradeDocuments` has one field, `binary_score: Literal["yes", "no"]`. Through `invoke_structured`
# the model *must* call a function with one of those two values — there is no "Yes, I think so" to
# parse. Next to that forced yes/no, two scores for the same chunks: the **cross-encoder's** relevance
# score (notebook 02's reranker, a model trained for this judgement) and the chat model's **P(yes)** —
# the probability of "yes" against "no" for one token, asked in the question's language
# (`lessons.retrieval.rerank.RELEVANCE_PROMPTS`). One question the knowledge base answers and one it does not:

# %%
from lessons.agents import GateThresholds, GradeDocuments, RelevanceGate, grade_documents

print(GradeDocuments.model_json_schema()["properties"])
scores_only = RelevanceGate(llm, {"en": GateThresholds(0.0, 0.0), "zh": GateThresholds(0.0, 0.0)})  # reads both scores
examples = {
    "in the knowledge base": next(q for q in gold if q.id == "en-001"),
    "not in the knowledge base": next(q for q in gold if q.type == "out_of_kb" and q.language == "en"),
}
rows = []
for label, question in examples.items():
    documents = retrieve(question.question)
    grades = grade_documents(llm, question.question, documents)
    for doc, grade, scored in zip(documents, grades, scores_only(question.question, documents)):
        rows.append({"question": question.question[:60], "kind": label, "chunk": doc.page_content[:60].replace("\n", " "),
                     "forced yes/no": grade, "cross-encoder": round(scored.cross_encoder, 3), "P(yes)": round(scored.p_yes, 3)})
pd.DataFrame(rows)

# %% [markdown]
# ## 2. Calibrate the gate on questions you will not evaluate on
#
# A 1.5B model forced to say yes or no is a coin with a bias: depending on the wording of the prompt it
# says "no" to nearly everything or "yes" to nearly everything. Its *probability* carries more, and
# the cross-encoder's score more again for English — but no single score separates "the answer is
# here" from "a near miss about the same customer" perfectly. So the gate combines them:
#
# > a chunk is relevant when its **cross-encoder score ≥ t₁** *and* the chat model's **P(yes) ≥ t₂**
#
# with t₁ and t₂ chosen **per language** on calibration questions the evaluation never sees:
# `calibrate_gate` picks the pair that answers the most in-KB questions in round one while abstaining
# on `MIN_ABSTENTION` of the out-of-KB ones. A chunk below t₁ is "no" without asking the chat model —
# the cheap judge filters for the slow one. t₁ = 0 means the cross-encoder is ignored (it is an English
# model; the calibration decides whether it helps on Chinese), t₂ = 0 that P(yes) is.
#
# For each calibration question we read both scores for its top-K chunks (K chat-model calls). The
# **separation** columns (AUC) give the chance that a random in-KB question's best score beats a random
# out-of-KB one's: 1.0 separates perfectly, 0.5 is a coin.

# %%
from tqdm.auto import tqdm

from lessons.agents import calibrate_gate, separation_auc, wilson_interval

calibration_rows = []
for question in tqdm(calibration, desc="calibration questions"):
    scored = scores_only(question.question, retrieve(question.question))
    calibration_rows.append({"id": question.id, "in KB": question.answerable, "language": question.language,
                             "pairs": [(g.cross_encoder, g.p_yes) for g in scored],
                             "best cross-encoder": max(g.cross_encoder for g in scored),
                             "best P(yes)": max(g.p_yes for g in scored)})
calibration_table = pd.DataFrame(calibration_rows)


def group(language, answerable):
    return calibration_table[(calibration_table["language"] == language) & (calibration_table["in KB"] == answerable)]


thresholds, menu = {}, []
for lang in ("en", "zh"):
    inside, outside = group(lang, True), group(lang, False)
    gate = thresholds[lang] = calibrate_gate(inside["pairs"].tolist(), outside["pairs"].tolist(), MIN_ABSTENTION)
    passes = lambda pairs: any(ce >= gate.cross_encoder and p >= gate.p_yes for ce, p in pairs)  # noqa: E731
    answered, abstained = sum(map(passes, inside["pairs"])), sum(not passes(p) for p in outside["pairs"])
    menu.append({
        "language": lang, "t₁ cross-encoder": round(gate.cross_encoder, 3), "t₂ P(yes)": round(gate.p_yes, 3),
        "separation, cross-encoder": separation_auc(inside["best cross-encoder"].tolist(), outside["best cross-encoder"].tolist()),
        "separation, P(yes)": separation_auc(inside["best P(yes)"].tolist(), outside["best P(yes)"].tolist()),
        "in-KB answered (calibration)": f"{answered}/{len(inside)}",
        "out-of-KB abstained (calibration)": f"{abstained}/{len(outside)}",
        "95% interval, abstention": "{:.2f}–{:.2f}".format(*wilson_interval(abstained, len(outside))),
    })  # fmt: skip
menu_table = pd.DataFrame(menu).set_index("language")
menu_table.round(2)

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 5))
for ax, lang in zip(axes, ("en", "zh")):
    for answerable, colour, label in ((True, "tab:green", "in-KB"), (False, "tab:red", "out-of-KB")):
        rows = group(lang, answerable)
        ax.scatter(rows["best cross-encoder"], rows["best P(yes)"], color=colour, label=label, s=40, alpha=0.8)
    gate = thresholds[lang]
    ax.axvline(gate.cross_encoder, color="black", linestyle="--", linewidth=1)
    ax.axhline(gate.p_yes, color="black", linestyle="--", linewidth=1)
    ax.fill_between([gate.cross_encoder, 1.02], gate.p_yes, 1.02, color="tab:green", alpha=0.08, label="the gate lets through")
    ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.02), xlabel="best cross-encoder score among the top K",
           ylabel="best P(yes) among the top K", title=f"{lang}: calibration questions and the chosen gate")
    ax.legend(loc="lower right", fontsize=8)
plt.tight_layout()
plt.show()


# %% [markdown]
# Read the charts as the gate's menu: a question is answered in round one when one of its chunks lies in
# the shaded corner. Where green and red points mix, no pair of thresholds separates in-KB from
# out-of-KB questions — that overlap, not the code, is what limits the gate. A stronger chat model
# (DeepSeek) or a multilingual cross-encoder pulls them apart; re-run this section with one and the
# thresholds move. With a handful of questions per cell, the intervals in the table are wide: one
# question moves a rate by many points.

# %% [markdown]
# ## 3. The stop rule: one relevant chunk is enough
#
# Why not wait until *all* retrieved chunks are relevant? Because top-k retrieval almost never returns
# k relevant chunks: most questions are answered by one or two passages, and the others are near
# misses. "All relevant" would send good queries to rewriting, burn rounds and tokens, and end at the
# cap with an "I don't know" for questions the knowledge base *does* answer. "At least one" stops as
# soon as there is something to answer from — and the generator is then shown only the chunks graded
# relevant.
#
# ### Exercise 1 — write the stop rule
#
# Return `"generate"` when at least one grade is `"yes"`; otherwise `"rewrite"` while rounds remain
# (`round_number < max_rounds`), and `"not_in_kb"` at the cap.

# %% tags=["exercise"]
def decide(grades, round_number, max_rounds):
    ### BEGIN SOLUTION
    if "yes" in grades:
        return "generate"
    return "not_in_kb" if round_number >= max_rounds else "rewrite"
    ### END SOLUTION


# %%
from checks.nb04 import check_stop_rule

check_stop_rule(decide)

# %% [markdown]
# ## 4. The loop as a graph
#
# `lessons.agents.grading.build_grading_loop` wires the steps into a small LangGraph graph. The round counter
# lives in the state and only the `retrieve` step advances it — a router that counted would lose the
# change — and the router cannot pick `rewrite` once the cap is reached, so the loop ends by
# construction (a test runs it with a grader that always says "no"). The grader is the calibrated gate.
#
# The rewrite step asks for a *new* query with other keywords. Small models like to hand the question
# back unchanged, which would only fetch the same chunks again; `new_query` catches that and searches
# the question plus the keywords not tried yet instead.

# %%
from lessons.agents import answer_without_grading, build_grading_loop

grader = RelevanceGate(llm, thresholds)
loop = build_grading_loop(llm, retrieve, max_rounds=MAX_ROUNDS, grader=grader)
display(Markdown("```mermaid\n" + loop.get_graph().draw_mermaid() + "\n```"))


# %%
def show_trace(state):
    trace = pd.DataFrame([{"round": s.round, "query": s.query, "grades": " ".join(s.grades),
                           "cross-encoder": " ".join(f"{c:.2f}" for c in s.cross_encoder),
                           "P(yes)": " ".join("—" if p is None else f"{p:.2f}" for p in s.p_yes), "decision": s.decision}
                          for s in state["trace"]])
    display(trace)
    print(f"→ {state['outcome']}: {state['answer']}")


for question in examples.values():
    print(question.question)
    show_trace(loop.invoke({"question": question.question}))

# %% [markdown]
# A "—" under P(yes) is a chunk the cross-encoder ruled out: the chat model was not asked.
#
# ### Exercise 2 — the honest fallback
#
# At the cap the loop answers from no document at all. Write `honest_answer(question)`: a fixed
# sentence saying the knowledge base has no information on this, **in the question's language**
# (English, or Chinese for a Chinese question — `lessons.text.language.detect_language` tells which). It must
# not call a model: a model asked to "answer anyway" is exactly how made-up answers happen.

# %% tags=["exercise"]
from lessons.text import detect_language


def honest_answer(question):
    ### BEGIN SOLUTION
    if detect_language(question) == "zh":
        return "知识库中没有关于这个问题的信息。"
    return "The knowledge base has no information on this question."
    ### END SOLUTION


# %%
from checks.nb04 import check_honest_answer

check_honest_answer(honest_answer)

# %% [markdown]
# ## 5. Gated vs ungated, measured
#
# The same retriever, the same model, the same answer prompt (which also lets the model say it found
# nothing). The only difference: the **ungated** pipeline hands the top-K chunks straight to the
# generator; the **gated** one grades them first, rewrites up to the cap, and answers from relevant
# chunks only. A seeded sample of gold questions, balanced between English and Chinese.

# %%
from lessons.agents import goal_table, run_question, summarise
from lessons.evaluation import relevance_labels

start = time.perf_counter()
results = [run_question(loop, lambda text: answer_without_grading(llm, retrieve, text), q) for q in tqdm(sample)]
seconds = time.perf_counter() - start
print(f"{len(results)} questions in {seconds:.0f} s ({seconds / len(results):.1f} s per question, both pipelines)")
summary = pd.DataFrame(summarise(results)).set_index("language")
summary.round(2).T

# %%
goals = pd.DataFrame(goal_table(results, MIN_ABSTENTION, MIN_FIRST_ROUND))
goals

# %%
metrics = ["abstention (out-of-KB), ungated", "abstention (out-of-KB), gated",
           "answer rate (in-KB), ungated", "answer rate (in-KB), gated", "first-round stop (in-KB)"]
fig, (ax, ax_rounds) = plt.subplots(1, 2, figsize=(12, 4), gridspec_kw={"width_ratios": [3, 1.2]})
summary.loc[["en", "zh"], metrics].T.plot.barh(ax=ax)
ax.set_xlim(0, 1.05)
ax.set_xlabel("share of questions")
ax.set_title("Gated vs ungated, by language")
pd.Series([r.rounds for r in results]).value_counts().sort_index().plot.bar(ax=ax_rounds, color="tab:gray", rot=0)
ax_rounds.set_xlabel("rounds used")
ax_rounds.set_title("Rounds per question")
plt.tight_layout()
plt.show()

# %% [markdown]
# Where the two pipelines disagree is where the gate earns (or loses) its keep. An out-of-KB question
# the ungated pipeline "answered" is a hallucination caught; an in-KB question the gate refused is the
# price: the gate judged every retrieved chunk irrelevant, or retrieval never found the evidence in
# `MAX_ROUNDS` tries. Read them:

# %%
rows = []
for r in results:
    if r.gated_outcome != r.ungated_outcome:
        rows.append({"id": r.id, "in KB": r.answerable, "gated": r.gated_outcome, "ungated": r.ungated_outcome,
                     "ungated answer": r.ungated_answer[:120], "queries tried": " | ".join(s.query for s in r.trace)})
pd.DataFrame(rows) if rows else print("The two pipelines agreed on every question of this sample.")

# %% [markdown]
# ### What this run showed
#
# Written by the notebook from the tables above. One more number first: how often the reranked top K
# holds the evidence at all — no gate can stop in round one more often than retrieval allows.

# %%
from lessons.agents import gate_findings

in_kb_sample = [q for q in sample if q.answerable]
evidence_in_top_k = {q.id: any(relevance_labels([d.page_content for d in retrieve(q.question)], q.evidence))
                     for q in in_kb_sample}
display(Markdown(gate_findings(results, menu_table, goals, evidence_in_top_k, k=K, max_rounds=MAX_ROUNDS)))

# %%
print(USAGE.report())
