# ---
# jupyter:
#   agentic_rag:
#     quick_parameters:
#       DOCUMENTS:
#       - release_notes.md
#       - faq_zh.html
#       K: 1
#       LATER:
#       - support_faq.html
#       NIGHTLY_QUESTIONS: 1
#       PROBES:
#       - en-067
#       - zh-041
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
# # 08 · From notebook to service: uploads, a background worker, a live index and a nightly evaluation
#
# | | |
# |---|---|
# | **You will learn** | how the course's pieces become a service other programs call: an HTTP API (FastAPI) that accepts uploads at once and hands them to a **background worker** through **jobs** in a database; why the upload returns a job id and not the answer; how to watch jobs and wait for one with a **timeout and a clear error**; a **live index** whose searches see a document's old chunks or its new ones, never a mix; search (hybrid, then the course's reranker) and ask (an answer with citations) over HTTP; how adding and deleting a document changes the answer; an **idempotent upload** that queues nothing when you run it twice; a **nightly evaluation** that writes questions for the new documents, scores the running service and keeps a trend across runs; how to start and stop it all cleanly |
# | **Prerequisites** | notebooks 01 (ingestion, chunks), 02 (hybrid retrieval, the cross-encoder), 05 (the research agent's cited answers), 06 (generated test sets, the judges) |
# | **Time** | offline on a 2-core laptop (AMD EPYC, AVX2, no AVX-512), a first Run All from an empty cache folder: **5.3 min** measured (318 s, 38 chat-model calls; the model server evaluated 42 prompt / 16 generated tokens per second; `benchmarks/bench_notebooks.py`, 7 Dec 2026, within the 10-minute budget); seconds on a re-run from the LLM cache; with DeepSeek not measured (no network where the course was written) |
# | **Numbers in the text** | produced offline with Qwen2.5-Coder-1.5B-Instruct Q4_K_M (temperature 0), multilingual-e5-small (4-bit) and the ms-marco-MiniLM-L-12-v2 cross-encoder (ONNX); every number below is computed by the cell above it |
#
# Seven notebooks ran the pipeline inside a kernel. A team's documents do not arrive that way: people
# upload files whenever they like, others search at the same time, and someone wants to know next week
# whether the answers got worse. The code in `service/` is the course as a **service**:
#
# | piece | module | what it does |
# |---|---|---|
# | HTTP API | `service.api` (FastAPI, uvicorn) | upload, jobs, documents, delete, search, ask, nightly runs; writes need an API key |
# | records | `service.db` (SQLAlchemy: SQLite, or PostgreSQL by a setting) | documents, jobs with leases, the active generation of each document, the nightly runs |
# | files | `service.filestore` | the raw uploads in a folder, under safe names |
# | live index | `service.index` (Chroma) | each document's chunks, one generation per job |
# | worker | `service.worker` | claims a job, converts (notebook 01), chunks, embeds, upserts, commits |
# | search and ask | `service.pipeline` | hybrid retrieval, the course's reranker, notebook 05's cited answer |
# | nightly job | `service.nightly` | notebook 06's test-set generation and judges, against the running service |
# | client | `service.client` | a typed HTTP client, and `running_service()` which starts and stops the server |
#
# This notebook drives the real service end to end: a server process on 127.0.0.1, a temporary data
# folder, an API key made for this run.

# %% [markdown] lang="zh" translates="24afb79914d5"
# # 08 · 从 notebook 到服务：上传、后台任务、实时索引与夜间评测（nightly evaluation）
#
# | | |
# |---|---|
# | **你将学到** | 课程的各个部分怎样变成一个供其他程序调用的服务：一个 HTTP API（FastAPI），它立即接受上传，再通过数据库里的**作业**交给**后台工作线程**；为什么上传返回的是作业 id 而不是答案；怎样查看作业，怎样等待一个作业并设好**超时和清楚的错误信息**；一个**实时索引**，它的检索看到的要么是一个文档的旧块（chunk）、要么是新块，绝不会是两者的混合；通过 HTTP 检索（混合检索（hybrid retrieval），再用课程的重排器（reranker））和提问（带引用（citation）的回答）；添加和删除一个文档怎样改变回答；一次**幂等的上传**，运行两遍也不会多排一个作业；一个**夜间评测**，它为新文档出题、给正在运行的服务打分，并在多次运行之间保留趋势；怎样干净地启动和停止这一切 |
# | **前置条件** | notebook 01（导入、分块（chunking））、02（混合检索、交叉编码器（cross-encoder））、05（研究智能体（agent）带引用的回答）、06（生成的测试集、评审（judge）） |
# | **用时** | 离线、2 核笔记本电脑、从空缓存目录第一次 Run All：实测 **5.9 分钟**（353 秒，59 次对话模型（chat model）调用；模型服务器每秒读入 87 个输入 token、生成 26 个 token；`benchmarks/bench_notebooks.py --zh`，2026 年 12 月 6 日，在 10 分钟预算以内）；从 LLM 缓存重跑只需几秒；使用 DeepSeek：未测（编写课程的地方没有网络） |
# | **文中的数字** | 由离线的 Qwen2.5-Coder-1.5B-Instruct Q4_K_M（温度 0）、multilingual-e5-small（4 bit）和 ms-marco-MiniLM-L-12-v2 交叉编码器（ONNX）得出；下面的每个数字都由它上方的单元格计算 |
#
# 前面七个 notebook 都在一个内核里运行流水线（pipeline）。团队的文档却不是这样来的：人们随时上传文件，别人同时在检索，
# 还有人想在下周知道回答是不是变差了。`service/` 里的代码就是做成**服务**的这门课程：
#
# | 组件 | 模块 | 作用 |
# |---|---|---|
# | HTTP API | `service.api`（FastAPI、uvicorn） | 上传、作业、文档、删除、检索、问答、夜间运行；写操作需要 API 密钥 |
# | 记录 | `service.db`（SQLAlchemy：SQLite，或由一项设置改用 PostgreSQL） | 文档、带租约的作业、每个文档当前生效的版本（generation）、夜间运行 |
# | 文件 | `service.filestore` | 原始的上传文件，用安全的文件名存放在一个文件夹里 |
# | 实时索引 | `service.index`（Chroma） | 每个文档的块，每个作业一个版本 |
# | 工作线程 | `service.worker` | 领取一个作业，转换（notebook 01）、分块、嵌入（embedding）、upsert、提交 |
# | 检索与问答 | `service.pipeline` | 混合检索、课程的重排器、notebook 05 带引用的回答 |
# | 夜间任务 | `service.nightly` | notebook 06 的测试集生成和评审，对着正在运行的服务 |
# | 客户端 | `service.client` | 一个有类型的 HTTP 客户端，以及启动、停止服务器的 `running_service()` |
#
# 这个 notebook 端到端地驱动真实的服务：127.0.0.1 上的一个服务器进程、一个临时数据文件夹、一个为这次运行生成的 API 密钥。

# %% tags=["parameters"]
# Parameters (the test suite runs this notebook with smaller values)
FULL = False  # True: upload the whole course corpus (every file of data/corpus)
DOCUMENTS = ["release_notes.md", "support_faq.html", "faq_zh.html", "meeting_notes_2026_09.txt"]  # uploaded first
LATER = ["weekly_meeting_zh.txt", "atlas_admin_guide.md"]  # uploaded between the two nightly runs
NIGHTLY_QUESTIONS = 1  # questions each nightly run generates from the new documents (one chunk each); each one adds a
                       # generation call, an answer through the service's grading loop and two judge calls — the two
                       # runs show the mechanism and a trend, not a measurement
# out-of-KB gold questions on the uploaded documents' topics (Atlas, 明湖银行): every nightly run asks those in
# the course's language, and its report shows how many the service refused
PROBES = ["en-067", "en-068", "zh-041", "zh-042"]
K = 3  # chunks an answer is written from
JOB_TIMEOUT = 900  # seconds a batch of uploads may take to be indexed before we give up
SEED = 8

# %% lang="zh" translates="67584d13e77f"
# 参数（测试套件用更小的值运行这个 notebook）
# True：上传整个课程语料库（data/corpus 的每个文件）
# 先上传
# 在两次夜间评测之间上传
# 每次夜间评测从新文档生成的问题数（每个问题取一个块）；每多一个问题就多一次
# 生成调用、一次经服务评分循环的回答和两次评审调用——两次运行展示的是机制和趋势，
# 不是一次测量
# 关于所上传文档主题（Atlas、明湖银行）的知识库外金标准问题：每次夜间评测都用课程语言提出这些问题，
# 报告显示服务拒答了多少个
# 每个回答所依据的块数
# 一批上传完成索引的最长秒数，超时就放弃

# %%
import contextlib
import time

import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from lessons.core import USAGE, get_chat_model, model_banner, t, t_labels, t_marked
from lessons.evaluation import save_test_set
from lessons.ingest import CORPUS_DIR, in_course_language, load_gold
from service.client import running_service
from service.nightly import ABSTAINED, PROBES_ASKED, TREND_METRICS
from service.settings import stores_for_reader

pd.set_option("display.max_colwidth", 90)
pd.set_option("display.width", 200)
if FULL:
    DOCUMENTS = sorted(p.name for p in CORPUS_DIR.iterdir() if p.is_file() and p.name not in LATER)
print(model_banner())
notebook_started = time.perf_counter()

# %%
stack = contextlib.ExitStack()  # what the last section closes: the server, the client, the temporary folder
started = time.perf_counter()
service = stack.enter_context(running_service())
client = stack.enter_context(service.client())
start_seconds = time.perf_counter() - started
health = client.health()
settings_shown = {**stores_for_reader(health["stores"]), "worker threads": health["workers"], "url": service.url,
                  "data folder": str(service.data_dir)}  # the payload's English values in the reader's language
t_labels(pd.DataFrame({"setting": settings_shown}),
         ["setting", "database", "file store", "index", "collection", "reranker", "worker threads", "url", "data folder"])

# %% lang="zh" translates="ab97941d67ad"
# 最后一节要关闭的东西：服务器、客户端、临时文件夹
# 把返回数据里的英文值显示成读者的语言

# %% [markdown]
# `running_service()` started `python -m service api` in its own process on a free port of 127.0.0.1 and
# waited until `/v1/health` answered. The server got its own data folder (database, file store, embedded
# Chroma) in a temporary directory and an API key generated for this run, so two runs never collide and
# no key is written down anywhere. In a script you would write `with running_service() as service: …`;
# a notebook spreads the work over cells, so an `ExitStack` holds the server until the last section.

# %% [markdown] lang="zh" translates="a22aabf33f30"
# `running_service()` 在 127.0.0.1 的一个空闲端口上，以独立进程启动了 `python -m service api`，并一直等到
# `/v1/health` 有了回应。服务器在一个临时目录里拿到自己的数据文件夹（数据库、文件存储、嵌入式 Chroma）和一个为这次运行生成的
# API 密钥，所以两次运行永远不会互相冲突，密钥也不会被写到任何地方。在脚本里你会写 `with running_service() as service: …`；
# notebook 把工作分散在多个单元格里，所以由一个 `ExitStack` 一直持有服务器，直到最后一节。

# %%
display(Markdown(t("The server answered its health check {seconds:.1f} s after the start "
                   "(the embedder and the cross-encoder load on first use, not here).", seconds=start_seconds)))

# %% [markdown]
# ## 1. Uploads are accepted at once; a worker indexes them
#
# An upload stores the file and queues a **job**; the reply comes back before any conversion starts, with
# the document's id and the job's. The worker thread inside the server claims pending jobs one by one
# (with a lease it renews, so a worker that dies mid-job gives the job back), converts the file, chunks it,
# embeds the chunks and commits the new generation. The table below is what we saw each time we asked.

# %% [markdown] lang="zh" translates="ae2ffdd9900d"
# ## 1. 上传立即被接受；由工作线程建立索引
#
# 一次上传会保存文件并排入一个**作业**；回复在任何转换开始之前就回来了，带着文档的 id 和作业的 id。服务器里的工作线程
# 逐个领取待处理的作业（带着一个它不断续期的租约，这样中途死掉的工作线程会把作业交还回去），转换文件、分块、嵌入块，
# 然后提交新的版本。下表是我们每次询问时看到的情况。

# %%
paths = [CORPUS_DIR / name for name in DOCUMENTS]
uploads = client.upload_files(paths)
jobs, timeline = client.watch([u.job_id for u in uploads], timeout=JOB_TIMEOUT, every=1.0)
states = pd.DataFrame(timeline).fillna(0).set_index("seconds").astype(int)
t_labels(states.iloc[sorted({0, len(states) // 3, 2 * len(states) // 3, len(states) - 1})],
         ["seconds", "uploading", "pending", "running", "done", "failed", "superseded", "cancelled"])

# %%
job_table = pd.DataFrame([{"file": j.file_name, "status": t_marked(j.status), "chunks": j.chunks, "attempts": j.attempts,
                           "seconds": round(j.seconds or 0, 1), "error": j.error} for j in jobs.values()])
t_labels(job_table, ["file", "status", "chunks", "attempts", "seconds", "error"])


# %% [markdown]
# ### Exercise 1: wait for one job, with a timeout and a clear error
#
# A client that waits for a job must stop waiting some day. Write `wait_for_job(client, job_id, timeout, every)`:
# ask `client.job(job_id)` (a `service.client.Job`), return it as soon as it is **final** (`job.final`: done,
# failed, superseded or cancelled — a failed job is finished too, its `error` says why), sleep `every` seconds
# between two requests, and when `timeout` seconds have passed raise `TimeoutError` with a message that names
# the job and the state it is stuck in.

# %% [markdown] lang="zh" translates="54d4801be0da"
# ### 练习 1：等待一个作业，带超时和清楚的错误信息
#
# 等待作业的客户端总有一天得停下来。写一个 `wait_for_job(client, job_id, timeout, every)`：调用
# `client.job(job_id)`（得到一个 `service.client.Job`），作业一进入**终态**（`job.final`：done、failed、superseded
# 或 cancelled——失败的作业也算结束了，它的 `error` 说明原因）就把它返回；两次请求之间睡 `every` 秒；过了
# `timeout` 秒还没结束，就抛出 `TimeoutError`，消息里写明是哪个作业、它停在什么状态。

# %% tags=["exercise"]
def wait_for_job(client, job_id, timeout=60.0, every=0.5):
    """Poll `client.job(job_id)` until the job is final; TimeoutError naming the job and its state after `timeout` s."""
    ### BEGIN SOLUTION
    deadline = time.monotonic() + timeout
    while True:
        job = client.job(job_id)
        if job.final:
            return job
        if time.monotonic() >= deadline:
            raise TimeoutError(f"job {job_id} ({job.file_name}) is still {job.status} after {timeout:g} s — "
                               "look at the service's log, or wait longer")
        time.sleep(every)
    ### END SOLUTION


# %%
from checks.nb08 import check_wait_for_job

check_wait_for_job(wait_for_job)

# %% [markdown]
# `service.client.wait_for_jobs` is the same loop for many jobs (`client.wait(job_ids)`); the cells below
# use it, so they run whatever your answer does.
#
# ## 2. Search: hybrid, then the course's reranker
#
# `POST /v1/search` runs `service.pipeline.retrieve` over one snapshot of the active generations: dense and
# BM25 fused by reciprocal rank fusion (notebook 02), the fused top 20 reordered by
# `lessons.retrieval.rerank.default_reranker` — the packaged cross-encoder for an English question, the fused order
# for a Chinese one (the English model pushes good Chinese passages down). Each hit's `score` is the
# cross-encoder's probability for English, the fusion score for Chinese.

# %% [markdown] lang="zh" translates="fabd5b3793f6"
# `service.client.wait_for_jobs` 是同一个循环的多作业版本（`client.wait(job_ids)`）；下面的单元格用的是它，
# 所以无论你的答案怎样，它们都能运行。
#
# ## 2. 检索：混合检索，再用课程的重排器
#
# `POST /v1/search` 在当前生效版本的一个快照上运行 `service.pipeline.retrieve`：dense 检索和 BM25 用倒数排名融合（reciprocal rank fusion, RRF）
# 合并（notebook 02），融合后的前 20 个再由 `lessons.retrieval.rerank.default_reranker` 重排（reranking）——英文问题用
# 打包的交叉编码器，中文问题保留融合后的顺序（英文模型会把好的中文段落往下压）。每个命中的 `score`，英文是交叉编码器给出的
# 概率，中文是融合分数。

# %%
gold = {q.id: q for q in load_gold()}
held = {p.name for p in paths}
questions = [q for q in gold.values() if q.answerable and q.sources and {s.file for s in q.sources} <= held]
asked = [next(q for q in questions if q.language == language) for language in ("en", "zh")
         if any(q.language == language for q in questions)]
rows = []
for question in asked:
    for rank, hit in enumerate(client.search(question.question, k=K), 1):
        rows.append({"question": question.id, "rank": rank, "source": hit.metadata.get("source"),
                     "score": round(hit.metadata.get("score", float("nan")), 3), "text": hit.page_content[:90]})
search_table = pd.DataFrame(rows)
search_hits = {q.id: any(r["source"] in {s.file for s in q.sources} for r in rows if r["question"] == q.id) for q in asked}
t_labels(search_table, ["question", "rank", "source", "score", "text"])

# %% [markdown]
# ## 3. Ask: an answer with citations
#
# `POST /v1/ask` retrieves the same way and runs notebook 04's grading loop over the top chunks: the relevance
# gate (the chat model's P(yes)), then the answerability check (the judge quotes its evidence, code verifies it).
# It answers from the chunks that passed and cites them — the reply names each cited chunk's file and page — or
# says the documents do not hold the answer, with `answerability` saying why and `gate` how far below its
# threshold the refusal was. The gate's thresholds were calibrated on the course corpus, and such thresholds do
# not travel to other documents (`benchmarks/bench_answerability.py --gate-sweep`): for yours, calibrate them with
# the evaluation command (`[gate] calibrate = N`, notebook 06) and set `AGENTIC_RAG_GATE_FILE` to the `gate.json`
# it writes. (The answer is written in the server's process: its model calls are not in this kernel's usage
# report at the end.)

# %% [markdown] lang="zh" translates="61f4e567d4f8"
# ## 3. 提问：带引用的回答
#
# `POST /v1/ask` 用同样的方式检索，再在排在最前的块上运行 notebook 04 的评分循环（grading loop）：先过相关性门控（gate），它读对话模型的
# P(yes)；再过可答性检查（answerability check）：评审模型引用证据，由代码核对。它根据通过的块作答并引用它们——回复写明每个被引用块的文件和
# 页码——或者直说文档里没有答案：`answerability` 说明原因，`gate` 说明拒答（abstain）时离阈值差多少。门控的阈值是在课程语料库（corpus）上
# 校准的，这样的阈值搬到别的文档上并不可靠（`benchmarks/bench_answerability.py --gate-sweep`）：用在你自己的文档上时，
# 先用评测命令校准（`[gate] calibrate = N`，见 notebook 06），再把 `AGENTIC_RAG_GATE_FILE` 设为它写出的 `gate.json`。
# （回答是在服务器进程里写出来的：它的模型调用不在本内核末尾的用量报告里。）

# %%
replies = {}
for question in asked:
    replies[question.id] = client.ask(question.question, k=K)
    reply = replies[question.id]
    print(t("{qid}: {question}\n  answer: {answer}\n  reference: {reference}", qid=question.id,
            question=question.question, answer=reply["answer"][:300], reference=question.answer))
    for citation in reply["citations"]:
        page = t(" page {page}", page=citation["page"]) if citation["page"] else ""
        print(t("  cites {source}{page}: {text}…", source=citation["source"], page=page, text=repr(citation["text"][:80])))

# %% [markdown]
# ## 4. A new document changes the answer; deleting it takes it away
#
# A question none of the uploaded documents answers: first the service should abstain. Then we upload a
# short note that does answer it, ask again, delete the note and ask a third time. A delete hides the
# document from searches at once (the database stops listing its generation); the worker removes its
# chunks a little later.

# %% [markdown] lang="zh" translates="7ae5f35e4073"
# ## 4. 新文档改变回答；删掉它，回答也随之改变
#
# 先问一个已上传的文档都回答不了的问题：服务应该拒答（abstain）。然后我们上传一份能回答它的简短笔记，再问一次；接着删掉这份笔记，
# 问第三次。删除会立即让文档从检索结果中消失（数据库不再列出它的版本）；工作线程稍后才删掉它的块。

# %%
NOTE_NAME = "office_network_note.md"
NOTE = t("# Lisbon office guest network\n\nVisitors to the Lisbon office use the guest Wi-Fi network "
         "'Tidewell-Guest'. Its password is 'harbour-lights-2026', changed on the first of every month by the "
         "office manager, Marta Sousa.\n")
NEW_QUESTION = t("What is the password of the guest Wi-Fi network in the Lisbon office?")


def cited_sources(reply):
    return sorted({c["source"] for c in reply["citations"]})


changes = {"before the note": client.ask(NEW_QUESTION, k=K)}
note = client.upload(NOTE_NAME, NOTE.encode())
note_job = client.wait([note.job_id], timeout=JOB_TIMEOUT)[note.job_id]
changes["after the upload"] = client.ask(NEW_QUESTION, k=K)
client.delete(note.document_id)
changes["after the delete"] = client.ask(NEW_QUESTION, k=K)
note_in_search = any(h.metadata.get("source") == NOTE_NAME for h in client.search(NEW_QUESTION, k=K))
change_table = pd.DataFrame([{"stage": stage, "abstained": r["abstained"], "cites": ", ".join(cited_sources(r)) or "—",
                              "password in the answer": "harbour-lights-2026" in r["answer"], "answer": r["answer"][:120]}
                             for stage, r in changes.items()]).set_index("stage")
t_labels(change_table, ["stage", "before the note", "after the upload", "after the delete", "abstained", "cites",
                        "password in the answer", "answer"])

# %%
after, deleted = changes["after the upload"], changes["after the delete"]
display(Markdown(t(
    "The note was indexed as {chunks} chunk(s) in {seconds:.1f} s. Before it, the service {before}; with it, the "
    "answer {cites} and {contains} the password; after the delete, a search for the question {finds} the note and "
    "the answer {still_cites}.",
    chunks=note_job.chunks, seconds=note_job.seconds,
    before=t("abstained") if changes["before the note"]["abstained"] else t("answered anyway"),
    cites=t("cites the note") if NOTE_NAME in cited_sources(after) else t("does not cite the note"),
    contains=t("contains") if "harbour-lights-2026" in after["answer"] else t("does not contain"),
    finds=t("still finds") if note_in_search else t("no longer finds"),
    still_cites=t("still cites it") if NOTE_NAME in cited_sources(deleted) else t("no longer cites it"))))


# %% [markdown]
# ### Exercise 2: upload only what is new
#
# Run the upload cell of section 1 twice and the service converts and embeds every file twice. Write
# `upload_new(client, paths)`: read what the service holds with `client.documents()` (each document's `name`
# and `sha256`, the SHA-256 of the bytes it indexed; `None` when nothing was indexed), upload with
# `client.upload_file(path)` only the files whose name is not held with the same bytes
# (`service.client.sha256_of_file(path)`), and return a dict from each file's name to its `Upload`, or
# `None` for a file skipped.

# %% [markdown] lang="zh" translates="a9cfc3ff3234"
# ### 练习 2：只上传新的文件
#
# 把第 1 节的上传单元格运行两遍，服务就会把每个文件转换、嵌入两遍。写一个 `upload_new(client, paths)`：用
# `client.documents()` 读出服务已有的文档（每个文档的 `name` 和 `sha256`，即它所索引的字节的 SHA-256；什么都还没索引时为
# `None`），只用 `client.upload_file(path)` 上传那些服务里没有同名且字节相同的文件（`service.client.sha256_of_file(path)`），
# 并返回一个 dict：每个文件名对应它的 `Upload`，被跳过的文件对应 `None`。

# %% tags=["exercise"]
def upload_new(client, paths):
    """Upload only the files the service does not hold with the same bytes; {file name: Upload or None}."""
    ### BEGIN SOLUTION
    from pathlib import Path

    from service.client import sha256_of_file

    held = {document["name"]: document["sha256"] for document in client.documents()}
    result = {}
    for path in map(Path, paths):
        result[path.name] = None if held.get(path.name) == sha256_of_file(path) else client.upload_file(path)
    return result
    ### END SOLUTION


# %%
from checks.nb08 import check_upload_new

check_upload_new(upload_new)

# %%
again = client.upload_new(paths)  # the course's version of the exercise (service.client.ServiceClient.upload_new)
display(Markdown(t("Uploading the same files again: {skipped} of {n} skipped, {queued} job(s) queued.",
                   skipped=sum(u is None for u in again.values()), n=len(again),
                   queued=sum(u is not None for u in again.values()))))

# %% lang="zh" translates="fb8f1c8cb1aa"
# 课程自带的这道练习的写法（service.client.ServiceClient.upload_new）

# %% [markdown]
# ## 5. The nightly evaluation and its trend
#
# Nobody re-runs notebook 06 by hand every night. `service.nightly.run_nightly` (`python -m service nightly`
# from cron) takes the documents indexed since the last run, generates grounded questions from their chunks
# (notebook 06's `generate_test_set`), asks the **running service** each one through `/v1/ask`, scores the
# replies with notebook 06's judges (chunk recall; factual consistency and completeness, typed verdicts) and
# stores the run with its metrics in the database, where `GET /v1/eval/runs` lists them. We run it twice:
# once now, and once after a second batch of uploads — two points of a trend. The questions are few and the
# judge is the small model, so read a change between two runs as a prompt to look, not as a result.
#
# Generated questions cover only the new documents, and every one of them is answerable: alone they would never
# show whether the service still says "not in the documents". So every run also asks the same few **out-of-KB
# probes** (here gold questions on the uploaded documents' topics that they do not answer; in production a
# JSONL file named by `AGENTIC_RAG_SERVICE_NIGHTLY_PROBES`), and the trend gains "abstained (out-of-KB)": the
# share the service refused. A run without probes says the abstention was not measured.

# %% [markdown] lang="zh" translates="84477ec6b389"
# ## 5. 夜间评测及其趋势
#
# 没有人会每天晚上手动重跑 notebook 06。`service.nightly.run_nightly`（由 cron 运行 `python -m service nightly`）
# 取出上次运行以来新索引的文档，从它们的块生成有依据的问题（notebook 06 的 `generate_test_set`），通过 `/v1/ask`
# 把每个问题交给**正在运行的服务**，用 notebook 06 的评审给回复打分（块召回率（recall@k）；事实一致性（faithfulness）和完整性（completeness），有类型的裁决），
# 再把这次运行连同指标存进数据库，`GET /v1/eval/runs` 会列出它们。我们运行两次：现在一次，第二批上传之后再一次——
# 趋势上的两个点。问题很少，评审又是小模型，所以两次运行之间的变化只是提醒你去看一看，而不是一个结论。
#
# 生成的问题只覆盖新文档，而且全都可以回答：只靠它们，永远看不出服务是否还会说"文档里没有"。所以每次运行还会提出
# 同样几个**知识库（knowledge base）外的探针问题**（out-of-KB probe；这里是金标准问题集（gold set）中话题与已上传文档相关、但文档并未回答的问题；在生产环境中是
# `AGENTIC_RAG_SERVICE_NIGHTLY_PROBES` 指定的 JSONL 文件），趋势中多了"拒答（知识库外）"：服务拒答的比例。
# 没有探针的运行会写明没有测量拒答。

# %%
llm = get_chat_model()
probes = in_course_language([q for q in load_gold() if q.id in PROBES])  # the standing out-of-KB probes
probe_file = save_test_set(probes, service.data_dir / "nightly_probes.jsonl")
first_run = service.nightly(llm, questions=NIGHTLY_QUESTIONS, seed=SEED, probes=probe_file)
later = client.upload_files([CORPUS_DIR / name for name in LATER])
later_jobs = client.wait([u.job_id for u in later], timeout=JOB_TIMEOUT)
second_run = service.nightly(llm, questions=NIGHTLY_QUESTIONS, seed=SEED, probes=probe_file)
runs = pd.DataFrame([{"run": r["run_id"], "new documents": r["documents"], "questions": r["questions"],
                      PROBES_ASKED: r["metrics"].get(PROBES_ASKED), **{m: r["metrics"].get(m) for m in TREND_METRICS}}
                     for r in client.eval_runs() if r["status"] == "done"]).set_index("run")
t_labels(runs, ["run", "new documents", "questions", "out-of-KB probes", "factual consistency", "completeness",
                "abstained (out-of-KB)"])

# %% lang="zh" translates="ad2ab650baac"
# 固定的知识库外探测问题

# %%
fig, ax = plt.subplots(figsize=(7, 3.2))
trend = t_labels(runs[list(TREND_METRICS)], ["factual consistency", "completeness", "abstained (out-of-KB)"])
for metric in trend.columns:
    points = trend[metric].dropna()
    ax.plot(points.index, points.values, marker="o", label=metric)
ax.set_xticks(runs.index)
ax.set_xlabel(t("nightly run"))
ax.set_ylim(-0.05, 1.05)
ax.set_title(t("The service on its new documents, and on the out-of-KB probes"))
ax.legend(fontsize=8, loc="lower left")
plt.show()
print(t("report: {report}", report=second_run["report"]))

# %% [markdown]
# ## 6. Stop the service
#
# Closing the stack stops the server with SIGTERM: uvicorn finishes the requests it has, the worker threads
# stop after their current job, the process exits; then the client closes and the temporary folder goes.

# %% [markdown] lang="zh" translates="9c935c3b695d"
# ## 6. 停止服务
#
# 关闭这个 stack 会用 SIGTERM 停止服务器：uvicorn 处理完手上的请求，工作线程做完当前的作业后停下，进程退出；
# 然后客户端关闭，临时文件夹被删除。

# %%
import httpx

data_dir = service.data_dir
stack.close()
try:
    httpx.get(f"{service.url}/v1/health", timeout=2)
    still_answers = True
except httpx.HTTPError:
    still_answers = False
display(Markdown(t("The server {stopped} (exit status {status}); after it, the health check {answers} and the data "
                   "folder {folder}.",
                   stopped=t("needed SIGKILL") if service.process.killed else t("stopped on SIGTERM"),
                   status=service.process.process.returncode,
                   answers=t("still answers") if still_answers else t("gets no answer"),
                   folder=t("is still there") if data_dir.exists() else t("is gone"))))

# %% [markdown]
# ## What we found

# %% [markdown] lang="zh" translates="88176c282aeb"
# ## 我们发现了什么

# %%
from lessons.core import num

first, second = first_run["metrics"], second_run["metrics"]
recall, complete = TREND_METRICS[0], "completeness"
nightly_finding = t("The nightly runs: run {first_id} with {first_questions} question(s) on {first_documents} new document(s) "
                  "({recall} {first_recall}, {complete} {first_complete}); run {second_id} with {second_questions} on "
                  "{second_documents} ({recall} {second_recall}, {complete} {second_complete}) — each run scores only the "
                  "documents added since the one before, so the two are different questions, not a before and after.",
                  first_id=first_run["run_id"], first_questions=first.get("questions", 0),
                  first_documents=first.get("new documents", 0), first_recall=num(first.get(recall)),
                  first_complete=num(first.get(complete)), second_id=second_run["run_id"],
                  second_questions=second.get("questions", 0), second_documents=second.get("new documents", 0),
                  second_recall=num(second.get(recall)), second_complete=num(second.get(complete)), recall=recall,
                  complete=complete)

# %%
findings = [
    t("Our run: {n} documents uploaded first, {later} between the nightly runs; the worker indexed {done} of the "
      "first {jobs} ({chunks} chunks) in {seconds:.0f} s.",
      n=len(paths), later=len(later), done=sum(j.status == "done" for j in jobs.values()), jobs=len(jobs),
      chunks=int(job_table["chunks"].fillna(0).sum()), seconds=timeline[-1]["seconds"]),
    t("Search (hybrid + reranker): {results}.", results=t("; ").join(
        t("{qid} found a chunk of its gold source in the top {k}", qid=qid, k=K) if hit
        else t("{qid} missed a chunk of its gold source in the top {k}", qid=qid, k=K)
        for qid, hit in search_hits.items())),
    t("Ask: {results}.", results=t("; ").join(
        t("{qid} abstained", qid=qid) if r["abstained"]
        else t("{qid} answered citing {sources}", qid=qid, sources=", ".join(cited_sources(r)) or t("nothing"))
        for qid, r in replies.items())),
    nightly_finding,
    t("Out-of-KB probes (the same {n} question(s) every night, which the documents do not answer): the service "
      "abstained on {first_share} in run {first_id} and {second_share} in run {second_id}.",
      n=len(probes), first_share=num(first.get(ABSTAINED)), first_id=first_run["run_id"],
      second_share=num(second.get(ABSTAINED)), second_id=second_run["run_id"]),
    t("The whole notebook took {minutes:.1f} min.", minutes=(time.perf_counter() - notebook_started) / 60),
]
display(Markdown("\n".join(f"- {line}" for line in findings)))

# %%
print(USAGE.report())
