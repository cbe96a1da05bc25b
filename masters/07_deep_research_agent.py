# ---
# jupyter:
#   agentic_rag:
#     quick_parameters:
#       K: 1
#       MAX_STEPS: 2
#       N_MULTI_HOP: 0
#       N_SEARCH: 4
#       N_TABLE: 0
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
# # 07 · A deep-research sub-agent that reads pages, not just chunks
#
# | | |
# |---|---|
# | **You will learn** | how to split a chat assistant into a **main agent** that talks to the user and a **knowledge sub-agent** that researches, with isolated contexts; how the main agent rewrites each turn into a **standalone question**; how the sub-agent loops — search, read a whole **page** around a promising chunk, search again, answer — with every step a **forced structured choice** and a step cap that holds by construction; how to read its trace; why its search tool ranks with a **relevance model** (a cross-encoder), not the chat model; the **tool-calling agent** of LangChain 1.x's docs (a `ToolNode` loop) beside the forced choices, and why the offline path decides with typed choices; what the extra steps buy against single-shot hybrid RAG, and what they cost |
# | **Prerequisites** | notebook 00 (structured output), 02 (hybrid retrieval, neighbour expansion, reranking), 04 (a capped loop), 05 (citations, the contradiction case), 06 (the completeness judge) |
# | **Time** | offline on a 2-core laptop (AMD EPYC, AVX2, no AVX-512), a first Run All from an empty cache folder: **7.8 min** measured (470 s, 32 chat-model calls; the model server evaluated 47 prompt / 16 generated tokens per second; `benchmarks/bench_notebooks.py`, 7 Dec 2026, within the 10-minute budget); seconds on a re-run from the LLM cache; with DeepSeek not measured (no network where the course was written) |
# | **Numbers in the text** | produced offline with Qwen2.5-Coder-1.5B-Instruct Q4_K_M (temperature 0), multilingual-e5-small (4-bit) and the ms-marco-MiniLM-L-12-v2 cross-encoder (ONNX); every number below is computed by the cell above it |
#
# ```
# user turn ─→ main agent ──(mode "decide": no documents needed → reply from the conversation)
#                  │ rewrites the turn into a standalone question        the chat history stays here
#                  ↓
#              sub-agent:  search_chunks(question) → decide ─ search ────→ search_chunks(query) ──┐
#                                                      ↑     ├ read_page ─→ read_page(source, page) ┤
#                                                      └─────┼──────────────────────────────────────┘
#                                                            └ answer, or the step cap → answer + citations
#                  ↓ only the answer and its citations come back          the scratchpad stays here
#              main agent replies
# ```
#
# A single retrieval hands the generator a few chunks and hopes they hold everything. A multi-hop
# question ("which tiers include Atlas Guard, **and** when was it released?") needs two places; a
# table cut in the middle by the chunker needs the rest of its page. The sub-agent looks at what it
# found, names what is still missing, and searches again or reads the page. The local model emits no
# free tool calls (section 4 measures it with one probe call), so each step is a typed choice the model must fill.

# %% [markdown] lang="zh" translates="f3c23db4cfa3"
# # 07 · 深度研究（deep research）子智能体（sub-agent）：读整页，而不只是块（chunk）
#
# | | |
# |---|---|
# | **你将学到** | 怎样把一个聊天助手拆成与用户对话的**主智能体（agent）**和负责研究的**知识子智能体**，两者的上下文相互隔离；主智能体怎样把每一轮对话改写成一个**独立问题**；子智能体怎样循环——检索、读出一个有希望的块所在的整**页**、再检索、作答——每一步都是一次**强制的结构化选择**，步数上限由构造本身保证；怎样读它的轨迹；为什么它的检索工具用一个**相关性模型**（交叉编码器，cross-encoder）而不是对话模型（chat model）来排序；LangChain 1.x 文档里的**工具调用智能体**（一个 `ToolNode` 循环）与强制选择的对比，以及为什么离线路径用有类型的选择来做决定；与单次混合检索（hybrid retrieval）的 RAG 相比，多出来的步骤换来了什么、又花了多少 |
# | **前置条件** | notebook 00（结构化输出，structured output）、02（混合检索、邻块扩展、重排（reranking））、04（有上限的循环）、05（引用（citation）、矛盾案例）、06（完整性（completeness）评审（judge）） |
# | **用时** | 离线、2 核笔记本电脑、从空缓存目录第一次 Run All：实测 **6.8 分钟**（407 秒，32 次对话模型调用；模型服务器每秒读入 82 个输入 token、生成 24 个 token；`benchmarks/bench_notebooks.py --zh`，2026 年 12 月 6 日，在 10 分钟预算以内）；从 LLM 缓存重跑只需几秒；使用 DeepSeek：未测（编写课程的地方没有网络） |
# | **文中的数字** | 由离线的 Qwen2.5-Coder-1.5B-Instruct Q4_K_M（温度 0）、multilingual-e5-small（4 bit）和 ms-marco-MiniLM-L-12-v2 交叉编码器（ONNX）得出；下面的每个数字都由它上方的单元格计算 |
#
# ```
# 用户的一轮 ─→ 主智能体 ──（"decide" 模式：不需要文档 → 根据对话回复）
#                  │ 把这一轮改写成独立问题                   聊天历史留在这里
#                  ↓
#              子智能体：search_chunks(问题) → 决定 ─ 检索 ─→ search_chunks(query) ───┐
#                                                ↑    ├ 读页 ─→ read_page(source, page) ┤
#                                                └────┼─────────────────────────────────┘
#                                                     └ 作答，或到达步数上限 → 回答 + 引用
#                  ↓ 只有回答和引用回到这里                   草稿本留在子智能体那里
#              主智能体回复
# ```
#
# （图中：用户的一轮对话交给主智能体；在 `"decide"` 模式下，不需要文档的轮次直接根据对话回复。
# 否则主智能体把这一轮改写成独立问题——聊天历史留在主智能体这里——交给子智能体：子智能体先用问题本身调用
# `search_chunks`，然后每一步决定再检索（`search_chunks(query)`）、读页（`read_page(source, page)`），
# 或作答；到达步数上限也去作答并给出引用。只有回答和引用回到主智能体——子智能体的草稿本留在它自己那里。）
#
# 一次检索交给生成器几个块，然后指望它们包含了一切。一个多跳问题（“明湖银行给网点员工用的是 Atlas Guard 的哪种模式，**以及**这种模式的默认支持度阈值是多少？”）
# 需要两处信息（客户案例和技术笔记）；一张被分块器（chunker）从中间切断的表格需要它所在页面的其余部分。子智能体看看自己找到了什么，
# 指出还缺什么，然后再检索或读页。本地模型不会自由地发出工具调用（第 4 节用一次探针调用测了这一点），
# 所以每一步都是一个模型必须填写的有类型的选择。

# %% tags=["parameters"]
# Parameters (the test suite runs this notebook with smaller values)
N_MULTI_HOP = 2     # multi-hop gold questions in the measurement (half English, half Chinese); 4 for a larger one (≈ +5 min cold)
N_TABLE = 2         # table gold questions (half English, half Chinese); the contradiction case is always added; 4 for a larger one
MAX_STEPS = 2       # tool calls per question, the first search included (3 for a larger one)
RERANKER = "default"  # the search tool's reranker: "default" (lessons.retrieval.rerank.default_reranker: the cross-encoder), "llm" (the chat model: 10 calls per search), "none"
N_SEARCH = 36       # multi-hop and table gold questions on which section 2 measures what the reranker changes (no model calls)
COMPARE_LLM_RERANKER = False  # True: section 2 also measures the chat model as the reranker (10 calls per question: ≈ 15 min more)
K = 3               # chunks the single-shot baseline answers from (notebook 06's hybrid pipeline)
MAX_TOKENS = 300    # cap on every reply of the chat model
SEED = 7

# %% lang="zh" translates="1361f365d9cd"
# 参数（测试套件用更小的值运行这个 notebook）
# 测量用的多跳金标准问题数（中英文各半）；测得更多用 4（冷启动约多 5 分钟）
# 表格金标准问题数（中英文各半）；矛盾的例子总会加上；测得更多用 4
# 每个问题的工具调用数，含第一次搜索（测得更多用 3）
# 搜索工具的重排器："default"（lessons.retrieval.rerank.default_reranker：交叉编码器）、"llm"（对话模型：每次搜索 10 次调用）、"none"
# 第 2 节用来测量重排器带来什么变化的多跳和表格金标准问题数（不调用模型）
# True：第 2 节也测量用对话模型做重排器（每个问题 10 次调用：约多 15 分钟）
# 单次检索基线据以回答的块数（notebook 06 的混合检索流水线）
# 对话模型每次回复的上限

# %%
import time

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from lessons.core import USAGE, for_reader, get_chat_model, model_banner, t, t_labels, t_marked
from lessons.ingest import course_example, for_course_language, load_documents, load_gold
from lessons.retrieval import build_index, chunk_knowledge_base

pd.set_option("display.max_colwidth", 100)
print(model_banner())
llm = get_chat_model(max_tokens=MAX_TOKENS)
gold = load_gold()
chunks = chunk_knowledge_base()
store = build_index(chunks, name="kb")
print(t("{n} chunks in the knowledge base index", n=len(chunks)))

# %% [markdown]
# ## 1. Pages, not just chunks
#
# A chunk is what the chunker cut; a **page** is what a reader turns. `lessons.agents.deep_research.PageStore`
# holds the converted documents (the same Docling conversion the chunks come from) as pages: the real
# pages of the PDF and the PPTX, and for Markdown, DOCX, HTML and text the sections under each heading
# — a section longer than 1,800 characters is paginated at paragraph or sentence ends. Each page has an
# address, `(source_id, page_index)`, and `locate(chunk)` tells which page a chunk sits on.

# %% [markdown] lang="zh" translates="7c15f525400c"
# ## 1. 页面，而不只是块
#
# 分块（chunking）是分块器切出来的东西；**页面**是读者翻的东西。`lessons.agents.deep_research.PageStore`
# 把转换后的文档（与分块来源相同的 Docling 转换）按页保存：PDF 和 PPTX 用真实的页，
# Markdown、DOCX、HTML 和纯文本则用每个标题下的小节——超过 1,800 个字符的小节会在段落或句子结束处分页。
# 每一页都有一个地址 `(source_id, page_index)`，`locate(chunk)` 告诉你一个块位于哪一页。

# %%
from lessons.agents import PageStore

pages = PageStore.from_documents(load_documents())
pd.DataFrame([{t("source"): s, t("pages"): len(pages.page_numbers(s)),
               t("characters per page (median)"): int(pd.Series([len(pages.read(s, i).text) for i in pages.page_numbers(s)]).median())}
              for s in pages.sources]).set_index(t("source")).T

# %%
# a chunk that ends where its page goes on with a table, in the notebook's language
source, holds = for_course_language(en=("atlas_whitepaper.pdf", "| Tier"), zh=("data_security_policy_zh.docx", "各类事件的内部上报时限"))
chunk = next(c for c in chunks if c.metadata["source"] == source and holds in c.page_content)
page = pages.read(chunk.metadata["source"], pages.locate(chunk))
print(t("A chunk of {chunk} characters sits on {source}, {title} ({page} characters).", chunk=len(chunk.page_content),
        source=page.source, title=page.title, page=len(page.text)))
print(t("\nThe chunk ends:   …"), chunk.page_content[-160:].replace("\n", " "))
print(t("\nThe page goes on: …"), page.text[page.text.find(chunk.page_content[-60:]) + 60:][:300].replace("\n", " "))

# %% lang="zh" translates="4495095495dd"
# 一个 notebook 所用语言的块：它结束的地方，页面接着是一张表格

# %% [markdown]
# ## 2. The sub-agent's two tools
#
# **`search_chunks(query)`** (`ChunkSearch`): the hybrid retriever of notebook 02 (BM25 + dense, RRF)
# returns 20 chunks; each is expanded with its neighbours (`lessons.retrieval.context_expansion.expand_hits`; a
# hit that falls inside a better block joins it). The best 10 blocks are then reranked as whole
# passages by `lessons.retrieval.rerank.default_reranker` — a **relevance model**: the cross-encoder
# ms-marco-MiniLM-L-12-v2 (run offline with ONNX) reads the question and a passage together and scores how
# well the passage answers it. It learned English, so Chinese questions take the course's routed choice
# (notebook 02 measured the routes). Ranking passages is a relevance model's job; the chat model writes and
# decides. The chat model *can* rerank — its P(yes) for each block, `RERANKER = "llm"` — at 10 model calls per
# search; the table below measures what a reranker changes. The sub-agent is shown the
# first four hits, each cut to 300 characters, **with the page it sits on**: to see more while it
# decides, it reads the page. The final answer is written from the pages it read and the *whole*
# chunks behind the snippets (`answer_context`, up to 4,000 characters).
#
# **`read_page(source_id, page_index)`**: the whole page, cut to 1,500 characters (the local model's
# window is about 4,000 tokens). A tool that raises would end the loop; this one returns the error as
# an observation — the agent reads it and can correct itself.

# %% [markdown] lang="zh" translates="1f06f798a34b"
# ## 2. 子智能体的两个工具
#
# **`search_chunks(query)`**（`ChunkSearch`）：notebook 02 的混合检索器（retriever，BM25 + dense，RRF）
# 返回 20 个块；每个块都用它的相邻块扩展（`lessons.retrieval.context_expansion.expand_hits`；
# 落在一个更好的块之内的命中会并入那个块）。然后最好的 10 个块作为完整段落由 `lessons.retrieval.rerank.default_reranker` 重排——
# 这是一个**相关性模型**：交叉编码器 ms-marco-MiniLM-L-12-v2（用 ONNX 离线运行）把问题和一个段落放在一起读，
# 给这个段落能多好地回答问题打分。它学的是英文，所以中文问题走课程选定的路由（notebook 02 测过各条路由）。
# 给段落排序是相关性模型的活；对话模型负责写和做决定。对话模型*也能*重排——它对每个块给出的 P(yes)，
# 即 `RERANKER = "llm"`——代价是每次检索 10 次模型调用；下面的表测的就是重排器（reranker）改变了什么。
# 子智能体看到的是前四个命中，每个截到 300 个字符，**并标出它所在的页面**：做决定时想看更多，它就去读那一页。
# 最终回答根据它读过的页面和片段背后的*完整的*块写成（`answer_context`，最多 4,000 个字符）。
#
# **`read_page(source_id, page_index)`**：整页内容，截到 1,500 个字符（本地模型的上下文窗口约 4,000 个 token）。
# 一个抛出异常的工具会终止循环；这个工具把错误作为一次观察结果返回——智能体读到它，就能自我纠正。

# %%
from lessons.agents import ChunkSearch, search_reranker
from lessons.retrieval import hybrid_over

first_stage = hybrid_over(chunks, store, k=20, candidates=20)
reranker = search_reranker(RERANKER, llm, top_n=10)
search = ChunkSearch(first_stage, chunks, pages, reranker=reranker)
print(f"RERANKER = {RERANKER!r}: {type(reranker).__name__}", getattr(reranker, "routes", ""))
observation = search(for_course_language(en="Atlas Guard release", zh="Atlas Guard 严格模式"))
print(observation.header)
pd.DataFrame([{t("source"): d.metadata["source"], t("page"): d.metadata["page"], t("snippet"): d.page_content[:120]}
              for d in observation.evidence])

# %% [markdown]
# What does the reranker change in what the agent sees? For `N_SEARCH` multi-hop and table gold
# questions (half English, half Chinese): the share of their gold evidence quotes inside the four hits
# the first search shows (their whole chunks), without a reranker and with `default_reranker` — no model
# calls, so it is cheap to measure on more questions than the agent runs. `COMPARE_LLM_RERANKER = True` adds
# the chat model as the reranker.

# %% [markdown] lang="zh" translates="1dee8e90076a"
# 重排器改变了智能体看到的什么？在 `N_SEARCH` 道多跳和表格类金标准问题上（中英文各半）：
# 第一次检索显示的四个命中（取它们的完整的块）里包含了多少比例的金标准证据引文（evidence quote）——不用重排器，以及用 `default_reranker`——
# 不调用模型，所以可以低成本地在比智能体实际运行的更多问题上测。`COMPARE_LLM_RERANKER = True`
# 会再加上对话模型作为重排器。

# %%
from tqdm.auto import tqdm

from lessons.evaluation import search_recall
from lessons.ingest import balanced_sample

search_questions = balanced_sample([q for q in gold if q.type in ("multi_hop", "table")], N_SEARCH, SEED)
rankers = {t("first stage (no rerank)"): None,
           "default_reranker": reranker if RERANKER == "default" else search_reranker("default", llm)}
if COMPARE_LLM_RERANKER:
    rankers[t("chat model P(yes)")] = reranker if RERANKER == "llm" else search_reranker("llm", llm)
recall = search_recall(tqdm(search_questions, desc=t("Searches")),
                       {label: ChunkSearch(first_stage, chunks, pages, reranker=r) for label, r in rankers.items()})
search_table = recall.pivot_table(index="reranker", columns="language", values="evidence recall", sort=False)
search_table[t("all")] = recall.groupby("reranker", sort=False)["evidence recall"].mean()
search_table[t("seconds per search")] = recall.groupby("reranker", sort=False)["seconds"].mean()
t_labels(search_table.round(2), ["reranker", "language"])

# %% [markdown]
# ### Exercise 1 — the page-reading tool
#
# Write `my_read_page(pages, source_id, page_index, max_chars)`. Use `pages.read(source_id, page_index)`,
# which returns a `Page` (`source`, `index`, `title`, `text`) or raises `PageNotFound` whose message
# names what exists. Return an `Observation(action, header, evidence=(...), error="")`:
#
# - for a page that exists: `evidence` is one `Document` with the page's text, cut to `max_chars`
#   (say how much was cut), and the metadata `source`, `page` (the index) and `kind="page"`;
# - for a bad source or page: **no exception** — an `Observation` whose `error` is the message.

# %% [markdown] lang="zh" translates="72a8ccbc2f29"
# ### 练习 1 —— 读页工具
#
# 写 `my_read_page(pages, source_id, page_index, max_chars)`。用 `pages.read(source_id, page_index)`，
# 它返回一个 `Page`（`source`、`index`、`title`、`text`），或者抛出 `PageNotFound`，其消息会列出存在的内容。
# 返回一个 `Observation(action, header, evidence=(...), error="")`：
#
# - 页面存在时：`evidence` 是一个 `Document`，内容是这一页的文本，截到 `max_chars`
#   （并说明截掉了多少），元数据为 `source`、`page`（页的索引）和 `kind="page"`；
# - 来源或页码有误时：**不抛异常**——返回一个 `error` 为该消息的 `Observation`。

# %% tags=["exercise"]
from langchain_core.documents import Document

from lessons.agents import Observation, PageNotFound


def my_read_page(pages, source_id, page_index, max_chars=1500):
    ### BEGIN SOLUTION
    header = f"read_page({source_id!r}, {page_index!r})"
    try:
        page = pages.read(source_id, page_index)
    except PageNotFound as error:
        return Observation("read_page", header, error=str(error))
    text = page.text if len(page.text) <= max_chars else page.text[:max_chars] + f" […{len(page.text) - max_chars} more characters]"
    document = Document(text, metadata={"source": page.source, "page": page.index, "title": page.title, "kind": "page"})
    return Observation("read_page", f"{header} — {page.title}", (document,))
    ### END SOLUTION


# %%
from checks.nb07 import check_read_page

check_read_page(my_read_page)

# %% [markdown]
# The course's version is `lessons.agents.deep_research.read_page`; it also accepts a source id copied with
# the notes' decoration, `"(faq_zh.html, page 3)"`, which the small model writes. What the agent sees for
# a good page and for the two kinds of mistake a small model makes (a source name it invented, a page
# that does not exist). The model reads these messages in English, the language of its prompts, whatever the
# course language; the notebook shows you the same message in yours (`error_for_reader`):

# %% [markdown] lang="zh" translates="7a7e124ea24e"
# 课程的版本是 `lessons.agents.deep_research.read_page`；它还接受带着笔记里那种修饰抄过来的来源 id，
# 比如 `"(faq_zh.html, page 3)"`——小模型就会这么写。下面是智能体在读一个正常页面时看到的内容，
# 以及小模型会犯的两类错误（编造出来的来源名、不存在的页面）时看到的内容。不论课程用哪种语言，模型读到的这些消息都是英文，
# 和它读到的其他输入一样；notebook 给你看的是同一条消息的中文（`error_for_reader`）：

# %%
from lessons.agents import read_page

good_page = for_course_language(en=("atlas_whitepaper.pdf", 6), zh=("data_security_policy_zh.docx", 7))
for source_id, page_index in [good_page, ("pricing.pdf", 3), ("faq_zh.html", 99)]:
    seen = read_page(pages, source_id, page_index)
    print(seen.header, "→", (t("ERROR: ") + seen.error_for_reader) if seen.error else seen.evidence[0].page_content[:150].replace("\n", " ") + " …")

# %% [markdown]
# ## 3. The sub-agent's loop: one typed decision per step
#
# After every observation the model fills `ResearchDecision`: first `reason` (the part of the question
# the notes do not answer yet), then `action` — `search`, `read_page` or `answer` — and the arguments
# (`query`, or `source_id` and `page_index`; all fields are required, empty when they do not apply: a
# small model skips optional fields). The notes it reads number every piece of evidence, say which
# searches were done and which pages can be read. Two worked examples in the prompt were needed: without
# them the 1.5B model searched for the whole question again at every step; examples about Atlas itself
# were copied word for word into the queries of Chinese questions, so the examples are about recipes.
#
# Guard rails, all in code: the first step is always a search for the question itself (no model call);
# a search whose query is empty or repeats an earlier one (compared without case, spaces and punctuation)
# searches for the `reason` instead — the missing part the model named, which in the probe was often
# better than its query — and if that was searched too, the observation says so; a page read twice is
# not read again; the counter
# of tool calls lives in the graph's state and is advanced by the tool steps; at `MAX_STEPS` the decide
# step does not ask the model, it goes to the answer. The answer step reuses notebook 05's research
# prompt and `ResearchDraft` (answer, cited numbers, found) over the pages read and the search results
# not already inside them.

# %% [markdown] lang="zh" translates="1f180588d566"
# ## 3. 子智能体的循环：每一步一个有类型的决定
#
# 每次观察之后，模型填写 `ResearchDecision`：先是 `reason`（问题中笔记还没有回答的部分），然后是 `action`——
# `search`、`read_page` 或 `answer`——以及参数（`query`，或 `source_id` 和 `page_index`；所有字段都是必填的，
# 不适用时留空：小模型会跳过可选字段）。它读的笔记给每条证据编号，并写明做过哪些检索、哪些页面可以读。
# 提示词（prompt）里需要两个示例：没有示例时，1.5B 的模型每一步都拿整个问题再检索一遍；而关于 Atlas 本身的示例
# 又被原样抄进了中文问题的检索词里，所以示例讲的是菜谱。
#
# 防护措施全部写在代码里：第一步总是用问题本身检索（不调用模型）；
# 检索词为空或与之前的某次检索重复（比较时忽略大小写、空格和标点）时，改用 `reason` 检索——
# 也就是模型指出的缺失部分，在探针测试中它往往比模型给的检索词更好——如果这个也检索过了，观察结果会说明这一点；
# 同一页读两次就不再读；工具调用的计数器存放在图的状态里，由工具步骤推进；到达 `MAX_STEPS` 时，
# 决定步骤不再询问模型，直接去作答。作答步骤复用 notebook 05 的研究提示词和 `ResearchDraft`
# （回答、引用的编号、是否找到），基于读过的页面以及不在这些页面之内的检索结果。

# %%
from lessons.agents import DeepResearchAgent, ResearchDecision

print({name: str(f.annotation) for name, f in ResearchDecision.model_fields.items()})
researcher = DeepResearchAgent(llm, search, pages, max_steps=MAX_STEPS)
display(Markdown("```mermaid\n" + researcher.graph.get_graph().draw_mermaid() + "\n```"))

# %%
from lessons.agents import trace_rows


def show_research(result):
    display(t_labels(pd.DataFrame(trace_rows(result)).set_index("step"),
                     ["step", "action", "argument", "reason", "result", "seconds"]))
    print(t("→ {outcome} after {calls} tool calls ({decisions} decisions by the model); pages read: {pages}",
            outcome=t_marked(result.outcome), calls=result.tool_calls, decisions=result.decisions, pages=result.pages_read or t("none")))
    print(f"→ {result.answer}")
    for citation in result.citations:
        print(t("   cites {source}", source=citation.source) + ("" if citation.page is None else t(", page {page}", page=citation.page)))


# two documents: the white paper and the release notes (in Chinese: a customer case and the technical note)
demo = course_example(gold, en="en-056", zh="zh-031")
print(demo.question, t("\nreference:"), demo.answer)
demo_result = researcher.research(demo.question)
show_research(demo_result)

# %% lang="zh" translates="904895ee4ef1"
# 两份文档：白皮书和发布说明（中文版：一个客户案例和技术说明）

# %% [markdown]
# The prompt of the model's last decision, exactly as it was sent (in English, whatever the notebook's language) —
# everything the sub-agent knows is in it; nothing of any conversation is:

# %% [markdown] lang="zh" translates="e04d09fc8dcd"
# 模型最后一次决定时的提示词，与发送时一字不差（不论 notebook 用哪种语言，都是英文，所以中文版把它折叠起来，点开即可阅读）。
# 它依次写着：一步一步研究问题的规则（先找出笔记还没有回答问题的哪一部分，再选下一步：用简短的新查询 `search`、
# 读取结果所在的整页 `read_page`，或在笔记回答了问题的每一部分时 `answer`）、两个来自别的文档的好步骤示例、问题本身、
# 到目前为止的笔记、已做过的检索、可以读取的页面，以及还剩几步。子智能体知道的一切都在里面；任何对话内容都不在里面：

# %%
from lessons.agents import last_decision_prompt
from lessons.core import show_model_text

show_model_text(last_decision_prompt(demo_result, MAX_STEPS), t("the prompt of the model's last decision"))

# %% [markdown]
# ## 4. The same tools as a tool-calling agent — the pattern of LangChain's docs
#
# LangChain 1.x's docs build an agent differently: the model is **given the tools** (`bind_tools`) and
# replies with *tool calls* — structured requests such as `search_chunks(query="…")` — or with a final
# text. A `ToolNode` (LangGraph's prebuilt node) runs the calls and appends their results as
# `ToolMessage`s; the loop goes back to the model and ends when it replies without a call.
# `langchain.agents.create_agent(model, tools)` packages exactly this loop (with a
# `ToolCallLimitMiddleware` for a cap). `lessons.agents.tool_agent.build_tool_agent` builds it as a small
# LangGraph graph you can read: `agent` ⇄ `tools`, the sub-agent's own two tools (their results quote
# document text as `<document>` blocks under the data rule), and — as in every loop of this course — a
# **counter of tool calls in the state**: the tools step runs at most the calls left and advances it; at
# the cap the model is asked *without* tools, so the loop ends by construction.
#
# Here the model chooses, freely, between a call and a text. A forced structured decision
# (`invoke_structured`) does not leave that choice: the server forces the one call and its grammar makes
# the model fill the schema. Does the active model emit tool calls when it may? One probe call, with the
# two tools offered and the demo question:

# %% [markdown] lang="zh" translates="2f2430aab2e8"
# ## 4. 同样的工具做成工具调用智能体——LangChain 文档里的模式
#
# LangChain 1.x 的文档用另一种方式搭智能体：把**工具交给模型**（`bind_tools`），模型回复*工具调用*——
# 诸如 `search_chunks(query="…")` 这样的结构化请求——或者一段最终文本。`ToolNode`（LangGraph 预置的节点）
# 执行这些调用，把结果作为 `ToolMessage` 追加进去；循环回到模型，直到它不带调用地回复为止。
# `langchain.agents.create_agent(model, tools)` 封装的正是这个循环（用 `ToolCallLimitMiddleware` 设上限）。
# `lessons.agents.tool_agent.build_tool_agent` 把它搭成一个你能读懂的小 LangGraph 图：`agent` ⇄ `tools`，
# 用的是子智能体自己的两个工具（它们的结果按数据规则把文档文本放在 `<document>` 块里引用），并且——和本课程的每个循环一样——
# **状态里有一个工具调用计数器**：工具步骤最多执行剩下的调用次数并推进计数器；到达上限时，模型在*没有*工具的情况下被询问，
# 所以循环由构造本身保证会结束。
#
# 这里模型可以自由选择发出调用还是写文本。强制的结构化决定（`invoke_structured`）不给这个选择：
# 服务端强制那一次调用，它的语法约束让模型必须填写 schema。当前的模型在可以自由选择时会发出工具调用吗？
# 一次探针调用，提供这两个工具和演示问题：

# %%
from lessons.agents import build_tool_agent, message_rows, probe_tool_calling, research_tools, run_tool_agent

tools = research_tools(search, pages)
probe = probe_tool_calling(llm, tools, demo.question)
print(t("{banner}\n→ tool calls emitted: {calls}", banner=model_banner(), calls=probe.tool_calls or t("none")))
if not probe.emits_tool_calls:
    print(t("\nWhat it wrote instead (as text — no ToolNode runs this):\n") + probe.text[:900])

# %% [markdown]
# When the model writes its "call" as text, nothing runs it: the loop would end at once with that text as
# the answer. That is why the course's offline path decides with typed choices (section 3) — they work
# with the small local model *and* with DeepSeek. When the active model does emit tool calls (the probe
# above says which case you are in), the next cell runs the tool-calling agent with it.
#
# To see the loop work offline, a **scripted** model plays the tool-calling model:
# `lessons.agents.tool_agent.scripted_researcher` makes planned calls — its calls are scripted, the tools and
# their results are real — and writes a scripted closing text when it is asked without tools at the cap.

# %% [markdown] lang="zh" translates="3db711ffe89d"
# 当模型把它的"调用"写成文本时，没有任何东西去执行它：循环会立刻结束，把那段文本当作回答。
# 这就是为什么课程的离线路径用有类型的选择来做决定（第 3 节）——它们对本地小模型*和* DeepSeek 都管用。
# 当前模型确实发出工具调用时（上面的探针会告诉你属于哪种情况），下一个单元格就用它运行工具调用智能体。
#
# 为了在离线时也能看到这个循环运转，由一个**脚本化的**模型来扮演会调用工具的模型：
# `lessons.agents.tool_agent.scripted_researcher` 发出预先计划好的调用——调用是脚本写好的，工具和它们的结果是真实的——
# 并在到达上限、没有工具可用时写出一段脚本化的收尾文本。

# %%
from lessons.agents import scripted_researcher

planned_calls = for_course_language(
    en=[("search_chunks", {"query": "Atlas Guard subscription tiers"}),
        ("read_page", {"source_id": "atlas_whitepaper.pdf", "page_index": 4}),
        ("search_chunks", {"query": "Atlas Guard first release"}),
        ("search_chunks", {"query": "Atlas 4.2 release date"})],
    zh=[("search_chunks", {"query": "明湖银行 网点员工 Atlas Guard 模式"}),
        ("read_page", {"source_id": "customer_cases_zh.docx", "page_index": 7}),
        ("search_chunks", {"query": "Atlas Guard 严格模式 无依据的陈述"}),
        ("search_chunks", {"query": "Atlas Guard 支持度 默认阈值"})])
script = scripted_researcher(
    planned_calls,
    t("[SCRIPTED — not a model's answer] A tool-calling model would now answer from the tool results above."))
tool_agent = build_tool_agent(script, tools, max_steps=MAX_STEPS)
display(Markdown("```mermaid\n" + tool_agent.get_graph().draw_mermaid() + "\n```"))
scripted_run = run_tool_agent(tool_agent, demo.question, MAX_STEPS)
print(t("SCRIPTED model: {calls} tool calls (cap {cap}), {turns} model turns, ended by the cap: {at_cap}",
        calls=scripted_run.tool_calls, cap=MAX_STEPS, turns=scripted_run.model_calls, at_cap=scripted_run.at_cap))
t_labels(pd.DataFrame(message_rows(scripted_run.messages)), ["message", "tool calls", "text"])

# %%
if probe.emits_tool_calls:
    live_run = run_tool_agent(build_tool_agent(llm, tools, max_steps=MAX_STEPS), demo.question, MAX_STEPS)
    display(t_labels(pd.DataFrame(message_rows(live_run.messages)), ["message", "tool calls", "text"]))
    print(t("{calls} tool calls, ended by the cap: {at_cap}\n→ {answer}", calls=live_run.tool_calls, at_cap=live_run.at_cap,
            answer=live_run.answer))
else:
    live_run = None
    print(t("The active model emits no tool calls (probe above): the tool-calling agent is not run with it. "
            "With DeepSeek (AGENTIC_RAG_MODEL=deepseek) this cell runs it."))

# %% [markdown]
# ## 5. The main agent: a standalone question, and isolated contexts
#
# A user in a conversation says "and when was it released?". The sub-agent must not see the chat (it
# would spend its small window on it, and could answer the wrong turn), so the main agent first
# rewrites the turn into a question that stands on its own. With no history there is nothing to
# resolve: no model call.
#
# ### Exercise 2 — the standalone-question rewrite
#
# Write `my_standalone_question(model, history, user_turn)`: `history` is a list of `(role, text)`
# pairs. With an empty history return `user_turn` unchanged without calling the model. Otherwise ask
# for `StandaloneQuestion` with `invoke_structured(model, StandaloneQuestion, prompt)`, where the prompt
# is `STANDALONE_PROMPT.format(history=format_history(history), turn=user_turn)`, and return its
# `question` (stripped) — or the turn itself if the rewrite is empty.

# %% [markdown] lang="zh" translates="0ede0ce75b81"
# ## 5. 主智能体：独立问题，以及相互隔离的上下文
#
# 对话中的用户说："那它是什么时候发布的？"子智能体不能看到这段聊天（它会把自己很小的上下文窗口花在聊天上，
# 还可能回答错了轮次），所以主智能体先把这一轮改写成一个能独立成立的问题。没有历史时就没有什么需要消解的：不调用模型。
#
# ### 练习 2 —— 改写成独立问题
#
# 写 `my_standalone_question(model, history, user_turn)`：`history` 是 `(role, text)` 对的列表。
# 历史为空时原样返回 `user_turn`，不调用模型。否则用 `invoke_structured(model, StandaloneQuestion, prompt)`
# 请求一个 `StandaloneQuestion`，其中提示词是 `STANDALONE_PROMPT.format(history=format_history(history), turn=user_turn)`，
# 返回它的 `question`（去掉首尾空白）——如果改写结果为空，就返回这一轮原话。

# %% tags=["exercise"]
from lessons.agents import STANDALONE_PROMPT, StandaloneQuestion, format_history
from lessons.core import invoke_structured


def my_standalone_question(model, history, user_turn):
    ### BEGIN SOLUTION
    if not history:
        return user_turn
    prompt = STANDALONE_PROMPT.format(history=format_history(history), turn=user_turn)
    return invoke_structured(model, StandaloneQuestion, prompt).question.strip() or user_turn
    ### END SOLUTION


# %%
from checks.nb07 import check_standalone_question

check_standalone_question(my_standalone_question)

# %% [markdown]
# `lessons.agents.deep_research.MainAgent` keeps the chat history, rewrites each turn with
# `standalone_question`, calls the sub-agent and keeps **only the reply** (answer and sources) in its
# history. Two modes: `"always"` retrieves on every turn; `"decide"` first asks the model a typed
# `TurnDecision` — does this turn need the documents (`yes`/`no`, and a reply when `no`)? The unit tests
# (`tests/test_deep_research.py`) check the isolation with markers: no sub-agent prompt contains the
# chat history, no main-agent prompt contains the sub-agent's notes.

# %% [markdown] lang="zh" translates="a0c632a44fea"
# `lessons.agents.deep_research.MainAgent` 保存聊天历史，用 `standalone_question` 改写每一轮，调用子智能体，
# 并且在它的历史里**只保留回复**（回答和来源）。两种模式：`"always"` 每一轮都检索；`"decide"` 先向模型要一个有类型的
# `TurnDecision`——这一轮需要文档吗（`yes`/`no`，为 `no` 时附上回复）？单元测试
# （`tests/test_deep_research.py`）用标记检查这种隔离：没有任何子智能体的提示词包含聊天历史，
# 也没有任何主智能体的提示词包含子智能体的笔记。

# %%
from lessons.agents import MainAgent


def show_turns(agent):
    display(pd.DataFrame([{t("user"): turn.user, t("retrieved"): turn.retrieved, t("standalone question"): turn.standalone,
                           t("tool calls"): turn.research.tool_calls if turn.research else 0,
                           t("pages read"): len(turn.research.pages_read) if turn.research else 0,
                           t("reply"): for_reader(turn.reply)[:160], t("seconds"): round(turn.seconds, 1)} for turn in agent.turns]))


always = MainAgent(llm, researcher, mode="always")
for turn in for_course_language(en=["Which subscription tiers include Atlas Guard?", "And when was it first released?"],
                                zh=["明湖银行给网点员工用的是 Atlas Guard 的哪种模式？", "这种模式遇到没有依据的句子会怎么处理？"]):
    always.ask(turn)
show_turns(always)

# %%
decide_mode = MainAgent(llm, researcher, mode="decide")
for turn in for_course_language(en=["Which subscription tiers include Atlas Guard?", "Thanks, that is all I needed."],
                                zh=["明湖银行给网点员工用的是 Atlas Guard 的哪种模式？", "谢谢，我要的就是这些。"]):
    decide_mode.ask(turn)
show_turns(decide_mode)
print(t("The main agent's history (all it will ever see of the research):"))
for role, text in decide_mode.history:
    print(f"  {role}: {for_reader(text)[:150]}")

# %% [markdown]
# ## 6. Measure: deep research against single-shot hybrid RAG
#
# The same gold questions through both methods: multi-hop questions (the evidence sits in two
# documents), table questions, and the contradiction case (the Q3 deck says the Team tier costs €54,
# the white paper and the FAQ say €45). The baseline is notebook 06's `hybrid` pipeline: one hybrid
# retrieval, an answer from the top `K` chunks. Per question and method:
#
# - **complete** — the course's completeness judge (`lessons.evaluation.judges`, the one notebooks 05 and 06
#   use: copy the reference's key fact, copy what the answer says, then decide) — does the answer state the
#   reference's key fact? 0 for an abstention; a judge failure is counted, not guessed;
# - **evidence recall** — the share of the gold evidence quotes found in what the method *read* (the
#   sub-agent's notes, and the pages and whole chunks its answer was written from; the baseline's
#   top-`K` chunks);
# - **tool calls**, **pages read**, **LLM calls** and **tokens** per question (the judge's excluded;
#   cached answers count with the tokens they cost when first asked), and seconds.

# %% [markdown] lang="zh" translates="1f70140ac465"
# ## 6. 测量：深度研究对比单次混合检索 RAG
#
# 同一批金标准问题分别走两种方法：多跳问题（证据分布在两个文档里）、表格问题，以及矛盾案例
# （Q3 演示文稿说 Team 套餐每月 €54，白皮书和 FAQ 说是 €45）。基线（baseline）是 notebook 06 的 `hybrid` 流水线（pipeline）：
# 一次混合检索，根据前 `K` 个块作答。对每道问题、每种方法：
#
# - **complete**（完整）——课程的完整性评审（`lessons.evaluation.judges`，notebook 05 和 06 用的也是它：
#   抄下参考答案的关键事实，抄下回答里说了什么，再做判断）——回答是否说出了参考答案的关键事实？
#   拒答（abstain）记 0；评审失败会被计数，而不是猜一个值；
# - **evidence recall**（证据召回率，recall@k）——在方法*读过*的内容中找到的金标准证据引文的比例
#   （子智能体的笔记，以及写回答所依据的页面和完整的块；基线的前 `K` 个块）；
# - 每道问题的 **tool calls**（工具调用）、**pages read**（读过的页数）、**LLM calls**（LLM 调用）和 **tokens**
#   （不含评审的调用；缓存命中的回答按第一次提问时花掉的 token 计），以及秒数。

# %%
from lessons.evaluation import (
    Resources,
    build_hybrid,
    compare_methods,
    measure_sample,
    run_deep_research,
    run_single_shot,
    runs_table,
)

sample = measure_sample(gold, N_MULTI_HOP, N_TABLE, seed=SEED)
single_shot = build_hybrid(Resources(chunks=chunks, store=store, llm=llm, k=K))
runs, started = [], time.perf_counter()
for question in tqdm(sample, desc=t("Questions")):
    runs.append(run_deep_research(question, researcher, llm))
    runs.append(run_single_shot(question, single_shot, llm, K))
print(t("{n} questions × 2 methods in {seconds:.0f} s", n=len(sample), seconds=time.perf_counter() - started))
comparison = compare_methods(runs)
t_labels(comparison.round(2), ["method", "questions", "complete", "evidence recall", "tool calls", "at the cap", "pages read",
                               "LLM calls", "tokens", "seconds", "judge failures", "deep research", "single-shot hybrid"])

# %%
t_labels(compare_methods(runs, by="type").round(2),
         ["method", "type", "questions", "complete", "evidence recall", "tool calls", "at the cap", "pages read",
          "LLM calls", "tokens", "seconds", "judge failures", "deep research", "single-shot hybrid"])

# %%
fig, (ax_quality, ax_cost) = plt.subplots(1, 2, figsize=(12, 3.8))
t_labels(comparison[["complete", "evidence recall"]].T,
         ["method", "complete", "evidence recall", "deep research", "single-shot hybrid"]).plot.bar(ax=ax_quality, rot=0)
ax_quality.set_ylim(0, 1.05)
ax_quality.set_ylabel(t("mean per question"))
ax_quality.set_title(t("Quality"))
t_labels(comparison[["LLM calls", "tool calls"]].T,
         ["method", "LLM calls", "tool calls", "deep research", "single-shot hybrid"]).plot.bar(ax=ax_cost, rot=0)
ax_cost.set_title(t("Cost per question (tokens: {tokens})",
                    tokens=", ".join(f"{t_marked(m)} {n:,.0f}" for m, n in comparison["tokens"].items())))
for ax in (ax_quality, ax_cost):
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.12), ncol=2, frameon=False)
plt.tight_layout()
plt.show()

# %%
table = runs_table(runs)
t_labels(table[["id", "type", "language", "method", "complete", "evidence recall", "tool calls", "pages read", "LLM calls",
                "tokens", "seconds", "answer"]].assign(answer=table["answer"].str[:90], method=table["method"].map(t_marked)).round(2),
         ["type", "language", "method", "complete", "evidence recall", "tool calls", "pages read", "LLM calls", "tokens",
          "seconds", "answer"])

# %% [markdown]
# The table cuts answers at 90 characters. Where the two methods were judged differently, read the
# whole answers against the reference before you trust the judge:

# %% [markdown] lang="zh" translates="c84ef33e7437"
# 表格把回答截到 90 个字符。在两种方法被判得不一样的地方，先对照参考答案读完整的回答，再决定是否相信评审：

# %%
reference = {q.id: q.answer for q in sample}
disagree = table[table.groupby("id")["complete"].transform("nunique") > 1]
print(t("{n} of {total} questions judged differently for the two methods", n=disagree['id'].nunique(), total=len(sample)))
for qid, rows in disagree.groupby("id", sort=False):
    print(t("\n{qid}  reference: {reference}", qid=qid, reference=reference[qid]))
    for method, complete, answer in zip(rows["method"], rows["complete"], rows["answer"]):
        print(t("  {method} (complete {complete}): {answer}", method=t_marked(method), complete=complete, answer=answer))

# %% [markdown]
# ### The contradiction case
#
# An acceptable answer states the conflict or follows the sources that agree with each other (€45);
# quoting only the Q3 deck's €54 is wrong. As in notebook 05, the question is the gold set's `en-052`, asked in the
# reader's language (`contradiction_case`): the one document that disagrees is English, so the Chinese copy reads
# it across languages. `contradiction_handling` (notebook 05) reads which of these each method's answer did:

# %% [markdown] lang="zh" translates="e6bc34a5e74d"
# ### 矛盾案例
#
# 一个可以接受的回答要么指出冲突，要么采信彼此一致的那些来源（€45）；只引用 Q3 演示文稿的 €54 是错的。
# 和 notebook 05 一样，问题是金标准问题集（gold set）里的 `en-052`，用读者的语言提问（`contradiction_case`）：唯一与其他来源矛盾的文档是英文的，
# 所以中文版跨语言去读它。
# `contradiction_handling`（notebook 05）判断每种方法的回答属于哪一种：

# %%
case = table[table["type"] == "contradiction"]
t_labels(case[["method", "contradiction", "answer"]].assign(method=case["method"].map(t_marked)),
         ["method", "contradiction", "answer"])

# %% [markdown]
# ### What our run says
#
# Rendered from this run's tables (`lessons.evaluation.deep_research_eval.method_findings` for the measurement);
# the judge is notebook 06's completeness judge — better than a free-text judge, still a small model: read
# the answers in the table above before you quote a share.

# %% [markdown] lang="zh" translates="9095a42f9aab"
# ### 我们这次运行说明了什么
#
# 由这次运行的表格渲染而成（测量部分用 `lessons.evaluation.deep_research_eval.method_findings`）；
# 评审是 notebook 06 的完整性评审——比自由文本的评审好，但仍是一个小模型：在引用某个比例之前，先读读上面表格里的回答。

# %%
from lessons.evaluation import method_findings

by_language = search_table.drop(columns=[t("all"), t("seconds per search")])
rerank_gain = search_table.loc["default_reranker", t("all")] - search_table.loc[t("first stage (no rerank)"), t("all")]
search_finding = t(
    "**The search tool's reranker** ({n} questions, four hits shown): evidence recall {recalls}"
    " — `default_reranker` {change} it by {gain:.2f} over the first stage (per language: {per_language}).",
    n=len(search_questions),
    recalls="; ".join(f"{label} {row[t('all')]:.2f}" for label, row in search_table.iterrows()),
    change=t("raises") if rerank_gain > 0 else t("lowers") if rerank_gain < 0 else t("does not change"),
    gain=abs(rerank_gain),
    per_language="; ".join(f"{lang} {by_language.loc[t('first stage (no rerank)'), lang]:.2f} → "
                           f"{by_language.loc['default_reranker', lang]:.2f}" for lang in by_language.columns),
)

# %%
second = always.turns[1]
findings = [
    t("Our run: {n} questions ({multi_hop} multi-hop, {table} table, the contradiction case), "
      "`MAX_STEPS = {max_steps}`, search reranker `{reranker}`.",
      n=len(sample), multi_hop=N_MULTI_HOP, table=N_TABLE, max_steps=MAX_STEPS, reranker=RERANKER),
    *method_findings(runs),
    search_finding,
    t("**Tool calling**: the active model emitted {n} tool call(s) when it was free to", n=len(probe.tool_calls))
    + (t(" — the tool-calling agent ran with it (above).") if probe.emits_tool_calls else
       t(" — it wrote its call as text, so offline the loop decides with forced typed choices; the scripted model "
         "drove the `ToolNode` loop to {calls} tool calls and the cap ended it: {at_cap}.",
         calls=scripted_run.tool_calls, at_cap=scripted_run.at_cap)),
    t("**The conversation** (section 5): \"{user}\" became \"{standalone}\"; the reply: "
      "\"{reply}\" — check it against the release notes: a standalone question is necessary, not sufficient.",
      user=second.user, standalone=second.standalone, reply=for_reader(second.reply)[:200]),
]
display(Markdown("\n".join(f"- {line}" for line in findings)))

# %%
print(USAGE.report())
