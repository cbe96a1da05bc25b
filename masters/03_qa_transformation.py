# ---
# jupyter:
#   agentic_rag:
#     quick_parameters:
#       MAX_PAIRS: 2
#       N_PROPERTY_CHUNKS: 1
#       N_QA_CHUNKS: 3
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
# # 03 · QA transformation: index the questions your chunks answer
#
# | | |
# |---|---|
# | **You will learn** | how to replace LangChain's removed `DoctranQATransformer` with structured output; how to make an LLM document transformer that never crashes, never costs twice and never overflows the context window; whether question/answer documents actually help retrieval (measured, chunks vs QA vs hybrid); the other doctran jobs — cleaning PDF text, extracting dates, extracting properties |
# | **Prerequisites** | notebooks 00 (structured output) and 01 (the knowledge base, chunks, the gold set, hit@k and MRR) |
# | **Time** | offline on a 2-core laptop, a first Run All from an empty cache folder: **9.1 min** measured (548 s, 34 chat-model calls; `benchmarks/bench_notebooks.py`, 1 Dec 2026, the course run in order; the test suite's notebook runs shared the machine for part of it); seconds on a re-run from the LLM cache; with DeepSeek not measured (no network where the course was written) |
# | **Numbers in the text** | produced offline with Qwen2.5-Coder-1.5B-Instruct Q4_K_M (temperature 0) and multilingual-e5-small (4-bit) |
#
# A user asks *"How long do I have to use my leftover holidays in Lisbon?"*; the handbook says *"Up to 5
# unused days may be carried over until 30 April of the following year"*. The words barely overlap.
# **QA transformation** asks a language model, once, at indexing time, which questions each chunk
# answers, and indexes those questions too: a user's question is then compared with *questions*.
#
# LangChain used to ship this as `DoctranQATransformer`. It is gone from LangChain 1.x, and the
# `doctran` package it wrapped pins `openai<0.28` and `pydantic<2`, so it cannot be installed next to
# anything current. This notebook builds the replacement the LangChain 1.x way:
#
# | doctran job | replacement here | model? |
# |---|---|---|
# | `DoctranQATransformer` | `lessons.qa_transform.QATransformer` — structured output into `QAPairList` | yes |
# | `DoctranTextTranslator` / cleaning | `lessons.doc_transforms.TextCleaner` — PDF hyphenation and hard wraps | no |
# | date handling | `lessons.doc_transforms.DateExtractor` — patterns + python-dateutil, English and Chinese | no |
# | `DoctranPropertyExtractor` | `lessons.doc_transforms.PropertyExtractor` — structured output into *your* schema | yes |

# %% tags=["parameters"]
# Parameters (the test suite runs this notebook with smaller values)
N_QA_CHUNKS = 30        # chunks sent to the model (one call each): gold-evidence chunks plus a seeded sample of others;
                        # 60 or more for a firmer comparison in section 8 (each chunk adds a model call)
MAX_PAIRS = 3           # question/answer pairs asked for per chunk
N_PROPERTY_CHUNKS = 4   # release-note chunks for the property extractor (one call each)
SEED = 3

# %%
import logging
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from lessons.models import get_chat_model, model_banner
from lessons.usage import USAGE

logging.basicConfig(format="%(levelname)s %(name)s: %(message)s")
pd.set_option("display.max_colwidth", 90)
timings = {}
print(model_banner())
llm = get_chat_model()

# %% [markdown]
# ## 1. The chunks we will transform
#
# Generating pairs costs the local model one call per chunk (section 2 times one), so the notebook does
# not transform every chunk of the knowledge base, only `N_QA_CHUNKS` of them. `select_chunks` draws a
# seeded sample: a share `evidence_share=0.7` of it are chunks that hold the evidence of randomly drawn
# gold questions (so we can measure retrieval on them), the rest are other chunks, so retrieval still has
# to find the right one among distractors. The same sample is used for every comparison below.

# %%
from lessons.corpus import load_gold
from lessons.knowledge_base import chunk_knowledge_base
from lessons.qa_transform import evidence_chunk_ids, select_chunks

chunks = chunk_knowledge_base()
gold = load_gold()
sample = select_chunks(chunks, gold, N_QA_CHUNKS, seed=SEED)
holds_evidence = set().union(*(evidence_chunk_ids(sample, q.evidence) for q in gold if q.answerable))
composition = pd.crosstab(
    pd.Series([c.metadata["language"] for c in sample], name="language"),
    pd.Series(["gold evidence" if c.metadata["chunk_id"] in holds_evidence else "other" for c in sample], name="chunk"),
    margins=True, margins_name="total",
)
print(f"{len(chunks)} chunks in the knowledge base; {len(sample)} in the sample")
composition

# %% [markdown]
# ## 2. A schema, a prompt, and one chunk
#
# Structured output is the whole trick: the model must *call a function* whose arguments are a
# `QAPairList` — a list of `QAPair(question, answer)` with `Field(min_length=1, max_length=n)`.
# On DeepSeek the list bound is checked after the reply (a violation is a parse error and a retry); on
# our local llama.cpp server the schema becomes a grammar, so the model *cannot* emit more than `n` pairs.
#
# The prompt forbids anything outside the chunk, asks for the facts people search for (figures,
# definitions, steps, decisions), lets the model write fewer pairs when the text is thin, and names the
# chunk's language so Chinese chunks get Chinese questions.

# %%
import json

from langchain_core.utils.function_calling import convert_to_openai_tool

from lessons.qa_transform import QA_SYSTEM_PROMPT, QAPair, QAPairList, qa_messages, qa_pair_list_schema

print(json.dumps(convert_to_openai_tool(qa_pair_list_schema(MAX_PAIRS))["function"]["parameters"]["properties"]["pairs"], indent=1)[:700])
print("\n--- the system prompt for this chunk ---")
example = next(c for c in sample if c.metadata["chunk_id"] in holds_evidence)
for message in qa_messages(example, MAX_PAIRS):
    print(f"[{message.type}]\n{message.content}\n")

# %%
from lessons.qa_transform import QACache, QATransformer

qa = QATransformer(llm, max_pairs=MAX_PAIRS, cache=QACache())
start = time.perf_counter()
(one,) = qa.generate([example])
timings["QA pairs for one chunk"] = time.perf_counter() - start
print(f"status {one.status!r}, asked for {one.tried or '(from the QA cache)'} pair(s), "
      f"model time when generated {one.generation_seconds:.1f} s")
pd.DataFrame([pair.model_dump() for pair in one.pairs])

# %% [markdown]
# ## 3. When the reply does not fit: ask for fewer pairs
#
# `invoke_structured` already retries a reply that does not parse, with the parse error in the
# conversation. If it still fails, asking for *fewer* pairs is the cheapest fix: a shorter answer is
# less likely to be cut off or to break the JSON. The transformer asks for `n`, then `n // 2`, … down to
# 1 (`fewer_pairs_schedule`). When even one pair fails, the chunk yields **an empty list** — the chunk
# is still indexed as a chunk, the failure is logged and counted in the report. A batch of 300 chunks
# must never die on chunk 217, and code downstream must never receive `None`.
#
# Only a reply that does not fit the schema (`StructuredOutputError`) means "ask for fewer". A server
# that is down is a different failure: asking again for fewer pairs cannot help.

# %% [markdown]
# ### Exercise 1 — the retry policy
#
# Write `first_valid_pairs(ask, max_pairs)`. `ask(n)` asks the model for at most `n` pairs and returns
# a list of `QAPair`, or raises `StructuredOutputError`. Call it for each `n` in
# `fewer_pairs_schedule(max_pairs)` and return the first list you get; return `[]` when every call
# failed. Let any other exception through.

# %% tags=["exercise"]
from lessons.qa_transform import fewer_pairs_schedule
from lessons.structured import StructuredOutputError

print("schedule for 4:", fewer_pairs_schedule(4), "· for 3:", fewer_pairs_schedule(3))


def first_valid_pairs(ask, max_pairs):
    ### BEGIN SOLUTION
    for count in fewer_pairs_schedule(max_pairs):
        try:
            return ask(count)
        except StructuredOutputError:
            continue
    return []
    ### END SOLUTION


# %%
from checks.nb03 import check_fewer_pairs

check_fewer_pairs(first_valid_pairs)

# %% [markdown]
# ## 4. Will it fit? The context budget
#
# A QA request holds the rules, the chunk, the function schema, and must leave room for the answer.
# If the total comes close to the context window, llama.cpp shortens the answer to fit and the JSON is
# cut off mid-string — a parse error that no retry fixes. The transformer estimates every request
# before it starts (one token per Chinese character, one per four other characters: conservative,
# no tokenizer needed) and warns when a request needs more than `70%` of the window:
# `get_settings().n_ctx` locally (4,096 tokens by default), 64k on DeepSeek.

# %%
from lessons.qa_transform import ContextBudgetWarning, context_budgets

budgets = context_budgets(chunks, MAX_PAIRS, qa.context_window)
totals = np.array([b.total for b in budgets])
fig, ax = plt.subplots(figsize=(8, 3.2))
ax.hist(totals, bins=30, color="tab:blue")
ax.axvline(budgets[0].limit, color="tab:red", linestyle="--", label=f"70% of {qa.context_window} tokens")
ax.set_xlabel("estimated tokens per QA request (rules + chunk + schema + answer)")
ax.set_ylabel("chunks")
ax.set_title("Every chunk of the knowledge base against the context budget")
ax.legend(loc="center right")
plt.show()
print(f"largest request ≈ {totals.max()} tokens; limit {budgets[0].limit}; over the limit: {sum(b.exceeded for b in budgets)}")

# %% [markdown]
# The histogram and the count above place the knowledge base's chunks against the limit. Skip the
# chunking step and hand the model a whole document instead, and the transformer warns before it spends
# a single call:

# %%
import warnings

from langchain_core.documents import Document

whole_guide = Document(
    page_content="\n\n".join(c.page_content for c in chunks if c.metadata["source"] == "atlas_admin_guide.md"),
    metadata={"chunk_id": "the-whole-admin-guide", "source": "atlas_admin_guide.md"},
)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always", ContextBudgetWarning)
    over = qa.check_budget([whole_guide])
print(f"{len(over)} request over budget")
for warning in caught:
    print(f"{warning.category.__name__}: {warning.message}")

# %% [markdown]
# ## 5. The whole sample, concurrently
#
# `await qa.agenerate(sample)` runs the chunks under an `asyncio.Semaphore`: at most 2 requests in flight
# on the local server (its two cores gain nothing from more), 8 on DeepSeek. Cached chunks skip the
# queue. In a notebook, `await` it: the kernel already runs an event loop, and the async HTTP client
# behind `ChatDeepSeek` stays bound to the loop it first ran on, so a second `asyncio.run(...)` would fail
# with "Event loop is closed". `qa.transform_documents(...)` does the same work with threads, for scripts.

# %%
calls_before = USAGE.totals.calls
start = time.perf_counter()
results = await qa.agenerate(sample)
first_build_seconds = time.perf_counter() - start
timings[f"QA pairs for {len(sample)} chunks (build 1)"] = first_build_seconds
qa_docs = qa.to_documents(sample, results)
report = qa.report()
print(report)
print(f"schema success rate: {report.schema_success_rate:.1%} of chunks got valid pairs "
      f"({report.first_try_rate:.1%} on the first request); LLM calls in this build: {USAGE.totals.calls - calls_before}")

# %%
outcomes = pd.DataFrame({
    "language": [c.metadata["language"] for c in sample],
    "status": [r.status for r in results],
    "pairs": [len(r.pairs) for r in results],
    "chunk characters": [len(c.page_content) for c in sample],
})
by_language = outcomes.groupby("language").agg(
    chunks=("status", "size"),
    valid=("status", lambda s: s.isin(["ok", "fewer"]).mean()),
    first_try=("status", lambda s: (s == "ok").mean()),
    pairs_per_chunk=("pairs", "mean"),
)
print("Pairs per chunk against chunk length: thin chunks get fewer pairs.")
print(outcomes.groupby(pd.cut(outcomes["chunk characters"], [0, 100, 300, 600, 900]), observed=True)["pairs"].mean().round(2).to_string())
by_language.style.format({"valid": "{:.0%}", "first_try": "{:.0%}", "pairs_per_chunk": "{:.2f}"})

# %%
examples = pd.DataFrame([
    {"source": d.metadata["source"], "page": d.metadata.get("page", ""), "question": d.metadata["question"], "answer": d.metadata["answer"]}
    for language in ("en", "zh")
    for d in [d for d in qa_docs if d.metadata.get("language") == language][:4]
])
examples

# %% [markdown]
# Every QA document carries its chunk's `chunk_id`, source, page and section, so a hit on a question
# leads straight back to the page it came from:

# %%
qa_docs[0].metadata if qa_docs else "no QA documents"

# %% [markdown]
# ## 6. The cache: a rebuild costs no LLM calls
#
# The transformer stores each chunk's pairs in SQLite as JSON, keyed by a hash of the chunk's text,
# the model, the prompt (and schema) version and the pair budget. Change the prompt and every chunk is
# asked again; change nothing and rebuilding the index costs nothing — even with LangChain's LLM cache
# turned off (`AGENTIC_RAG_LLM_CACHE=0`), because this cache sits one level higher. Failed chunks are
# cached too (at temperature 0 the model would fail the same way); a server that could not be reached
# is not, so the next build asks again.

# %%
usage_before = (USAGE.totals.calls, USAGE.totals.cached_calls)
rebuild = QATransformer(llm, max_pairs=MAX_PAIRS, cache=QACache(), progress=False)
start = time.perf_counter()
rebuilt = await rebuild.agenerate(sample)
second_build_seconds = time.perf_counter() - start
timings[f"QA pairs for {len(sample)} chunks (build 2, cached)"] = second_build_seconds
llm_calls = USAGE.totals.calls - usage_before[0] + USAGE.totals.cached_calls - usage_before[1]
model_seconds = rebuild.report().generation_seconds
cache_ratio = second_build_seconds / model_seconds if model_seconds else float("nan")
print(f"build 1 (this run): {first_build_seconds:9.3f} s, {report.from_cache}/{report.chunks} chunks already in the QA cache")
print(f"build 2           : {second_build_seconds:9.3f} s, {rebuild.report().from_cache}/{len(sample)} from the QA cache, "
      f"{llm_calls} LLM calls (cached or not)")
print(f"model time recorded when the pairs were generated: {model_seconds:.1f} s (summed over chunks)")
if model_seconds:
    print(f"cache ratio: build 2 / model time = {cache_ratio:.1e} — about {1 / cache_ratio:,.0f}× faster")
if report.from_cache < report.chunks // 2:
    print(f"build 2 / build 1 (wall clock, build 1 mostly generated) = {second_build_seconds / first_build_seconds:.1e}")
assert [r.pairs for r in rebuilt] == [r.pairs for r in results], (
    f"build 2 differs from build 1: {report.errors} chunk(s) of build 1 could not reach the model and were asked "
    "again — check that the model server is running and re-run section 5")

# %%
fig, ax = plt.subplots(figsize=(8, 2.8))
labels = ["model time when generated\n(sum over chunks)", "build 1, this run", "build 2 (QA cache)"]
values = [model_seconds, first_build_seconds, second_build_seconds]
ax.barh(labels, values, color=["tab:gray", "tab:blue", "tab:green"])
ax.set_xscale("log")
ax.set_xlabel("seconds (log scale)")
ax.set_xlim(right=max(values) * 20)
for y, value in enumerate(values):
    ax.text(value, y, f" {value:,.0f} s" if value >= 1 else f" {value * 1000:.1f} ms", va="center")
ax.set_title(f"Generating QA pairs for {len(sample)} chunks vs reading them from the cache")
plt.show()

# %% [markdown]
# The model time is what the pairs cost when they were first made: the sum over chunks of each request's
# duration, recorded in the cache. With two requests in flight on a local server that answers one at a
# time, each request also waits for the other, so the wall-clock time of a first build can be lower
# than this sum. On a re-run of this notebook build 1 is served from the cache too — which is the point.
#
# ## 7. Coverage: do the pairs cover the facts people ask about?
#
# Two precise, simple definitions over the gold evidence quotes found in the sample:
#
# - **chunk coverage** — the share of quotes for which a chunk that contains the quote produced at
#   least one pair (so the fact is reachable through QA documents at all);
# - **answer coverage** — the share of quotes for which one of those pairs (question and answer
#   together) repeats at least half of the quote's words (Chinese: characters) — the pair is *about* that fact.

# %%
from lessons.qa_transform import evidence_coverage

coverage = evidence_coverage(sample, results, gold)
print(f"{coverage.quotes} gold evidence quotes occur in the sample")
print(f"chunk coverage : {coverage.chunk_covered}/{coverage.quotes} = {coverage.chunk_rate:.1%}")
print(f"answer coverage: {coverage.answer_covered}/{coverage.quotes} = {coverage.answer_rate:.1%}")
gap = coverage.chunk_covered - coverage.answer_covered
display(Markdown(
    f"Chunk coverage ({coverage.chunk_rate:.0%}) follows the schema success rate ({report.schema_success_rate:.0%}): "
    "a chunk that got pairs covers its quotes. Answer coverage is the honest one: "
    + (f"{gap} of the {coverage.chunk_covered} reachable quotes got no pair about them — with at most {MAX_PAIRS} "
       "pairs per chunk the model picks *some* facts of a chunk, not necessarily the one a user will ask about. "
       "That gap is why the hybrid index below keeps the raw chunks too." if gap else
       "here every reachable quote got a pair about it; the hybrid index below keeps the raw chunks all the same, "
       "since no sample guarantees that.")))


# %% [markdown]
# ## 8. A hybrid index: chunks and questions in one Chroma store
#
# Chunks get `metadata["doc_type"] = "chunk"`, QA documents `"qa"`; both go into one persistent Chroma
# collection. A metadata filter then gives three retrievers from one store: chunks only, QA only, and
# both. A QA hit is worth nothing by itself — the answer generator needs the chunk's full text — so every
# hit is mapped back to its source chunk, and duplicates (three questions of one chunk) collapse into
# one result.

# %% [markdown]
# ### Exercise 2 — map hits back to their chunks
#
# Write `hits_to_chunks(hits, chunks_by_id, k)`: walk the ranked `hits` (chunks and QA documents, each
# with `metadata["chunk_id"]`), replace each by `chunks_by_id[chunk_id]`, skip chunk ids you have
# already returned or that are not in `chunks_by_id`, and stop after `k` chunks.

# %% tags=["exercise"]
def hits_to_chunks(hits, chunks_by_id, k):
    ### BEGIN SOLUTION
    ranked, seen = [], set()
    for hit in hits:
        chunk_id = hit.metadata.get("chunk_id")
        if chunk_id in seen or chunk_id not in chunks_by_id:
            continue
        seen.add(chunk_id)
        ranked.append(chunks_by_id[chunk_id])
        if len(ranked) == k:
            break
    return ranked
    ### END SOLUTION


# %%
from checks.nb03 import check_hits_to_chunks

check_hits_to_chunks(hits_to_chunks)

# %%
from lessons.qa_transform import DOC_TYPE_CHUNK, mark_doc_type, search_source_chunks
from lessons.vectorstore import index_documents, open_store

chunk_docs = mark_doc_type(sample, DOC_TYPE_CHUNK)
chunks_by_id = {c.metadata["chunk_id"]: c for c in chunk_docs}
store = open_store("nb03-hybrid")
start = time.perf_counter()
stats = index_documents(store, chunk_docs + qa_docs, prune=True)
timings["index chunks + QA documents"] = time.perf_counter() - start
print(f"hybrid store: {len(chunk_docs)} chunks + {len(qa_docs)} QA documents · {stats}")

# %% [markdown]
# Now the gold questions whose evidence is in the sample, asked of each retriever. A result list is
# relevant at rank *r* when the chunk there contains one of the question's evidence quotes (`lessons.metrics`).

# %%
from lessons.chunk_evaluation import embed_questions
from lessons.embeddings import get_embeddings
from lessons.metrics import hit_at_k, mrr_at_k, relevance_labels

K = 5
MODES = ["chunks", "qa", "hybrid"]
questions = [q for q in gold if q.answerable and evidence_chunk_ids(sample, q.evidence)]
embedder = get_embeddings()
start = time.perf_counter()
rows = []
for question, vector in zip(questions, embed_questions(questions, embedder), strict=True):
    for mode in MODES:
        ranked = search_source_chunks(store, vector, mode, chunks_by_id, k=K, fetch_k=4 * K)
        labels = relevance_labels([c.page_content for c in ranked], question.evidence)
        rows.append({"id": question.id, "language": question.language, "type": question.type, "mode": mode,
                     f"hit@{K}": hit_at_k(labels, K), f"MRR@{K}": mrr_at_k(labels, K)})
timings[f"retrieval for {len(questions)} questions × 3"] = time.perf_counter() - start
scores = pd.DataFrame(rows)
summary = scores.groupby("mode", sort=False)[[f"hit@{K}", f"MRR@{K}"]].mean().loc[MODES]
print(f"{len(questions)} gold questions have their evidence in the sample")
summary.style.format("{:.3f}")

# %%
fig, ax = plt.subplots(figsize=(7, 3.2))
x = np.arange(len(MODES))
for offset, metric, color in [(-0.18, f"hit@{K}", "tab:blue"), (0.18, f"MRR@{K}", "tab:orange")]:
    bars = ax.bar(x + offset, summary[metric], width=0.36, label=metric, color=color)
    ax.bar_label(bars, fmt="%.2f")
ax.set_xticks(x, ["chunks only", "QA only (mapped to chunks)", "hybrid"])
ax.set_ylim(0, 1.25)
ax.set_title(f"Retrieval on {len(questions)} gold questions, {len(sample)}-chunk sample")
ax.legend(loc="upper center", ncol=2)
plt.show()
mrr_by_language = scores.pivot_table(index="language", columns="mode", values=f"MRR@{K}", aggfunc="mean")[MODES]
mrr_by_language.style.format("{:.3f}").set_caption(f"MRR@{K} by question language")

# %%
wide = scores.pivot_table(index="id", columns="mode", values=f"MRR@{K}")
helped, hurt = (wide["hybrid"] > wide["chunks"]).sum(), (wide["hybrid"] < wide["chunks"]).sum()
best = summary[f"MRR@{K}"].idxmax()
print(f"hybrid vs chunks only: better on {helped} question(s), worse on {hurt}, equal on {len(wide) - helped - hurt}")
print(f"best MRR@{K}: {best} ({summary.loc[best, f'MRR@{K}']:.3f}); chunks only {summary.loc['chunks', f'MRR@{K}']:.3f}; "
      f"one question moves MRR@{K} by up to {1 / max(len(questions), 1):.3f}")
if len(wide) and helped:
    qid = (wide["hybrid"] - wide["chunks"]).idxmax()
    question = next(q for q in questions if q.id == qid)
    hits = store.similarity_search_by_vector(embedder.embed_query(question.question), k=3)
    print(f"\nA question where the hybrid index ranks the evidence higher ({qid}): {question.question}")
    for hit in hits:
        print(f"  [{hit.metadata['doc_type']:5}] {hit.page_content[:110]!r}")

# %% [markdown]
# Read the numbers before you believe the idea. What this run measured:

# %%
from lessons.qa_transform import qa_findings

display(Markdown(qa_findings(scores.to_dict("records"), k=K, coverage=coverage)))

# %% [markdown]
# Questions worded like a generated question are where the QA documents can help (the example above,
# when there is one). Whether one LLM call per chunk at indexing time is worth it depends on your
# questions; with DeepSeek the pairs are better and the comparison is worth re-running, and a larger
# `N_QA_CHUNKS` gives it more questions.
#
# ## 9. The other doctran jobs
#
# ### 9.1 Cleaning PDF text
#
# Docling's output for our white paper is already clean, but text taken straight from a PDF (here with
# pypdfium2) comes with a line break at the end of every printed line, and often words hyphenated at the
# margin. `TextCleaner` joins lines that reach the margin, keeps short lines (headings, the last line of
# a paragraph), undoes end-of-line hyphenation (keeping real compounds like *self-hosted* that occur
# elsewhere in the text), and never touches Markdown headings, lists, tables or code. Chinese lines are
# joined without a space.

# %%
import pypdfium2

from lessons.corpus import CORPUS_DIR
from lessons.doc_transforms import TextCleaner, clean_text

pdf = pypdfium2.PdfDocument(CORPUS_DIR / "atlas_whitepaper.pdf")
raw_page = pdf[1].get_textpage().get_text_range()
pdf.close()
raw = raw_page[:900] + "\nThe model re-\nranks candidates; Atlas is self-\nhosted, and a self-hosted install keeps data local."
cleaned = TextCleaner().transform_documents([Document(page_content=raw)])[0].page_content
print("--- raw ---\n" + raw.replace("\r", "") + "\n\n--- cleaned ---\n" + cleaned)
print(f"\nlines: {raw.count(chr(10)) + 1} → {cleaned.count(chr(10)) + 1}")

# %% [markdown]
# ### 9.2 Extracting dates
#
# The release notes write dates in four styles ("2025-03-14", "2 July 2025", "Nov. 24, 2025", "October
# 2025"), the Chinese documents as "2026 年 9 月 9 日" or "2026年9月9日". `extract_dates` finds them with
# patterns and lets python-dateutil turn the English ones into dates; a month without a day is kept with
# *month* precision. `DateExtractor` stores them as metadata — a readable `dates` list and whole-number
# `earliest_date` / `latest_date` (20260909), which Chroma can filter on:
# `filter={"latest_date": {"$gte": 20260901}}`.

# %%
from lessons.doc_transforms import DateExtractor, extract_dates

dated = DateExtractor().transform_documents(chunks)
with_dates = [d for d in dated if "dates" in d.metadata]
print(f"{len(with_dates)} of {len(dated)} chunks mention at least one date")
found = pd.DataFrame([
    {"source": d.metadata["source"], "as written": f.text.replace("\n", " "), "date": f.iso, "precision": f.precision}
    for d in with_dates if d.metadata["source"] in ("release_notes.md", "weekly_meeting_zh.txt", "customer_cases_zh.docx")
    for f in extract_dates(d.page_content)
]).drop_duplicates(subset=["source", "as written"])
print("distinct dates found per source:", found.groupby("source")["as written"].count().to_dict())
pd.concat([found[found["source"] == "release_notes.md"], found[found["source"] != "release_notes.md"].groupby("source").head(4)])

# %%
recent = [d for d in dated if d.metadata.get("latest_date", 0) >= 20260901]
print(f"chunks that mention a date from September 2026 on: {len(recent)}")
print(pd.Series([d.metadata["source"] for d in recent]).value_counts().to_string())

# %% [markdown]
# ### Exercise 3 — Chinese dates
#
# Write `parse_chinese_date(text)`: the first full date written as 年/月/日 in `text` — spaces between
# the parts allowed, as in "2026 年 9 月 9 日" — as a `datetime.date`, or `None` when there is none or
# it is impossible (2026年2月30日). Use `re.search` with three groups.

# %% tags=["exercise"]
import re
from datetime import date


def parse_chinese_date(text):
    ### BEGIN SOLUTION
    match = re.search(r"(\d{4})\s*年\s*(\d{1,2})\s*月\s*(\d{1,2})\s*日", text)
    if match is None:
        return None
    try:
        return date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError:
        return None
    ### END SOLUTION


# %%
from checks.nb03 import check_chinese_date

check_chinese_date(parse_chinese_date)

# %% [markdown]
# ### 9.3 Extracting properties into your own schema
#
# `DoctranPropertyExtractor` took a list of property dicts; here the schema is a Pydantic class *you*
# write, and the field descriptions are what the model reads. `PropertyExtractor` fills it for each
# document through `invoke_structured` and flattens the fields into metadata (lists joined, `None`
# dropped) so Chroma can store and filter them. Optional fields with `None` defaults let the model say
# "not in the text" instead of inventing a value. Change the schema and run the cell again.

# %%
from typing import Literal

from pydantic import BaseModel, Field

from lessons.doc_transforms import PropertyExtractor


class ReleaseFacts(BaseModel):
    '''Facts about one Tidewell Atlas release, taken from its release note.'''

    version: str | None = Field(None, description="the version number, for example 4.2.1")
    released: str | None = Field(None, description="the release date exactly as written in the text")
    release_kind: Literal["major", "minor", "patch"] | None = Field(
        None, description="major (x.0), minor (x.y) or patch (x.y.z) release")


release_chunks = [c for c in chunks if c.metadata["source"] == "release_notes.md" and c.page_content.startswith("## Atlas")]
# Dates in the less regular styles first: they are the interesting ones.
release_chunks = sorted(release_chunks, key=lambda c: bool(re.search(r"Released \d{4}-", c.page_content)))[:N_PROPERTY_CHUNKS]
extractor = PropertyExtractor(llm, ReleaseFacts)
start = time.perf_counter()
extracted = extractor.transform_documents(DateExtractor().transform_documents(release_chunks))
timings[f"properties of {len(release_chunks)} release notes"] = time.perf_counter() - start
facts = pd.DataFrame([
    {"heading": d.page_content.splitlines()[0], **{k: d.metadata.get(k) for k in ("version", "release_kind", "released")}}
    for d in extracted
])


def first_date(text):
    found = extract_dates(text or "")
    return found[0].iso if found else None


def kind_by_rule(heading):
    parts = heading.split()[-1].split(".")
    return "patch" if len(parts) == 3 else "major" if parts[-1] == "0" else "minor"


facts["model date"] = [first_date(d.metadata.get("released")) for d in extracted]
facts["pattern date"] = [first_date(d.page_content) for d in extracted]
facts["kind by rule"] = [kind_by_rule(heading) for heading in facts["heading"]]
print(f"{extractor.failures} of {len(release_chunks)} documents without valid properties; "
      f"dates agree on {(facts['model date'] == facts['pattern date']).sum()}, "
      f"release kinds on {(facts['release_kind'] == facts['kind by rule']).sum()} of {len(facts)}")
display(facts)
dates_agree, kinds_agree = (facts["model date"] == facts["pattern date"]).sum(), (facts["release_kind"] == facts["kind by rule"]).sum()
display(Markdown(
    f"The last columns check the model against rules: its `released` string, parsed by `extract_dates`, gives the "
    f"pattern-based date for {dates_agree} of {len(facts)} releases, and its `release_kind` matches the version rule for "
    f"{kinds_agree} of {len(facts)}"
    + (" — seeing no \"minor release\" in the text, a small model guesses." if kinds_agree < len(facts) else ".")))

# %% [markdown]
# Atlas versions follow a convention (x.0 major, x.y minor, x.y.z patch) that a three-line rule reads
# without error. Where a rule can do the job, use the rule — free, instant, repeatable — and keep the
# model for the properties no rule can read.
#
# ## 10. What we measured

# %%
results_table = pd.DataFrame(
    {
        "value": [
            f"{report.schema_success_rate:.1%} ({report.ok + report.fewer}/{report.chunks}; first try {report.first_try_rate:.1%})",
            f"{coverage.chunk_rate:.1%} chunk · {coverage.answer_rate:.1%} answer ({coverage.quotes} quotes)",
            *[f"{summary.loc[m, f'hit@{K}']:.3f} / {summary.loc[m, f'MRR@{K}']:.3f}" for m in MODES],
            f"{second_build_seconds:.3f} s vs {model_seconds:.1f} s model time (ratio {cache_ratio:.1e}), {llm_calls} LLM calls",
        ]
    },
    index=["schema success rate", "evidence coverage", *[f"hit@{K} / MRR@{K}, {m}" for m in MODES], "rebuild from the QA cache"],
)
results_table

# %%
for step, seconds in timings.items():
    print(f"{step:45} {seconds:8.2f} s")
print(USAGE.report())
