# ---
# jupyter:
#   agentic_rag:
#     quick_parameters:
#       MAX_PAIRS: 2
#       N_PROPERTY_CHUNKS: 1
#       N_QA_CHUNKS: 3
#   jupytext:
#     cell_metadata_filter: tags,lang,translates,-all
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
# | **Time** | offline on a 2-core laptop (AMD EPYC, AVX2, no AVX-512), a first Run All from an empty cache folder: **3.2 min** measured (194 s, 16 chat-model calls; the model server evaluated 50 prompt / 18 generated tokens per second; `benchmarks/bench_notebooks.py`, 7 Dec 2026, within the 10-minute budget); seconds on a re-run from the LLM cache; with DeepSeek not measured (no network where the course was written) |
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
# | `DoctranQATransformer` | `lessons.transforms.qa_transform.QATransformer` — structured output into `QAPairList` | yes |
# | `DoctranTextTranslator` / cleaning | `lessons.transforms.doc_transforms.TextCleaner` — PDF hyphenation and hard wraps | no |
# | date handling | `lessons.transforms.doc_transforms.DateExtractor` — patterns + python-dateutil, English and Chinese | no |
# | `DoctranPropertyExtractor` | `lessons.transforms.doc_transforms.PropertyExtractor` — structured output into *your* schema | yes |

# %% [markdown] lang="zh" translates="5ae403f5b466"
# # 03 · QA 转换：为你的块（chunk）能回答的问题建索引
#
# | | |
# |---|---|
# | **你将学到** | 怎样用结构化输出（structured output）替代 LangChain 已经移除的 `DoctranQATransformer`；怎样做一个从不崩溃、从不重复花钱、从不撑爆上下文窗口的 LLM 文档转换器；问题/答案文档到底有没有帮助检索（实测：块 vs QA vs 混合）；doctran 的其他工作——清理 PDF 文本、提取日期、提取属性 |
# | **前置条件** | notebook 00（结构化输出）和 01（知识库（knowledge base）、块、金标准问题集（gold set）、命中率（hit@k） 和 平均倒数排名（MRR）） |
# | **用时** | 离线、2 核笔记本电脑、从空缓存目录第一次 Run All：实测 **2.4 分钟**（142 秒，16 次对话模型（chat model）调用；模型服务器每秒读入 85 个输入 token、生成 20 个 token；`benchmarks/bench_notebooks.py --zh`，2026 年 12 月 7 日，在 10 分钟预算以内）；从 LLM 缓存重跑只需几秒；使用 DeepSeek：未测（编写课程的地方没有网络） |
# | **文中的数字** | 由离线的 Qwen2.5-Coder-1.5B-Instruct Q4_K_M（温度 0）和 multilingual-e5-small（4 bit）得出 |
#
# 用户问*“同事辞职走人以后，他的各种系统账号最晚什么时候会被停掉？”*；
# 数据安全制度写的是*“员工离职时，IT 部门须在离职当天、最迟 24 小时内收回其全部账号和权限”*。
# 两者几乎没有相同的词（辞职和离职、停掉和收回）。**QA 转换**在建索引时让语言模型（只一次）说出每个块能回答哪些问题，并把这些问题也编入索引：
# 于是用户的问题是在和*问题*作比较。
#
# LangChain 过去以 `DoctranQATransformer` 提供这一功能。LangChain 1.x 里它已经没有了，而它封装的 `doctran` 包
# 固定依赖 `openai<0.28` 和 `pydantic<2`，没法和任何较新的东西装在一起。本 notebook 按 LangChain 1.x 的方式构建替代品：
#
# | doctran 的工作 | 这里的替代品 | 需要模型？ |
# |---|---|---|
# | `DoctranQATransformer` | `lessons.transforms.qa_transform.QATransformer`——结构化输出为 `QAPairList` | 是 |
# | `DoctranTextTranslator` / 清理 | `lessons.transforms.doc_transforms.TextCleaner`——PDF 的断词连字符和硬换行 | 否 |
# | 日期处理 | `lessons.transforms.doc_transforms.DateExtractor`——模式匹配 + python-dateutil，支持英文和中文 | 否 |
# | `DoctranPropertyExtractor` | `lessons.transforms.doc_transforms.PropertyExtractor`——结构化输出为*你自己的* schema | 是 |

# %% tags=["parameters"]
# Parameters (the test suite runs this notebook with smaller values)
N_QA_CHUNKS = 12        # chunks sent to the model (one call each): gold-evidence chunks plus a seeded sample of others;
                        # section 8 asks the gold questions whose evidence they hold (it prints how many and how far
                        # one question moves MRR): 60 or more for a firmer comparison (each chunk adds a model call)
MAX_PAIRS = 3           # question/answer pairs asked for per chunk
N_PROPERTY_CHUNKS = 4   # release-note chunks for the property extractor (one call each)
SEED = 3

# %% lang="zh" translates="e66c144c4d1d"
# 参数（测试套件用更小的值运行这个 notebook）
# 发给模型的块数（每块一次调用）：含金标准证据的块，加上按种子抽样的其他块；
# 第 8 节提出证据在这些块里的金标准问题（会打印有多少个，以及一个问题能让
# MRR 变多少）：想比较得更可靠就用 60 或更多（每多一块多一次模型调用）
# 每个块要求生成的问答对数
# 交给属性抽取器的发布说明块数（每块一次调用）

# %%
import logging
import time

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from IPython.display import Markdown, display

from lessons.core import USAGE, get_chat_model, metered, model_banner, t, t_labels

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

# %% [markdown] lang="zh" translates="3a9ec8851dea"
# ## 1. 我们要转换的块
#
# 生成问答对要让本地模型对每个块调用一次（第 2 节给一次调用计时），所以本 notebook 不转换知识库里的每个块，
# 只转换其中 `N_QA_CHUNKS` 个。`select_chunks` 抽取一个带随机种子的样本：其中 `evidence_share=0.7` 的比例是
# 包含随机抽取的金标准问题证据的块（这样我们才能在它们上面衡量检索），其余是别的块，让检索仍然要在干扰项中
# 找出正确的那个。下面所有的比较都用同一个样本。

# %%
from lessons.ingest import load_gold
from lessons.retrieval import chunk_knowledge_base
from lessons.transforms import evidence_chunk_ids, select_chunks

chunks = chunk_knowledge_base()
gold = load_gold()
sample = select_chunks(chunks, gold, N_QA_CHUNKS, seed=SEED)
holds_evidence = set().union(*(evidence_chunk_ids(sample, q.evidence) for q in gold if q.answerable))
composition = pd.crosstab(
    pd.Series([c.metadata["language"] for c in sample], name=t("language")),
    pd.Series([t("gold evidence") if c.metadata["chunk_id"] in holds_evidence else t("other") for c in sample],
              name=t("chunk")),
    margins=True, margins_name=t("total"),
)
print(t("{chunks} chunks in the knowledge base; {sample} in the sample", chunks=len(chunks), sample=len(sample)))
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
# chunk's language so Chinese chunks get Chinese questions. The cell below prints the schema (its descriptions in
# your language; the model reads them in English) and the prompt exactly as the model reads it, in English whatever
# the notebook's language.

# %% [markdown] lang="zh" translates="dba6af01fc8f"
# ## 2. 一个 schema、一个提示词（prompt）和一个块
#
# 结构化输出就是全部的诀窍：模型必须*调用一个函数*，其参数是一个 `QAPairList`——一个由 `QAPair(question, answer)`
# 组成、带 `Field(min_length=1, max_length=n)` 的列表。在 DeepSeek 上，列表长度的约束在回答之后才检查
# （违反了就是解析错误，然后重试）；在我们本地的 llama.cpp 服务上，schema 会变成一个语法（grammar），
# 所以模型*不可能*输出超过 `n` 对。
#
# 提示词（prompt）禁止写块以外的任何内容，要求写人们会去搜的事实（数字、定义、步骤、决定），在文本内容单薄时允许模型少写几对，
# 并注明块的语言，这样中文块得到的是中文问题。下面的单元格打印 schema（其中的描述用你的语言显示；模型读的是英文），
# 再给出提示词：它与模型读到的一字不差，不论 notebook 用哪种语言，都是英文，所以中文版把它折叠起来——上面这段就是它的内容，
# 想读原文时点开即可。

# %%
import json

from langchain_core.utils.function_calling import convert_to_openai_tool

from lessons.core import course_language, schema_for_reader, show_model_text
from lessons.transforms import qa_messages, qa_pair_list_schema

pairs_schema = convert_to_openai_tool(qa_pair_list_schema(MAX_PAIRS))["function"]["parameters"]["properties"]["pairs"]
print(json.dumps(schema_for_reader(pairs_schema), indent=1, ensure_ascii=False)[:700])  # the model reads it in English
# a chunk in the notebook's language, one that holds gold evidence when the sample has one
example = min(sample, key=lambda c: (c.metadata["language"] != course_language(), c.metadata["chunk_id"] not in holds_evidence))
show_model_text("\n".join(f"[{message.type}]\n{message.content}\n" for message in qa_messages(example, MAX_PAIRS)),
                t("the system prompt for this chunk"))

# %% lang="zh" translates="a32fd6af5484"
# 模型读的是英文版
# 一个 notebook 所用语言的块；样本里有含金标准证据的块时就取它

# %%
from lessons.transforms import QACache, QATransformer

qa = QATransformer(llm, max_pairs=MAX_PAIRS, cache=QACache())
start = time.perf_counter()
(one,) = qa.generate([example])
timings[t("QA pairs for one chunk")] = time.perf_counter() - start
print(t("status {status!r}, asked for {tried} pair(s), model time when generated {seconds:.1f} s",
        status=one.status, tried=one.tried or t("(from the QA cache)"), seconds=one.generation_seconds))
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

# %% [markdown] lang="zh" translates="8d8f1f59b220"
# ## 3. 回答放不下时：少要几对
#
# `invoke_structured` 本来就会重试解析失败的回答，并把解析错误放进对话里。如果仍然失败，*少要几对*是最便宜的修复：
# 更短的回答不太容易被截断，也不太容易弄坏 JSON。转换器先要 `n` 对，然后 `n // 2`……直到 1 对
# （`fewer_pairs_schedule`）。连一对都失败时，这个块得到**一个空列表**——这个块仍然作为块被索引，失败会记入日志，
# 并在报告里计数。300 个块的一个批次绝不能死在第 217 个块上，下游代码也绝不能收到 `None`。
#
# 只有不符合 schema 的回答（`StructuredOutputError`）才意味着"少要一点"。服务宕机是另一种失败：
# 再去向它要更少的问答对也无济于事。

# %% [markdown]
# ### Exercise 1 — the retry policy
#
# Write `first_valid_pairs(ask, max_pairs)`. `ask(n)` asks the model for at most `n` pairs and returns
# a list of `QAPair`, or raises `StructuredOutputError`. Call it for each `n` in
# `fewer_pairs_schedule(max_pairs)` and return the first list you get; return `[]` when every call
# failed. Let any other exception through.

# %% [markdown] lang="zh" translates="ce8b45499688"
# ### 练习 1 —— 重试策略
#
# 写一个 `first_valid_pairs(ask, max_pairs)`。`ask(n)` 向模型要最多 `n` 对问答，返回一个 `QAPair` 列表，
# 或者抛出 `StructuredOutputError`。对 `fewer_pairs_schedule(max_pairs)` 里的每个 `n` 调用它，返回你拿到的第一个列表；
# 每次调用都失败时返回 `[]`。其他任何异常都让它继续抛出。

# %% tags=["exercise"]
from lessons.core import StructuredOutputError
from lessons.transforms import fewer_pairs_schedule

print(t("schedule for 4:"), fewer_pairs_schedule(4), t("· for 3:"), fewer_pairs_schedule(3))


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

# %% [markdown] lang="zh" translates="6a82f3eb3539"
# ## 4. 放得下吗？上下文预算
#
# 一个 QA 请求包含规则、块、函数 schema，还必须给回答留出空间。如果总量接近上下文窗口，llama.cpp 会把回答截短以放得下，
# JSON 就会在字符串中间被截断——这种解析错误任何重试都修不好。转换器在开始之前估算每个请求
# （每个中文字符算一个 token，其他字符每四个算一个 token：保守估计，不需要分词器），并在请求需要超过窗口的 `70%` 时发出警告：
# 本地是 `get_settings().n_ctx`（默认 4,096 个 token），DeepSeek 上是 64k。

# %%
from lessons.transforms import ContextBudgetWarning, context_budgets

budgets = context_budgets(chunks, MAX_PAIRS, qa.context_window)
totals = np.array([b.total for b in budgets])
fig, ax = plt.subplots(figsize=(8, 3.2))
ax.hist(totals, bins=30, color="tab:blue")
ax.axvline(budgets[0].limit, color="tab:red", linestyle="--", label=t("70% of {n} tokens", n=qa.context_window))
ax.set_xlabel(t("estimated tokens per QA request (rules + chunk + schema + answer)"))
ax.set_ylabel(t("chunks"))
ax.set_title(t("Every chunk of the knowledge base against the context budget"))
ax.legend(loc="center right")
plt.show()
print(t("largest request ≈ {largest} tokens; limit {limit}; over the limit: {over}", largest=totals.max(),
        limit=budgets[0].limit, over=sum(b.exceeded for b in budgets)))

# %% [markdown]
# The histogram and the count above place the knowledge base's chunks against the limit. Skip the
# chunking step and hand the model a whole document instead, and the transformer warns before it spends
# a single call:

# %% [markdown] lang="zh" translates="4989cf41c1ea"
# 上面的直方图和计数显示了知识库里的块相对于上限的位置。如果跳过分块（chunking）这一步，直接把整个文档交给模型，
# 转换器会在花掉任何一次调用之前就发出警告：

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
print(t("{n} request over budget", n=len(over)))
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

# %% [markdown] lang="zh" translates="ccd6c5b4ea7f"
# ## 5. 整个样本，并发处理
#
# `await qa.agenerate(sample)` 在一个 `asyncio.Semaphore` 下处理这些块：本地服务最多同时 2 个请求
# （它的两个核多了也没用），DeepSeek 上 8 个。已缓存的块不用排队。在 notebook 里要 `await` 它：内核已经在运行一个事件循环，
# 而 `ChatDeepSeek` 背后的异步 HTTP 客户端会绑定在它第一次运行的那个循环上，所以第二次 `asyncio.run(...)`
# 会以 `Event loop is closed` 失败。`qa.transform_documents(...)` 用线程做同样的工作，适合脚本使用。

# %%
start = time.perf_counter()
with metered() as build_1:
    results = await qa.agenerate(sample)
first_build_seconds = time.perf_counter() - start
timings[t("QA pairs for {n} chunks (build 1)", n=len(sample))] = first_build_seconds
qa_docs = qa.to_documents(sample, results)
report = qa.report()
print(report)
print(t("schema success rate: {rate:.1%} of chunks got valid pairs ({first:.1%} on the first request); "
        "LLM calls in this build: {calls}", rate=report.schema_success_rate, first=report.first_try_rate,
        calls=build_1.totals.calls))

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
print(t("Pairs per chunk against chunk length: thin chunks get fewer pairs."))
pairs_by_length = outcomes.groupby(pd.cut(outcomes["chunk characters"], [0, 100, 300, 600, 900]), observed=True)["pairs"]
print(pairs_by_length.mean().round(2).rename_axis(t("chunk characters")).to_string())
t_labels(by_language.style.format({"valid": "{:.0%}", "first_try": "{:.0%}", "pairs_per_chunk": "{:.2f}"}),
         ["language", "chunks", "valid", "first_try", "pairs_per_chunk"])

# %%
examples = pd.DataFrame([
    {t("source"): d.metadata["source"], t("page"): d.metadata.get("page", ""), t("question"): d.metadata["question"],
     t("answer"): d.metadata["answer"]}
    for language in ("en", "zh")
    for d in [d for d in qa_docs if d.metadata.get("language") == language][:4]
])
examples

# %% [markdown]
# Every QA document carries its chunk's `chunk_id`, source, page and section, so a hit on a question
# leads straight back to the page it came from:

# %% [markdown] lang="zh" translates="02a3abd19112"
# 每个 QA 文档都带着它所属块的 `chunk_id`、来源、页码和小节，所以命中一个问题就能直接回到它出自的那一页：

# %%
# the first QA document in the notebook's language (any language when the sample has none)
in_language = [d for d in qa_docs if d.metadata.get("language") == course_language()] or qa_docs
in_language[0].metadata if in_language else t("no QA documents")

# %% lang="zh" translates="4a0dad039771"
# notebook 所用语言的第一个 QA 文档（样本里没有时取任意语言的）

# %% [markdown]
# ## 6. The cache: a rebuild costs no LLM calls
#
# The transformer stores each chunk's pairs in SQLite as JSON, keyed by a hash of the chunk's text,
# the model, the prompt (and schema) version and the pair budget. Change the prompt and every chunk is
# asked again; change nothing and rebuilding the index costs nothing — even with LangChain's LLM cache
# turned off (`AGENTIC_RAG_LLM_CACHE=0`), because this cache sits one level higher. Failed chunks are
# cached too (at temperature 0 the model would fail the same way); a server that could not be reached
# is not, so the next build asks again.

# %% [markdown] lang="zh" translates="f125a8872b3f"
# ## 6. 缓存：重建不花任何 LLM 调用
#
# 转换器把每个块的问答对以 JSON 存进 SQLite，键是块文本、模型、提示词（和 schema）版本以及问答对预算的哈希。
# 改了提示词，每个块都会重新去问；什么都不改，重建索引就不花任何代价——即使关掉 LangChain 的 LLM 缓存
# （`AGENTIC_RAG_LLM_CACHE=0`）也是如此，因为这个缓存位于更高一层。失败的块也会被缓存（温度为 0 时模型会以同样的方式失败）；
# 连不上服务的情况则不缓存，下一次构建会再去问。

# %%
rebuild = QATransformer(llm, max_pairs=MAX_PAIRS, cache=QACache(), progress=False)
start = time.perf_counter()
with metered() as build_2:
    rebuilt = await rebuild.agenerate(sample)
second_build_seconds = time.perf_counter() - start
timings[t("QA pairs for {n} chunks (build 2, cached)", n=len(sample))] = second_build_seconds
llm_calls = build_2.totals.all_calls
model_seconds = rebuild.report().generation_seconds
cache_ratio = second_build_seconds / model_seconds if model_seconds else float("nan")
print(t("build 1 (this run): {seconds:9.3f} s, {cached}/{chunks} chunks already in the QA cache",
        seconds=first_build_seconds, cached=report.from_cache, chunks=report.chunks))
print(t("build 2           : {seconds:9.3f} s, {cached}/{chunks} from the QA cache, {calls} LLM calls (cached or not)",
        seconds=second_build_seconds, cached=rebuild.report().from_cache, chunks=len(sample), calls=llm_calls))
print(t("model time recorded when the pairs were generated: {seconds:.1f} s (summed over chunks)", seconds=model_seconds))
if model_seconds:
    print(t("cache ratio: build 2 / model time = {ratio:.1e} — about {faster:,.0f}× faster", ratio=cache_ratio,
            faster=1 / cache_ratio))
if report.from_cache < report.chunks // 2:
    print(t("build 2 / build 1 (wall clock, build 1 mostly generated) = {ratio:.1e}",
            ratio=second_build_seconds / first_build_seconds))
assert [r.pairs for r in rebuilt] == [r.pairs for r in results], (
    f"build 2 differs from build 1: {report.errors} chunk(s) of build 1 could not reach the model and were asked "
    "again — check that the model server is running and re-run section 5")

# %%
fig, ax = plt.subplots(figsize=(8, 2.8))
labels = [t("model time when generated\n(sum over chunks)"), t("build 1, this run"), t("build 2 (QA cache)")]
values = [model_seconds, first_build_seconds, second_build_seconds]
ax.barh(labels, values, color=["tab:gray", "tab:blue", "tab:green"])
ax.set_xscale("log")
ax.set_xlabel(t("seconds (log scale)"))
ax.set_xlim(right=max(values) * 20)
for y, value in enumerate(values):
    ax.text(value, y, t(" {seconds:,.0f} s", seconds=value) if value >= 1 else t(" {ms:.1f} ms", ms=value * 1000), va="center")
ax.set_title(t("Generating QA pairs for {n} chunks vs reading them from the cache", n=len(sample)))
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

# %% [markdown] lang="zh" translates="d0f36a57bccf"
# 模型时间是这些问答对第一次生成时的代价：每个请求所用时间在所有块上的总和，记录在缓存里。本地服务一次只回答一个请求，
# 同时有两个请求时每个请求还要等另一个，所以第一次构建的实际耗时（墙钟时间）可能比这个总和还低。
# 重新运行本 notebook 时，第一次构建也由缓存提供——这正是目的所在。
#
# ## 7. 覆盖率：问答对覆盖了人们会问的事实吗？
#
# 在样本中找到的金标准证据引文（evidence quote）上，有两个精确而简单的定义：
#
# - **块覆盖率**（chunk coverage）——对于包含某条引文的块，至少生成了一对问答的引文所占的比例
#   （也就是说，这个事实至少能通过 QA 文档找到）；
# - **答案覆盖率**（answer coverage）——在这些问答对中，有一对（问题和答案合起来）复述了引文中至少一半的词
#   （中文：字）的引文所占的比例——这对问答是*关于*那个事实的。

# %%
from lessons.transforms import evidence_coverage

coverage = evidence_coverage(sample, results, gold)
print(t("{n} gold evidence quotes occur in the sample", n=coverage.quotes))
print(t("chunk coverage : {covered}/{quotes} = {rate:.1%}", covered=coverage.chunk_covered, quotes=coverage.quotes,
        rate=coverage.chunk_rate))
print(t("answer coverage: {covered}/{quotes} = {rate:.1%}", covered=coverage.answer_covered, quotes=coverage.quotes,
        rate=coverage.answer_rate))
gap = coverage.chunk_covered - coverage.answer_covered
display(Markdown(
    t("Chunk coverage ({chunk_rate:.0%}) follows the schema success rate ({success_rate:.0%}): "
      "a chunk that got pairs covers its quotes. Answer coverage is the honest one: ",
      chunk_rate=coverage.chunk_rate, success_rate=report.schema_success_rate)
    + (t("{gap} of the {reachable} reachable quotes got no pair about them — with at most {max_pairs} "
         "pairs per chunk the model picks *some* facts of a chunk, not necessarily the one a user will ask about. "
         "That gap is why the hybrid index below keeps the raw chunks too.",
         gap=gap, reachable=coverage.chunk_covered, max_pairs=MAX_PAIRS) if gap else
       t("here every reachable quote got a pair about it; the hybrid index below keeps the raw chunks all the same, "
         "since no sample guarantees that."))))


# %% [markdown]
# ## 8. A hybrid index: chunks and questions in one Chroma store
#
# Chunks get `metadata["doc_type"] = "chunk"`, QA documents `"qa"`; both go into one persistent Chroma
# collection. A metadata filter then gives three retrievers from one store: chunks only, QA only, and
# both. A QA hit is worth nothing by itself — the answer generator needs the chunk's full text — so every
# hit is mapped back to its source chunk, and duplicates (three questions of one chunk) collapse into
# one result.

# %% [markdown] lang="zh" translates="e35949aedf36"
# ## 8. 混合索引：块和问题放在同一个 Chroma 库里
#
# 块带有 `metadata["doc_type"] = "chunk"`，QA 文档带有 `"qa"`；两者都放进同一个持久化的 Chroma 集合。
# 于是一个元数据过滤条件就能从同一个库得到三个检索器（retriever）：只检索块、只检索 QA，以及两者都检索。QA 命中本身没有价值——
# 回答生成器需要块的完整文本——所以每个命中都映射回它的源块，而重复项（同一个块的三个问题）合并成一个结果。

# %% [markdown]
# ### Exercise 2 — map hits back to their chunks
#
# Write `hits_to_chunks(hits, chunks_by_id, k)`: walk the ranked `hits` (chunks and QA documents, each
# with `metadata["chunk_id"]`), replace each by `chunks_by_id[chunk_id]`, skip chunk ids you have
# already returned or that are not in `chunks_by_id`, and stop after `k` chunks.

# %% [markdown] lang="zh" translates="06edf6d9d058"
# ### 练习 2 —— 把命中映射回它们的块
#
# 写一个 `hits_to_chunks(hits, chunks_by_id, k)`：按顺序遍历排好序的 `hits`（块和 QA 文档，每个都带
# `metadata["chunk_id"]`），把每一个替换成 `chunks_by_id[chunk_id]`，跳过已经返回过的或不在 `chunks_by_id` 里的 chunk id，
# 拿到 `k` 个块后停止。

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
from lessons.core import index_documents, open_store
from lessons.transforms import DOC_TYPE_CHUNK, mark_doc_type, search_source_chunks

chunk_docs = mark_doc_type(sample, DOC_TYPE_CHUNK)
chunks_by_id = {c.metadata["chunk_id"]: c for c in chunk_docs}
store = open_store("nb03-hybrid")
start = time.perf_counter()
stats = index_documents(store, chunk_docs + qa_docs, prune=True)
timings[t("index chunks + QA documents")] = time.perf_counter() - start
print(t("hybrid store: {chunks} chunks + {qa} QA documents · {stats}", chunks=len(chunk_docs), qa=len(qa_docs), stats=stats))

# %% [markdown]
# Now the gold questions whose evidence is in the sample, asked of each retriever. A result list is
# relevant at rank *r* when the chunk there contains one of the question's evidence quotes (`lessons.evaluation.metrics`).

# %% [markdown] lang="zh" translates="5883466118f2"
# 现在，用证据在样本里的金标准问题去问每个检索器。如果排在第 *r* 位的块包含问题的某条证据引文，
# 结果列表在第 *r* 位就是相关的（`lessons.evaluation.metrics`）。

# %%
from lessons.core import get_embeddings
from lessons.evaluation import embed_questions, retrieval_scores

K = 5
MODES = ["chunks", "qa", "hybrid"]
questions = [q for q in gold if q.answerable and evidence_chunk_ids(sample, q.evidence)]
embedder = get_embeddings()
start = time.perf_counter()
rows = []
for question, vector in zip(questions, embed_questions(questions, embedder), strict=True):
    for mode in MODES:
        ranked = search_source_chunks(store, vector, mode, chunks_by_id, k=K, fetch_k=4 * K)
        rows.append({"id": question.id, "language": question.language, "type": question.type, "mode": mode,
                     **retrieval_scores(ranked, question, k=K, rank_k=K)})
timings[t("retrieval for {n} questions × 3", n=len(questions))] = time.perf_counter() - start
scores = pd.DataFrame(rows)
summary = scores.groupby("mode", sort=False)[[f"hit@{K}", f"MRR@{K}"]].mean().loc[MODES]
print(t("{n} gold questions have their evidence in the sample", n=len(questions)))
t_labels(summary.style.format("{:.3f}"), ["mode"])

# %%
fig, ax = plt.subplots(figsize=(7, 3.2))
x = np.arange(len(MODES))
for offset, metric, color in [(-0.18, f"hit@{K}", "tab:blue"), (0.18, f"MRR@{K}", "tab:orange")]:
    bars = ax.bar(x + offset, summary[metric], width=0.36, label=metric, color=color)
    ax.bar_label(bars, fmt="%.2f")
ax.set_xticks(x, [t("chunks only"), t("QA only (mapped to chunks)"), t("hybrid")])
ax.set_ylim(0, 1.25)
ax.set_title(t("Retrieval on {questions} gold questions, {chunks}-chunk sample", questions=len(questions), chunks=len(sample)))
ax.legend(loc="upper center", ncol=2)
plt.show()
mrr_by_language = scores.pivot_table(index="language", columns="mode", values=f"MRR@{K}", aggfunc="mean")[MODES]
t_labels(mrr_by_language.style.format("{:.3f}").set_caption(t("MRR@{k} by question language", k=K)), ["language", "mode"])

# %%
wide = scores.pivot_table(index="id", columns="mode", values=f"MRR@{K}")
helped, hurt = (wide["hybrid"] > wide["chunks"]).sum(), (wide["hybrid"] < wide["chunks"]).sum()
best = summary[f"MRR@{K}"].idxmax()
print(t("hybrid vs chunks only: better on {helped} question(s), worse on {hurt}, equal on {equal}",
        helped=helped, hurt=hurt, equal=len(wide) - helped - hurt))
print(t("best MRR@{k}: {best} ({best_mrr:.3f}); chunks only {chunks_mrr:.3f}; one question moves MRR@{k} by up to {step:.3f}",
        k=K, best=best, best_mrr=summary.loc[best, f'MRR@{K}'], chunks_mrr=summary.loc['chunks', f'MRR@{K}'],
        step=1 / max(len(questions), 1)))
if len(wide) and helped:
    qid = (wide["hybrid"] - wide["chunks"]).idxmax()
    question = next(q for q in questions if q.id == qid)
    hits = store.similarity_search_by_vector(embedder.embed_query(question.question), k=3)
    print(t("\nA question where the hybrid index ranks the evidence higher ({qid}): {question}", qid=qid,
            question=question.question))
    for hit in hits:
        print(f"  [{hit.metadata['doc_type']:5}] {hit.page_content[:110]!r}")

# %% [markdown]
# Read the numbers before you believe the idea. What this run measured:

# %% [markdown] lang="zh" translates="74a2f93b1d15"
# 先看数字，再相信想法。本次运行测得的结果：

# %%
from lessons.transforms import qa_findings

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

# %% [markdown] lang="zh" translates="d51aa86286ac"
# 措辞像生成出来的问题的那些问题，正是 QA 文档可能帮上忙的地方（上面的例子，如果有的话）。建索引时每个块花一次 LLM 调用
# 是否值得，取决于你的问题；用 DeepSeek 时问答对质量更好，这个比较值得重新运行，调大 `N_QA_CHUNKS` 也能给它更多问题。
#
# ## 9. doctran 的其他工作
#
# ### 9.1 清理 PDF 文本
#
# Docling 对我们白皮书的输出已经很干净了，但直接从 PDF 里取出的文本（这里用 pypdfium2）在每个印刷行的末尾都带一个换行，
# 而且常常有在页边断开、加了连字符的单词。`TextCleaner` 把排到页边的行连起来，保留短行（标题、段落的最后一行），
# 撤销行末的断词连字符（保留文本别处也出现的真正复合词，比如 *self-hosted*），并且从不碰 Markdown 的标题、列表、表格或代码。
# 中文行直接相连，不加空格。

# %%
import pypdfium2

from lessons.ingest import CORPUS_DIR
from lessons.transforms import TextCleaner

pdf = pypdfium2.PdfDocument(CORPUS_DIR / "atlas_whitepaper.pdf")
raw_page = pdf[1].get_textpage().get_text_range()
pdf.close()
raw = raw_page[:900] + "\nThe model re-\nranks candidates; Atlas is self-\nhosted, and a self-hosted install keeps data local."
cleaned = TextCleaner().transform_documents([Document(page_content=raw)])[0].page_content
print(t("--- raw ---\n") + raw.replace("\r", "") + t("\n\n--- cleaned ---\n") + cleaned)
print(t("\nlines: {raw} → {cleaned}", raw=raw.count(chr(10)) + 1, cleaned=cleaned.count(chr(10)) + 1))

# %% [markdown]
# ### 9.2 Extracting dates
#
# The release notes write dates in four styles ("2025-03-14", "2 July 2025", "Nov. 24, 2025", "October
# 2025"), the Chinese documents as "2026 年 9 月 9 日" or "2026年9月9日". `extract_dates` finds them with
# patterns and lets python-dateutil turn the English ones into dates; a month without a day is kept with
# *month* precision. `DateExtractor` stores them as metadata — a readable `dates` list and whole-number
# `earliest_date` / `latest_date` (20260909), which Chroma can filter on:
# `filter={"latest_date": {"$gte": 20260901}}`.

# %% [markdown] lang="zh" translates="320e102d9069"
# ### 9.2 提取日期
#
# 发布说明用四种格式写日期（"2025-03-14"、"2 July 2025"、"Nov. 24, 2025"、"October 2025"），
# 中文文档则写成 "2026 年 9 月 9 日" 或 "2026年9月9日"。`extract_dates` 用模式匹配找到它们，
# 并让 python-dateutil 把英文日期转换成日期；只有月份没有日的，保留为*月*精度。`DateExtractor` 把它们存为元数据——
# 一个可读的 `dates` 列表，以及整数形式的 `earliest_date` / `latest_date`（20260909），Chroma 可以按它们过滤：
# `filter={"latest_date": {"$gte": 20260901}}`。

# %%
from lessons.transforms import DateExtractor, extract_dates

dated = DateExtractor().transform_documents(chunks)
with_dates = [d for d in dated if "dates" in d.metadata]
print(t("{dated} of {chunks} chunks mention at least one date", dated=len(with_dates), chunks=len(dated)))
found = pd.DataFrame([
    {"source": d.metadata["source"], "as written": f.text.replace("\n", " "), "date": f.iso, "precision": f.precision}
    for d in with_dates if d.metadata["source"] in ("release_notes.md", "weekly_meeting_zh.txt", "customer_cases_zh.docx")
    for f in extract_dates(d.page_content)
]).drop_duplicates(subset=["source", "as written"])
print(t("distinct dates found per source:"), found.groupby("source")["as written"].count().to_dict())
pd.concat([found[found["source"] == "release_notes.md"], found[found["source"] != "release_notes.md"].groupby("source").head(4)]
          ).rename(columns={"source": t("source"), "as written": t("as written"), "date": t("date"),
                            "precision": t("precision")})

# %%
recent = [d for d in dated if d.metadata.get("latest_date", 0) >= 20260901]
print(t("chunks that mention a date from September 2026 on: {n}", n=len(recent)))
print(pd.Series([d.metadata["source"] for d in recent]).value_counts().to_string())

# %% [markdown]
# ### Exercise 3 — Chinese dates
#
# Write `parse_chinese_date(text)`: the first full date written as 年/月/日 in `text` — spaces between
# the parts allowed, as in "2026 年 9 月 9 日" — as a `datetime.date`, or `None` when there is none or
# it is impossible (2026年2月30日). Use `re.search` with three groups.

# %% [markdown] lang="zh" translates="1685ef73c076"
# ### 练习 3 —— 中文日期
#
# 写一个 `parse_chinese_date(text)`：返回 `text` 中第一个以 年/月/日 写成的完整日期——各部分之间允许有空格，
# 如 "2026 年 9 月 9 日"——类型为 `datetime.date`；没有这样的日期或日期不可能存在（2026年2月30日）时返回 `None`。
# 用带三个分组的 `re.search`。

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

# %% [markdown] lang="zh" translates="e2a8499a24c6"
# ### 9.3 把属性提取到你自己的 schema 里
#
# `DoctranPropertyExtractor` 接受一个属性字典的列表；这里的 schema 是*你*写的一个 Pydantic 类，而模型读的是字段描述。
# `PropertyExtractor` 通过 `invoke_structured` 为每个文档填充它，并把字段展平成元数据（列表拼接起来，丢掉 `None`），
# 以便 Chroma 存储和过滤。默认值为 `None` 的可选字段让模型可以说"文中没有"，而不是编造一个值。改一改 schema，再运行一次这个单元格。

# %%
from typing import Literal

from pydantic import BaseModel, Field

from lessons.transforms import PropertyExtractor


class ReleaseFacts(BaseModel):
    '''Facts about one Tidewell Atlas release, taken from its release note.'''

    version: str | None = Field(None, description="the version number, for example 4.2.1")
    released: str | None = Field(None, description="the release date exactly as written in the text")
    release_kind: Literal["major", "minor", "patch"] | None = Field(
        None, description="major (x.0), minor (x.y) or patch (x.y.z) release")


# %%
release_chunks = [c for c in chunks if c.metadata["source"] == "release_notes.md" and c.page_content.startswith("## Atlas")]
# Dates in the less regular styles first: they are the interesting ones.
release_chunks = sorted(release_chunks, key=lambda c: bool(re.search(r"Released \d{4}-", c.page_content)))[:N_PROPERTY_CHUNKS]
extractor = PropertyExtractor(llm, ReleaseFacts)
start = time.perf_counter()
extracted = extractor.transform_documents(DateExtractor().transform_documents(release_chunks))
timings[t("properties of {n} release notes", n=len(release_chunks))] = time.perf_counter() - start
facts = pd.DataFrame([
    {"heading": d.page_content.splitlines()[0], **{k: d.metadata.get(k) for k in ("version", "release_kind", "released")}}
    for d in extracted
])


# %% lang="zh" translates="80801fc50241"
# 先放写法不太规整的日期：它们才是有意思的。

# %%
def first_date(text):
    found = extract_dates(text or "")
    return found[0].iso if found else None


def kind_by_rule(heading):
    parts = heading.split()[-1].split(".")
    return "patch" if len(parts) == 3 else "major" if parts[-1] == "0" else "minor"


facts["model date"] = [first_date(d.metadata.get("released")) for d in extracted]
facts["pattern date"] = [first_date(d.page_content) for d in extracted]
facts["kind by rule"] = [kind_by_rule(heading) for heading in facts["heading"]]

# %%
print(t("{failures} of {documents} documents without valid properties; dates agree on {dates}, release kinds on {kinds} of {n}",
        failures=extractor.failures, documents=len(release_chunks),
        dates=(facts['model date'] == facts['pattern date']).sum(),
        kinds=(facts['release_kind'] == facts['kind by rule']).sum(), n=len(facts)))
display(facts.rename(columns={"heading": t("heading"), "model date": t("model date"), "pattern date": t("pattern date"),
                              "kind by rule": t("kind by rule")}))
dates_agree, kinds_agree = (facts["model date"] == facts["pattern date"]).sum(), (facts["release_kind"] == facts["kind by rule"]).sum()
display(Markdown(
    t("The last columns check the model against rules: its `released` string, parsed by `extract_dates`, gives the "
      "pattern-based date for {dates_agree} of {n} releases, and its `release_kind` matches the version rule for "
      "{kinds_agree} of {n}", dates_agree=dates_agree, kinds_agree=kinds_agree, n=len(facts))
    + (t(" — seeing no \"minor release\" in the text, a small model guesses.") if kinds_agree < len(facts) else t("."))))

# %% [markdown]
# Atlas versions follow a convention (x.0 major, x.y minor, x.y.z patch) that a three-line rule reads
# without error. Where a rule can do the job, use the rule — free, instant, repeatable — and keep the
# model for the properties no rule can read.
#
# ## 10. What we measured

# %% [markdown] lang="zh" translates="64d5ac0318b3"
# Atlas 的版本号遵循一个约定（x.0 为主版本，x.y 为次版本，x.y.z 为补丁版本），三行代码的规则就能准确无误地读出来。
# 凡是规则能做的事，就用规则——免费、即时、可重复——把模型留给规则读不出的属性。
#
# ## 10. 我们测得了什么

# %%
results_table = pd.DataFrame(
    {
        t("value"): [
            t("{rate:.1%} ({valid}/{chunks}; first try {first:.1%})", rate=report.schema_success_rate,
              valid=report.ok + report.fewer, chunks=report.chunks, first=report.first_try_rate),
            t("{chunk_rate:.1%} chunk · {answer_rate:.1%} answer ({quotes} quotes)", chunk_rate=coverage.chunk_rate,
              answer_rate=coverage.answer_rate, quotes=coverage.quotes),
            *[f"{summary.loc[m, f'hit@{K}']:.3f} / {summary.loc[m, f'MRR@{K}']:.3f}" for m in MODES],
            t("{rebuild:.3f} s vs {model:.1f} s model time (ratio {ratio:.1e}), {calls} LLM calls", rebuild=second_build_seconds,
              model=model_seconds, ratio=cache_ratio, calls=llm_calls),
        ]
    },
    index=[t("schema success rate"), t("evidence coverage"), *[f"hit@{K} / MRR@{K}, {m}" for m in MODES],
           t("rebuild from the QA cache")],
)
results_table

# %%
for step, seconds in timings.items():
    print(t("{step:45} {seconds:8.2f} s", step=step, seconds=seconds))
print(USAGE.report())
