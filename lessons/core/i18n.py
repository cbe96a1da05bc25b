"""The course language: which language a notebook's own printed strings and the checks' hints speak.

Introduced in notebook 00 (setup). The English and the Chinese copy of a notebook run the very same
code; what differs is the language `course_language()` returns, and so what `t()` gives back:


    timings[t("one short answer")] = ...            # "one short answer" / "一次简短回答"
    print(t("{n} characters", n=1200))               # "1200 characters" / "1200 个字符"

How the language is chosen (one setting, no action in the notebook):

1. a kernel running in a notebook folder of the course speaks that folder's language — `notebooks/zh/`
   (or `solutions/zh/`) is Chinese, `notebooks/` and `solutions/` are English. Jupyter starts a kernel in
   the notebook's folder, and so does `tools.notebook_runner`, so the Chinese copy speaks Chinese
   without the learner doing anything;
2. anywhere else (a terminal, a script, `scripts/course.sh`): `AGENTIC_RAG_LANG` (`en`, the default, or
   `zh`), from the environment or `.env`.

`python -m lessons.core.i18n` prints the language the setting chooses, `--folder` where its learner copies
are (scripts/course.sh opens that folder).
The Chinese strings live in `ZH` below, keyed by the English text; a key missing there is an error in
the Chinese copy (tests/test_i18n.py also finds every `t("…")` of a translated master and fails on a
missing one), never a silent fall-back to English.
"""

from __future__ import annotations

import os
from pathlib import Path

from dotenv import dotenv_values

from lessons.core.settings import PROJECT_ROOT

ENGLISH = "en"
LANGUAGES = (ENGLISH, "zh")
VARIABLE = "AGENTIC_RAG_LANG"
# The folders the course's notebooks live in; a sub-folder named after a language holds that language's copies.
NOTEBOOK_FOLDERS = ("notebooks", "solutions")


class LanguageError(ValueError):
    """A language the course does not have; the message names the setting and the fix."""


def _checked(value: str, where: str) -> str:
    language = value.strip().lower()
    if language not in LANGUAGES:
        raise LanguageError(f"{where}: {VARIABLE}={value!r} is not a course language; "
                            f"set it to one of {', '.join(LANGUAGES)} (or remove it for English)")
    return language


def setting_language(env_file: Path | None = None) -> str:
    """The language `AGENTIC_RAG_LANG` chooses: the environment first, then `.env`; English when unset."""
    value = os.environ.get(VARIABLE, "").strip()
    if value:
        return _checked(value, "the environment")
    env_file = env_file or PROJECT_ROOT / ".env"
    value = (dotenv_values(env_file).get(VARIABLE) or "").strip() if env_file.exists() else ""
    return _checked(value, str(env_file)) if value else ENGLISH


def folder_language(folder: str | Path) -> str | None:
    """The language of a course notebook folder (`notebooks/zh` → "zh", `notebooks` → "en"), else None."""
    folder = Path(folder).resolve()
    if folder.name in LANGUAGES and folder.name != ENGLISH and folder.parent.name in NOTEBOOK_FOLDERS:
        return folder.name
    if folder.name in NOTEBOOK_FOLDERS and (folder.parent / "masters").is_dir():
        return ENGLISH
    return None


def course_language(cwd: str | Path | None = None) -> str:
    """The language this process speaks: its notebook folder's, else the `AGENTIC_RAG_LANG` setting's."""
    setting = setting_language()  # checked even when the folder decides: a bad value is an error, not ignored
    return folder_language(cwd if cwd is not None else Path.cwd()) or setting


def notebook_folder(language: str) -> str:
    """Where the learner copies in `language` live, relative to the project root."""
    language = _checked(language, "notebook_folder")
    return "notebooks" if language == ENGLISH else f"notebooks/{language}"


def t(text: str, /, **values: object) -> str:
    """`text` in the course language, formatted with `values` (str.format). English text is the key."""
    language = course_language()
    if language != ENGLISH:
        table = TRANSLATIONS[language]
        if text not in table:
            raise KeyError(f"no {language} translation of {text!r}: add it to lessons/core/i18n.py "
                           f"{language.upper()} (the notebook's own printed strings are translated there)")
        text = table[text]
    return text.format(**values) if values else text


# Chinese for the strings the notebooks' own cells print (table headers, plot labels, findings text),
# keyed by the English text of the t("…") call, one block per notebook.
ZH: dict[str, str] = {
    # notebook 00 (setup)
    "start or reuse the model": "启动（或复用）模型",
    "In one sentence: what is retrieval-augmented generation?": "用一句话回答：什么是检索增强生成（RAG）？",
    "one short answer": "一次简短回答",
    "two structured grades": "两次结构化评分",
    "embed {n} sentences with {name}": "用 {name} 嵌入 {n} 个句子",
    "convert a DOCX (or read the cache)": "转换一个 DOCX（或读缓存）",
    "cosine similarity": "余弦相似度",
    "{name:22} translations: {translation:.2f}   different meaning: {different:.2f}":
        "{name:22} 互为译文：{translation:.2f}   意思不同：{different:.2f}",
    "{source}: {format}, language {language}, {characters:,} characters, converter {converter}, from cache: {cached}":
        "{source}：格式 {format}，语言 {language}，{characters:,} 个字符，转换器 {converter}，来自缓存：{cached}",
    "{step:40} {seconds:7.2f} s": "{step:40} {seconds:7.2f} 秒",
    # notebook 01 (chunking)
    "load the knowledge base (cached conversion)": "加载知识库（转换结果已缓存）",
    "{files} files as {pages} pages or files; {questions} gold questions about them ({english} English, {chinese} Chinese)":
        "{files} 个文件，共 {pages} 个页面或文件；关于它们的金标准问题 {questions} 个（英文 {english} 个，中文 {chinese} 个）",
    "file": "文件",
    "format": "格式",
    "language": "语言",
    "pages": "页数",
    "characters": "字符数",
    "tokens": "token 数",
    "tables": "表格",
    "code blocks": "代码块",
    "formulas": "公式",
    "characters per embedder token:": "每个嵌入模型 token 对应的字符数：",
    "{size} English characters ≈ {tokens} tokens (overlap {overlap}); the same tokens ≈ {zh_size} Chinese characters (overlap {zh_overlap})":
        "{size} 个英文字符 ≈ {tokens} 个 token（重叠 {overlap}）；同样的 token 数 ≈ {zh_size} 个中文字符（重叠 {zh_overlap}）",
    "chunk_size=250, chunk_overlap={overlap}: {n} chunks, lengths {lengths}":
        "chunk_size=250，chunk_overlap={overlap}：{n} 个块，长度 {lengths}",
    "chunks": "块",
    "median length": "长度中位数",
    "index size vs text": "索引大小 / 原文",
    "quotes split %": "被切断的引文 %",
    "{n} evidence quotes of the gold set occur in these documents": "金标准问题集中有 {n} 条证据引文出现在这些文档里",
    "{tokens:3} tokens, {characters:3} characters: {sentence}": "{tokens:3} 个 token，{characters:3} 个字符：{sentence}",
    "\n250-character windows of the Overview: {n}, {clean} of them end at a sentence or line end":
        "\nOverview 一节的 250 字符窗口：{n} 个，其中 {clean} 个在句末或行末结束",
    "40-token windows of a Chinese section: {tokens} tokens, {characters} characters":
        "一个中文小节的 40 token 窗口：token 数 {tokens}，字符数 {characters}",
    "SemanticChunker's default regex finds {default} sentence(s) in this Chinese chapter; ours finds {ours}":
        "SemanticChunker 的默认正则在这一章中文里找到 {default} 个句子；我们的正则找到 {ours} 个",
    "semantic chunks of one chapter": "一章的语义分块",
    "{n} semantic chunks from {sections} sections; lengths {lengths}": "{sections} 个小节切出 {n} 个语义块；长度 {lengths}",
    "{n} of them start at a heading; line breaks kept: {kept}": "其中 {n} 个以标题开头；保留了换行：{kept}",
    "sentence packing at 300 characters: {n} chunks, {clean} end at a sentence or line end":
        "按 300 字符做句子打包：{n} 个块，{clean} 个在句末或行末结束",
    "{n} sections, from {shortest} to {longest} characters": "{n} 个小节，长度从 {shortest} 到 {longest} 个字符",
    "Docling HybridChunker on the admin guide": "Docling HybridChunker 切分管理指南",
    "{n} chunks, at most {most} tokens (budget {budget}); the second one, with its heading path on top:\n":
        "{n} 个块，最多 {most} 个 token（预算 {budget}）；下面是第二个块，顶部是它的标题路径：\n",
    "\nthe original:": "\n原文：",
    "default separators": "默认分隔符",
    "{name}: {n} chunks, {mid_sentence} cut mid-sentence": "{name}：{n} 个块，{mid_sentence} 个切在句子中间",
    "jieba words:        ": "jieba 分词：        ",
    "default splitter:   ": "默认切分器：        ",
    "blocks in the RAG technique note:": "RAG 技术笔记中的块：",
    "  {kind:5} lines {first}–{last}  {language:7} {first_line}": "  {kind:5} 第 {first}–{last} 行  {language:7} {first_line}",
    "{name:20} {n} chunks of {lengths} characters; the {size}-character YAML block is {state}":
        "{name:20} {n} 个块，字符数 {lengths}；那个 {size} 字符的 YAML 块{state}",
    "whole": "完整保留",
    "cut": "被切开了",
    "{name:20} {intact:5.1f}% intact, {n} chunks, {oversize} flagged oversize":
        "{name:20} {intact:5.1f}% 保持完整，{n} 个块，{oversize} 个标记为超长",
    "{parents} parents, {children} children. The longest parent, {source} › {section_path} ({characters} characters), has {n} children of {lengths} characters:":
        "{parents} 个父块，{children} 个子块。最长的父块 {source} › {section_path}（{characters} 个字符）有 {n} 个子块，字符数为 {lengths}：",
    "index the children": "为子块建索引",
    "{question}\nMultiVectorRetriever and parents_of return the same parents: {same}":
        "{question}\nMultiVectorRetriever 和 parents_of 返回的父块相同：{same}",
    "first parent:": "第一个父块：",
    "embed the questions": "嵌入问题",
    "Strategies": "策略",
    "chunk, index and search: {name}": "分块、索引和检索：{name}",
    "English": "英文",
    "Chinese": "中文",
    "<h4>{title}: {n} questions</h4>": "<h4>{title}：{n} 个问题</h4>",
    "{title}: {n} questions": "{title}：{n} 个问题",
    "{name} (baseline)": "{name}（基线）",
    "Retrieval on the gold set, by chunking strategy": "各分块策略在金标准问题集上的检索效果",
    "Chunk lengths in characters (dashed: CHUNK_SIZE; the last bar holds every chunk over {clip})":
        "块长度（字符数；虚线：CHUNK_SIZE；最后一根柱子包含所有超过 {clip} 的块）",
    "{step:55} {seconds:7.1f} s": "{step:55} {seconds:7.1f} 秒",
    # notebook 06 (evaluation)
    "judged: {judged}; retrieval on every gold question: {retrieval}": "评审：{judged}；在每道金标准问题上测检索：{retrieval}",
    "vector store: {location}": "向量库：{location}",
    "gold questions": "金标准问题数",
    "answerable": "可回答",
    "corpus": "语料库",
    "type": "类型",
    "question": "问题",
    "evidence chunks": "证据分块数",
    "{generated} · {seconds:.0f} s": "{generated} · {seconds:.0f} 秒",
    "saved to {path}": "已保存到 {path}",
    "reference": "参考答案",
    "evidence": "证据",
    "why it was not kept": "为什么没保留",
    "gold (answerable)": "金标准（可回答）",
    "generated": "生成的",
    "question words in its evidence (mean)": "问题中出现在其证据里的词（平均）",
    "dense {metric}": "dense {metric}",
    "relevant at ranks:": "相关分块所在的排名：",
    "the reference": "参考答案本身",
    "figures changed": "数字被改动",
    "answer": "回答",
    "text": "文本",
    "consistent": "一致",
    "judge copied (consistency)": "评审抄下的内容（一致性）",
    "complete": "完整",
    "judge copied (completeness)": "评审抄下的内容（完整性）",
    "pipeline": "流水线",
    "what it does": "做什么",
    "gate thresholds:": "门控阈值：",
    "{pipelines} pipelines × {corpora} corpora ready in {seconds:.0f} s":
        "{pipelines} 条流水线 × {corpora} 个语料库，{seconds:.0f} 秒内准备好",
    "{corpus}: {n} questions ({answerable} answerable, {chinese} Chinese) × {pipelines} pipelines":
        "{corpus}：{n} 道问题（{answerable} 道可回答，{chinese} 道中文）× {pipelines} 条流水线",
    "judge failures: {failures}; pipeline errors: {errors}": "评审失败：{failures}；流水线错误：{errors}",
    "{failures} judge failure(s) in {rows} rows": "{rows} 行中有 {failures} 次评审失败",
    "All pipelines agree on every question.": "所有流水线在每道问题上的判决都一致。",
    "gate P(yes)": "门控 P(yes)",
    "cross-encoder score": "交叉编码器分数",
    "dense similarity": "dense 相似度",
    "{corpus} gate": "{corpus} 门控",
    "{corpus} cross-encoder": "{corpus} 交叉编码器",
    "{corpus} dense": "{corpus} dense",
    "score": "分数",
    "wrote {json} and {markdown}": "已写出 {json} 和 {markdown}",
    "second run: {seconds:.0f} s (first: {first:.0f} s); same table: {same}":
        "第二次运行：{seconds:.0f} 秒（第一次：{first:.0f} 秒）；表格相同：{same}",
    "whole notebook: {minutes:.1f} min": "整个 notebook：{minutes:.1f} 分钟",
    # notebook 02 (retrieval tricks)
    "{chunks} chunks; {answerable} answerable gold questions ({english} English, {chinese} Chinese)":
        "{chunks} 个块；{answerable} 个可回答的金标准问题（英文 {english} 个，中文 {chinese} 个）",
    "LLM sample: {n} questions — ": "LLM 样本：{n} 个问题——",
    "{children} children for {chunks} chunks, index ready in {seconds:.1f} s":
        "{chunks} 个块共 {children} 个子片段，索引在 {seconds:.1f} 秒内就绪",
    "{n} candidates reranked in {seconds:.2f} s": "{n} 个候选在 {seconds:.2f} 秒内重排完毕",
    "hybrid rank": "hybrid 排名",
    "chunk": "块",
    "new rank": "新排名",
    "— other languages keep the fused order": "——其他语言保留融合后的顺序",
    "reply: {reply!r}; log-probabilities returned: {returned}": "回答：{reply!r}；是否返回了对数概率：{returned}",
    "probability": "概率",
    "P(yes), chat model": "P(yes)，对话模型",
    "cross-encoder": "交叉编码器",
    "chat model: {llm_seconds:.1f} s for {n} judgements; cross-encoder: {ce_seconds:.2f} s":
        "对话模型：{n} 次评判用了 {llm_seconds:.1f} 秒；交叉编码器：{ce_seconds:.2f} 秒",
    "On this question the chat model's P(yes) ranges from {llm_min:.2f} to {llm_max:.2f}, the cross-encoder's score from {ce_min:.2f} to {ce_max:.2f}; the candidates holding the evidence rank {llm_ranks} by P(yes) and {ce_ranks} by the cross-encoder (of {n}), at {ratio:.0f}× the time for the chat model. Section 9 measures both on the same sample of questions.":
        "在这个问题上，对话模型的 P(yes) 介于 {llm_min:.2f} 和 {llm_max:.2f} 之间，交叉编码器的分数介于 {ce_min:.2f} 和 "
        "{ce_max:.2f} 之间；包含证据的候选按 P(yes) 排在第 {llm_ranks} 名，按交叉编码器排在第 {ce_ranks} 名（共 {n} 个），"
        "而对话模型所用的时间是交叉编码器的 {ratio:.0f} 倍。第 9 节会在同一个问题样本上衡量这两者。",
    "No candidate of this question holds the evidence in this run.": "本次运行中，这个问题没有任何候选包含证据。",
    "rewrites: ": "改写：",
    "step-back:": "后退一步：",
    "chunk {index} alone ({characters} characters): score {score:.3f}": "第 {index} 块单独（{characters} 个字符）：分数 {score:.3f}",
    "with its neighbours ({characters} characters): score {score:.3f}": "带上相邻块（{characters} 个字符）：分数 {score:.3f}",
    "named by the model": "被模型点名",
    "hit rank": "命中排名",
    "budget": "预算",
    "neighbours taken": "带上的相邻块",
    "source": "来源",
    "{techniques} techniques without a chat model × {questions} questions in {seconds:.0f} s":
        "{techniques} 种不用对话模型的技术 × {questions} 个问题，用时 {seconds:.0f} 秒",
    "{techniques} techniques with the chat model × {questions} questions in {seconds:.0f} s; {cached} of {calls} chat-model answers came from the cache":
        "{techniques} 种使用对话模型的技术 × {questions} 个问题，用时 {seconds:.0f} 秒；{calls} 个对话模型回答中有 {cached} 个来自缓存",
    "Every technique without a chat model, {n} questions, by language": "所有不用对话模型的技术，{n} 个问题，按语言分列",
    # notebook 07 (deep-research agent)
    "{n} chunks in the knowledge base index": "知识库索引中有 {n} 个分块",
    "characters per page (median)": "每页字符数（中位数）",
    "A chunk of {chunk} characters sits on {source}, {title} ({page} characters).":
        "一个 {chunk} 个字符的分块位于 {source} 的 {title}（这一页 {page} 个字符）。",
    "\nThe chunk ends:   …": "\n分块的结尾：  …",
    "\nThe page goes on: …": "\n页面接着写道：…",
    "page": "页",
    "snippet": "片段",
    "first stage (no rerank)": "第一阶段（不重排）",
    "chat model P(yes)": "对话模型 P(yes)",
    "all": "全部",
    "seconds per search": "每次检索秒数",
    "Searches": "检索",
    "ERROR: ": "错误：",
    "→ {outcome} after {calls} tool calls ({decisions} decisions by the model); pages read: {pages}":
        "→ {outcome}：{calls} 次工具调用之后（模型做了 {decisions} 次决定）；读过的页面：{pages}",
    "none": "无",
    "   cites {source}": "   引用 {source}",
    ", page {page}": "，第 {page} 页",
    "\nreference:": "\n参考答案：",
    "{banner}\n→ tool calls emitted: {calls}": "{banner}\n→ 发出的工具调用：{calls}",
    "\nWhat it wrote instead (as text — no ToolNode runs this):\n": "\n它写出来的是这些（文本——没有 ToolNode 会去执行它）：\n",
    "[SCRIPTED — not a model's answer] A tool-calling model would now answer from the tool results above.":
        "[脚本化——不是模型的回答] 一个会调用工具的模型此时会根据上面的工具结果作答。",
    "SCRIPTED model: {calls} tool calls (cap {cap}), {turns} model turns, ended by the cap: {at_cap}":
        "脚本化模型：{calls} 次工具调用（上限 {cap}），{turns} 轮模型回复，由上限结束：{at_cap}",
    "{calls} tool calls, ended by the cap: {at_cap}\n→ {answer}": "{calls} 次工具调用，由上限结束：{at_cap}\n→ {answer}",
    "The active model emits no tool calls (probe above): the tool-calling agent is not run with it. "
    "With DeepSeek (AGENTIC_RAG_MODEL=deepseek) this cell runs it.":
        "当前模型不发出工具调用（见上面的探针）：不用它运行工具调用智能体。"
        "换成 DeepSeek（AGENTIC_RAG_MODEL=deepseek）时，这个单元格会运行它。",
    "user": "用户",
    "retrieved": "检索了",
    "standalone question": "独立问题",
    "tool calls": "工具调用",
    "pages read": "读过的页数",
    "reply": "回复",
    "seconds": "秒",
    "The main agent's history (all it will ever see of the research):": "主智能体的历史（关于这次研究，它能看到的全部内容）：",
    "Questions": "问题",
    "{n} questions × 2 methods in {seconds:.0f} s": "{n} 道问题 × 2 种方法，用时 {seconds:.0f} 秒",
    "mean per question": "每道问题的平均值",
    "Quality": "质量",
    "Cost per question (tokens: {tokens})": "每道问题的代价（token：{tokens}）",
    "{n} of {total} questions judged differently for the two methods": "{total} 道问题中有 {n} 道，两种方法的评审结果不同",
    "\n{qid}  reference: {reference}": "\n{qid}  参考答案：{reference}",
    "  {method} (correct {correct}): {answer}": "  {method}（correct {correct}）：{answer}",
    "Our run: {n} questions ({multi_hop} multi-hop, {table} table, the contradiction case), "
    "`MAX_STEPS = {max_steps}`, search reranker `{reranker}`.":
        "我们这次运行：{n} 道问题（{multi_hop} 道多跳、{table} 道表格、矛盾案例），"
        "`MAX_STEPS = {max_steps}`，检索重排器 `{reranker}`。",
    "**The search tool's reranker** ({n} questions, four hits shown): evidence recall {recalls}"
    " — `default_reranker` {change} it by {gain:.2f} over the first stage (per language: {per_language}).":
        "**检索工具的重排器**（{n} 道问题，显示四个命中）：证据召回率 {recalls}"
        "——相对第一阶段，`default_reranker` 使它{change} {gain:.2f}（分语言：{per_language}）。",
    "raises": "提高了",
    "lowers": "降低了",
    "does not change": "没有改变，差值",
    "**Tool calling**: the active model emitted {n} tool call(s) when it was free to":
        "**工具调用**：在可以自由选择时，当前模型发出了 {n} 个工具调用",
    " — the tool-calling agent ran with it (above).": "——工具调用智能体已经用它运行过了（见上文）。",
    " — it wrote its call as text, so offline the loop decides with forced typed choices; the scripted model "
    "drove the `ToolNode` loop to {calls} tool calls and the cap ended it: {at_cap}.":
        "——它把调用写成了文本，所以离线时循环用强制的有类型选择来做决定；脚本化模型驱动 `ToolNode` 循环"
        "做了 {calls} 次工具调用，由上限结束：{at_cap}。",
    "**The conversation** (section 5): \"{user}\" became \"{standalone}\"; the reply: "
    "\"{reply}\" — check it against the release notes: a standalone question is necessary, not sufficient.":
        "**对话**（第 5 节）：“{user}”被改写成了“{standalone}”；回复是：“{reply}”"
        "——请对照发布说明核对它：独立问题是必要条件，而不是充分条件。",
    # notebook 03 (QA transformation)
    "gold evidence": "含金标准证据",
    "other": "其他",
    "total": "合计",
    "{chunks} chunks in the knowledge base; {sample} in the sample": "知识库中有 {chunks} 个块；样本中有 {sample} 个",
    "\n--- the system prompt for this chunk ---": "\n--- 这个块的系统提示 ---",
    "QA pairs for one chunk": "一个块的问答对",
    "status {status!r}, asked for {tried} pair(s), model time when generated {seconds:.1f} s":
        "状态 {status!r}，要求的问答对数：{tried}，生成时的模型用时 {seconds:.1f} 秒",
    "(from the QA cache)": "（来自 QA 缓存）",
    "schedule for 4:": "4 对的安排：",
    "· for 3:": "· 3 对的安排：",
    "70% of {n} tokens": "{n} 个 token 的 70%",
    "estimated tokens per QA request (rules + chunk + schema + answer)": "每个 QA 请求估计的 token 数（规则 + 块 + schema + 回答）",
    "Every chunk of the knowledge base against the context budget": "知识库的每个块与上下文预算的对比",
    "largest request ≈ {largest} tokens; limit {limit}; over the limit: {over}":
        "最大的请求 ≈ {largest} 个 token；上限 {limit}；超过上限的：{over} 个",
    "{n} request over budget": "{n} 个请求超出预算",
    "QA pairs for {n} chunks (build 1)": "{n} 个块的问答对（第 1 次构建）",
    "schema success rate: {rate:.1%} of chunks got valid pairs ({first:.1%} on the first request); LLM calls in this build: {calls}":
        "schema 成功率：{rate:.1%} 的块得到了有效的问答对（第一次请求就成功的 {first:.1%}）；这次构建的 LLM 调用次数：{calls}",
    "Pairs per chunk against chunk length: thin chunks get fewer pairs.": "每个块的问答对数与块长度的关系：内容单薄的块得到的问答对更少。",
    "no QA documents": "没有 QA 文档",
    "QA pairs for {n} chunks (build 2, cached)": "{n} 个块的问答对（第 2 次构建，已缓存）",
    "build 1 (this run): {seconds:9.3f} s, {cached}/{chunks} chunks already in the QA cache":
        "第 1 次构建（本次运行）：{seconds:9.3f} 秒，{cached}/{chunks} 个块已在 QA 缓存中",
    "build 2           : {seconds:9.3f} s, {cached}/{chunks} from the QA cache, {calls} LLM calls (cached or not)":
        "第 2 次构建           ：{seconds:9.3f} 秒，{cached}/{chunks} 个来自 QA 缓存，{calls} 次 LLM 调用（无论是否命中缓存）",
    "model time recorded when the pairs were generated: {seconds:.1f} s (summed over chunks)":
        "生成问答对时记录的模型用时：{seconds:.1f} 秒（所有块的总和）",
    "cache ratio: build 2 / model time = {ratio:.1e} — about {faster:,.0f}× faster":
        "缓存比：第 2 次构建 / 模型用时 = {ratio:.1e}——大约快 {faster:,.0f} 倍",
    "build 2 / build 1 (wall clock, build 1 mostly generated) = {ratio:.1e}":
        "第 2 次构建 / 第 1 次构建（墙钟时间，第 1 次构建大多是现场生成）= {ratio:.1e}",
    "model time when generated\n(sum over chunks)": "生成时的模型用时\n（所有块的总和）",
    "build 1, this run": "第 1 次构建，本次运行",
    "build 2 (QA cache)": "第 2 次构建（QA 缓存）",
    "seconds (log scale)": "秒（对数刻度）",
    " {seconds:,.0f} s": " {seconds:,.0f} 秒",
    " {ms:.1f} ms": " {ms:.1f} 毫秒",
    "Generating QA pairs for {n} chunks vs reading them from the cache": "为 {n} 个块生成问答对 vs 从缓存读取",
    "{n} gold evidence quotes occur in the sample": "样本中出现了 {n} 条金标准证据引文",
    "chunk coverage : {covered}/{quotes} = {rate:.1%}": "块覆盖率  ：{covered}/{quotes} = {rate:.1%}",
    "answer coverage: {covered}/{quotes} = {rate:.1%}": "答案覆盖率：{covered}/{quotes} = {rate:.1%}",
    "Chunk coverage ({chunk_rate:.0%}) follows the schema success rate ({success_rate:.0%}): a chunk that got pairs covers its quotes. Answer coverage is the honest one: ":
        "块覆盖率（{chunk_rate:.0%}）跟着 schema 成功率（{success_rate:.0%}）走：得到了问答对的块就覆盖了它的引文。"
        "答案覆盖率才是老实的那个：",
    "{gap} of the {reachable} reachable quotes got no pair about them — with at most {max_pairs} pairs per chunk the model picks *some* facts of a chunk, not necessarily the one a user will ask about. That gap is why the hybrid index below keeps the raw chunks too.":
        "{reachable} 条可达的引文中有 {gap} 条没有得到关于它的问答对——每个块最多 {max_pairs} 对时，模型只挑一个块的*某些*事实，"
        "不一定是用户会问的那一个。正因为有这个差距，下面的混合索引也保留了原始的块。",
    "here every reachable quote got a pair about it; the hybrid index below keeps the raw chunks all the same, since no sample guarantees that.":
        "这里每条可达的引文都得到了关于它的问答对；下面的混合索引仍然保留了原始的块，因为没有哪个样本能保证这一点。",
    "index chunks + QA documents": "为块 + QA 文档建索引",
    "hybrid store: {chunks} chunks + {qa} QA documents · {stats}": "混合库：{chunks} 个块 + {qa} 个 QA 文档 · {stats}",
    "retrieval for {n} questions × 3": "{n} 个问题 × 3 种检索",
    "{n} gold questions have their evidence in the sample": "{n} 个金标准问题的证据在样本中",
    "chunks only": "只检索块",
    "QA only (mapped to chunks)": "只检索 QA（映射回块）",
    "hybrid": "混合",
    "Retrieval on {questions} gold questions, {chunks}-chunk sample": "在 {questions} 个金标准问题上的检索，{chunks} 个块的样本",
    "MRR@{k} by question language": "按问题语言分列的 MRR@{k}",
    "hybrid vs chunks only: better on {helped} question(s), worse on {hurt}, equal on {equal}":
        "混合 vs 只检索块：{helped} 个问题上更好，{hurt} 个更差，{equal} 个持平",
    "best MRR@{k}: {best} ({best_mrr:.3f}); chunks only {chunks_mrr:.3f}; one question moves MRR@{k} by up to {step:.3f}":
        "最好的 MRR@{k}：{best}（{best_mrr:.3f}）；只检索块 {chunks_mrr:.3f}；一个问题最多能让 MRR@{k} 变动 {step:.3f}",
    "\nA question where the hybrid index ranks the evidence higher ({qid}): {question}":
        "\n混合索引把证据排得更靠前的一个问题（{qid}）：{question}",
    "--- raw ---\n": "--- 原始文本 ---\n",
    "\n\n--- cleaned ---\n": "\n\n--- 清理后 ---\n",
    "\nlines: {raw} → {cleaned}": "\n行数：{raw} → {cleaned}",
    "{dated} of {chunks} chunks mention at least one date": "{chunks} 个块中有 {dated} 个提到了至少一个日期",
    "distinct dates found per source:": "每个来源中找到的不同日期数：",
    "as written": "原文写法",
    "date": "日期",
    "precision": "精度",
    "chunks that mention a date from September 2026 on: {n}": "提到 2026 年 9 月及以后日期的块：{n} 个",
    "properties of {n} release notes": "{n} 篇发布说明的属性",
    "{failures} of {documents} documents without valid properties; dates agree on {dates}, release kinds on {kinds} of {n}":
        "{documents} 个文档中有 {failures} 个没有得到有效属性；{n} 个中日期一致 {dates} 个，版本类型一致 {kinds} 个",
    "heading": "标题",
    "model date": "模型给的日期",
    "pattern date": "模式匹配的日期",
    "kind by rule": "按规则的类型",
    "The last columns check the model against rules: its `released` string, parsed by `extract_dates`, gives the pattern-based date for {dates_agree} of {n} releases, and its `release_kind` matches the version rule for {kinds_agree} of {n}":
        "最后几列用规则来检验模型：它给出的 `released` 字符串经 `extract_dates` 解析后，在 {n} 个版本中有 {dates_agree} 个"
        "与模式匹配得到的日期一致；它的 `release_kind` 在 {n} 个中有 {kinds_agree} 个符合版本号规则",
    " — seeing no \"minor release\" in the text, a small model guesses.": "——文中看不到\"次版本\"（minor release）的字样，小模型只好去猜。",
    ".": "。",
    "value": "数值",
    "{rate:.1%} ({valid}/{chunks}; first try {first:.1%})": "{rate:.1%}（{valid}/{chunks}；第一次就成功 {first:.1%}）",
    "{chunk_rate:.1%} chunk · {answer_rate:.1%} answer ({quotes} quotes)": "块 {chunk_rate:.1%} · 答案 {answer_rate:.1%}（{quotes} 条引文）",
    "{rebuild:.3f} s vs {model:.1f} s model time (ratio {ratio:.1e}), {calls} LLM calls":
        "{rebuild:.3f} 秒 vs {model:.1f} 秒模型用时（比值 {ratio:.1e}），{calls} 次 LLM 调用",
    "schema success rate": "schema 成功率",
    "evidence coverage": "证据覆盖率",
    "rebuild from the QA cache": "从 QA 缓存重建",
    "{step:45} {seconds:8.2f} s": "{step:45} {seconds:8.2f} 秒",
}
TRANSLATIONS: dict[str, dict[str, str]] = {"zh": ZH}


def main(argv: list[str] | None = None) -> int:
    """`python -m lessons.core.i18n [--folder]`: print the language the setting chooses (or its notebook folder)."""
    import sys

    args = sys.argv[1:] if argv is None else argv
    try:
        language = setting_language()
    except LanguageError as error:
        print(error, file=sys.stderr)
        return 1
    print(notebook_folder(language) if "--folder" in args else language)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
