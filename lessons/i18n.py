"""The course language: which language a notebook's own printed strings and the checks' hints speak.

Introduced in notebook 00 (setup). The English and the Chinese copy of a notebook run the very same
code; what differs is the language `course_language()` returns, and so what `t()` gives back:

    from lessons.i18n import t
    timings[t("one short answer")] = ...            # "one short answer" / "一次简短回答"
    print(t("{n} characters", n=1200))               # "1200 characters" / "1200 个字符"

How the language is chosen (one setting, no action in the notebook):

1. a kernel running in a notebook folder of the course speaks that folder's language — `notebooks/zh/`
   (or `solutions/zh/`) is Chinese, `notebooks/` and `solutions/` are English. Jupyter starts a kernel in
   the notebook's folder, and so does `lessons.notebook_runner`, so the Chinese copy speaks Chinese
   without the learner doing anything;
2. anywhere else (a terminal, a script, `scripts/course.sh`): `AGENTIC_RAG_LANG` (`en`, the default, or
   `zh`), from the environment or `.env`.

`python -m lessons.i18n` prints the language the setting chooses, `--folder` where its learner copies
are (scripts/course.sh opens that folder).
The Chinese strings live in `ZH` below, keyed by the English text; a key missing there is an error in
the Chinese copy (tests/test_i18n.py also finds every `t("…")` of a translated master and fails on a
missing one), never a silent fall-back to English.
"""

from __future__ import annotations

import os
from pathlib import Path

from dotenv import dotenv_values

from lessons.settings import PROJECT_ROOT

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
            raise KeyError(f"no {language} translation of {text!r}: add it to lessons/i18n.py "
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
}
TRANSLATIONS: dict[str, dict[str, str]] = {"zh": ZH}


def main(argv: list[str] | None = None) -> int:
    """`python -m lessons.i18n [--folder]`: print the language the setting chooses (or its notebook folder)."""
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
