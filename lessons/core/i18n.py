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
        raise LanguageError(
            f"{where}: {VARIABLE}={value!r} is not a course language; "
            f"set it to one of {', '.join(LANGUAGES)} (or remove it for English)"
        )
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
            raise KeyError(
                f"no {language} translation of {text!r}: add it to lessons/core/i18n.py "
                f"{language.upper()} (the notebook's own printed strings are translated there)"
            )
        text = table[text]
    return text.format(**values) if values else text


def t_labels(table, keys, /):
    """`table` (a DataFrame or its Styler) showing the labels in `keys` in the course language, for display only.

    The summary tables of lessons/ helpers are read by their English column names, so a master translates
    them where it displays them: `display(t_labels(summary, ["questions", "language"]))`. The column and
    row labels (every level) and the names of the index and column axes that are in `keys` are shown
    through `t()`; other labels (metric names such as hit@5, technique names) stay as they are. `keys` is a
    literal list, so tests/test_i18n.py finds every key. On a Styler only the display changes: its
    `.format()` and `subset=` still name the English columns. In English `t()` returns the key: no change.
    """
    names = {key: t(key) for key in keys}
    if all(key == name for key, name in names.items()):
        return table  # English: the very table, displayed as before

    def label(name):
        return names.get(name, name) if isinstance(name, str) else name

    if hasattr(table, "format_index"):  # a pandas Styler
        for axis in ("index", "columns"):
            table = table.format_index(label, axis=axis).format_index_names(label, axis=axis)
        return table
    if not hasattr(table, "columns"):  # a Series
        return table.rename(index=label).rename_axis(index=label)
    return table.rename(index=label, columns=label).rename_axis(index=label, columns=label)


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
    "{name:22} translations: {translation:.2f}   different meaning: {different:.2f}": "{name:22} 互为译文：{translation:.2f}   意思不同：{different:.2f}",
    "{source}: {format}, language {language}, {characters:,} characters, converter {converter}, from cache: {cached}": "{source}：格式 {format}，语言 {language}，{characters:,} 个字符，转换器 {converter}，来自缓存：{cached}",
    "{step:40} {seconds:7.2f} s": "{step:40} {seconds:7.2f} 秒",
    # notebook 01 (chunking)
    "load the knowledge base (cached conversion)": "加载知识库（转换结果已缓存）",
    "{files} files as {pages} pages or files; {questions} gold questions about them ({english} English, {chinese} Chinese)": "{files} 个文件，共 {pages} 个页面或文件；关于它们的金标准问题 {questions} 个（英文 {english} 个，中文 {chinese} 个）",
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
    "{size} English characters ≈ {tokens} tokens (overlap {overlap}); the same tokens ≈ {zh_size} Chinese characters (overlap {zh_overlap})": "{size} 个英文字符 ≈ {tokens} 个 token（重叠 {overlap}）；同样的 token 数 ≈ {zh_size} 个中文字符（重叠 {zh_overlap}）",
    "chunk_size=250, chunk_overlap={overlap}: {n} chunks, lengths {lengths}": "chunk_size=250，chunk_overlap={overlap}：{n} 个块，长度 {lengths}",
    "chunks": "块",
    "median length": "长度中位数",
    "index size vs text": "索引大小 / 原文",
    "quotes split %": "被切断的引文 %",
    "{n} evidence quotes of the gold set occur in these documents": "金标准问题集中有 {n} 条证据引文出现在这些文档里",
    "{tokens:3} tokens, {characters:3} characters: {sentence}": "{tokens:3} 个 token，{characters:3} 个字符：{sentence}",
    "\n250-character windows of the Overview: {n}, {clean} of them end at a sentence or line end": "\nOverview 一节的 250 字符窗口：{n} 个，其中 {clean} 个在句末或行末结束",
    "40-token windows of a Chinese section: {tokens} tokens, {characters} characters": "一个中文小节的 40 token 窗口：token 数 {tokens}，字符数 {characters}",
    "SemanticChunker's default regex finds {default} sentence(s) in this Chinese chapter; ours finds {ours}": "SemanticChunker 的默认正则在这一章中文里找到 {default} 个句子；我们的正则找到 {ours} 个",
    "semantic chunks of one chapter": "一章的语义分块",
    "{n} semantic chunks from {sections} sections; lengths {lengths}": "{sections} 个小节切出 {n} 个语义块；长度 {lengths}",
    "{n} of them start at a heading; line breaks kept: {kept}": "其中 {n} 个以标题开头；保留了换行：{kept}",
    "sentence packing at 300 characters: {n} chunks, {clean} end at a sentence or line end": "按 300 字符做句子打包：{n} 个块，{clean} 个在句末或行末结束",
    "{n} sections, from {shortest} to {longest} characters": "{n} 个小节，长度从 {shortest} 到 {longest} 个字符",
    "Docling HybridChunker on the admin guide": "Docling HybridChunker 切分管理指南",
    "{n} chunks, at most {most} tokens (budget {budget}); the second one, with its heading path on top:\n": "{n} 个块，最多 {most} 个 token（预算 {budget}）；下面是第二个块，顶部是它的标题路径：\n",
    "\nthe original:": "\n原文：",
    "default separators": "默认分隔符",
    "{name}: {n} chunks, {mid_sentence} cut mid-sentence": "{name}：{n} 个块，{mid_sentence} 个切在句子中间",
    "jieba words:        ": "jieba 分词：        ",
    "default splitter:   ": "默认切分器：        ",
    "blocks in the RAG technique note:": "RAG 技术笔记中的区块（block）：",
    "  {kind:5} lines {first}–{last}  {language:7} {first_line}": "  {kind:5} 第 {first}–{last} 行  {language:7} {first_line}",
    "{name:20} {n} chunks of {lengths} characters; the {size}-character YAML block is {state}": "{name:20} {n} 个块，字符数 {lengths}；那个 {size} 字符的 YAML 区块{state}",
    "whole": "完整保留",
    "cut": "被切开了",
    "{name:20} {intact:5.1f}% intact, {n} chunks, {oversize} flagged oversize": "{name:20} {intact:5.1f}% 保持完整，{n} 个块，{oversize} 个标记为超长",
    "{parents} parents, {children} children. The longest parent, {source} › {section_path} ({characters} characters), has {n} children of {lengths} characters:": "{parents} 个父块，{children} 个子块。最长的父块 {source} › {section_path}（{characters} 个字符）有 {n} 个子块，字符数为 {lengths}：",
    "index the children": "为子块建索引",
    "{question}\nMultiVectorRetriever and parents_of return the same parents: {same}": "{question}\nMultiVectorRetriever 和 parents_of 返回的父块相同：{same}",
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
    "Chunk lengths in characters (dashed: CHUNK_SIZE; the last bar holds every chunk over {clip})": "块长度（字符数；虚线：CHUNK_SIZE；最后一根柱子包含所有超过 {clip} 的块）",
    "{step:55} {seconds:7.1f} s": "{step:55} {seconds:7.1f} 秒",
    # lessons/ helpers: the findings paragraphs and the summary tables' headers the notebooks display
    # lessons.evaluation.chunk_evaluation (notebook 01)
    "**{title}** ({n} questions; one question moves hit@{k} by {step:.2f}):": "**{title}**（{n} 个问题；一个问题让 hit@{k} 变动 {step:.2f}）：",
    "{first}; {second}.": "{first}；{second}。",
    "{text}.": "{text}。",
    "chunks that end at a sentence or line end": "在句末或行末结束的块",
    "No strategy returned a gold evidence quote cut in two.": "没有哪种策略返回被切成两半的金标准证据引文。",
    "gold quotes cut in two": "被切成两半的金标准引文",
    "tables, code blocks and formulas returned whole": "完整返回的表格、代码块和公式",
    "The longest chunk is {longest:.0f} characters ({name}); the baseline's median is {median:.0f}.": "最长的块有 {longest:.0f} 个字符（{name}）；基线返回文本的长度中位数是 {median:.0f}。",
    "**{names}** has the highest hit@{k} and MRR@{k} in every language measured here — by how many "
    "questions, the lines above say.": "**{names}** 在这里测量的每种语言上 hit@{k} 和 MRR@{k} 都最高——高出多少个问题，见上面几行。",
    "No strategy has the highest hit@{k} and MRR@{k} in every language measured here.": "没有哪种策略在这里测量的每种语言上 hit@{k} 和 MRR@{k} 都最高。",
    "{column} ({what})": "{column}（{what}）",
    "{label}: not measured": "{label}：未测量",
    "{label}: {value} for every strategy": "{label}：每种策略都是 {value}",
    "{label}: from {low} ({lowest}) to {high} ({highest})": "{label}：从 {low}（{lowest}）到 {high}（{highest}）",
    "clean end %": "干净结尾 %",
    "tables+code intact %": "表格+代码完整 %",
    "finds evidence in the top {k} for as many questions as {baseline}": "在前 {k} 个结果中找到证据的问题数与 {baseline} 相同",
    "finds evidence in the top {k} for {count} question more than {baseline}": "在前 {k} 个结果中找到证据的问题比 {baseline} 多 {count} 个",
    "finds evidence in the top {k} for {count} questions more than {baseline}": "在前 {k} 个结果中找到证据的问题比 {baseline} 多 {count} 个",
    "finds evidence in the top {k} for {count} question fewer than {baseline}": "在前 {k} 个结果中找到证据的问题比 {baseline} 少 {count} 个",
    "finds evidence in the top {k} for {count} questions fewer than {baseline}": "在前 {k} 个结果中找到证据的问题比 {baseline} 少 {count} 个",
    " (one question: read it as a tie)": "（只差一个问题：当作打平）",
    "ranks it the same": "排名相同",
    "ranks it higher (MRR {mrr:+.2f})": "把证据排得更靠前（MRR {mrr:+.2f}）",
    "ranks it lower (MRR {mrr:+.2f})": "把证据排得更靠后（MRR {mrr:+.2f}）",
    "; its returned texts have a median of {median:.0f} characters ({ratio:.1f}× the baseline's)": "；它返回文本的长度中位数是 {median:.0f} 个字符（基线的 {ratio:.1f} 倍）",
    "{name} {found}, and {ranked}{size}.": "{name} {found}，并且{ranked}{size}。",
    # lessons.evaluation.retrieval_evaluation (notebook 02)
    "- **Hybrid search** {verb} dense retrieval on recall@5 over all {n} questions ({hybrid} vs {dense}; "
    "MRR@10 {hybrid_mrr} vs {dense_mrr}), with no model call.": "- **混合检索**在全部 {n} 个问题的 recall@5 上{verb} dense 检索（{hybrid} vs {dense}；"
    "MRR@10 {hybrid_mrr} vs {dense_mrr}），而且不调用任何模型。",
    "beats": "胜过",
    "trails": "落后于",
    "matches": "追平",
    "- **Cross-encoder rerank, {label} questions:** MRR@10 {before} → {after} ({relative}% relative; the design "
    "write-ups claim +{claim} for BGE-Reranker-v2 — {met} here), recall@5 {recall_before} → {recall_after}.": "- **交叉编码器重排，{label}问题：**MRR@10 {before} → {after}（相对变化 {relative}%；设计文档声称 BGE-Reranker-v2 "
    "能带来 +{claim}——这里{met}），recall@5 {recall_before} → {recall_after}。",
    "met": "达到",
    "not met": "未达到",
    "missed": "未达到",
    "- **Training data decides where a reranker works.** On Chinese questions the English cross-encoder "
    "{verb} {delta} recall@5 against the hybrid order; routed by language (the cross-encoder for English, the "
    "fused order for Chinese) the pipeline keeps {english} English and {chinese} Chinese recall@5.": "- **训练数据决定了重排器在哪里有用。**在中文问题上，英文交叉编码器相对混合检索的顺序{verb} {delta} 的 recall@5；"
    "按语言分流（英文用交叉编码器，中文保留融合后的顺序）后，流水线的 recall@5 为英文 {english}、中文 {chinese}。",
    "adds": "增加了",
    "costs": "损失了",
    "changes": "改变了",
    "- **Contextual rerank with the cross-encoder** (each candidate scored with its neighbours) {verb} "
    "the pointwise rerank: MRR@10 {contextual} vs {pointwise}.": "- **用交叉编码器做上下文重排**（每个候选连同相邻块一起打分）{verb}逐点重排：MRR@10 {contextual} vs {pointwise}。",
    "improves on": "胜过",
    "falls behind": "落后于",
    ": part of any gain is simply more text for the generator to read.": "：任何提升中都有一部分只是因为生成器读到了更多文本。",
    "- **{technique}**: recall@5 {recall} against the baseline's {base_recall}, with {ratio:.1f}× the "
    "baseline's characters in the top 5 ({chars:,.0f} vs {base_chars:,.0f}){more_text}": "- **{technique}**：recall@5 {recall}，基线为 {base_recall}；前 5 个结果的字符数是基线的 {ratio:.1f} 倍"
    "（{chars:,.0f} vs {base_chars:,.0f}）{more_text}",
    "- **Part of that gain is depth.** The rerankers reorder a deeper fusion (each retriever's top candidates, not its top 10): in its fused order that list already gives English MRR@10 {deep} against hybrid's {base}. Over the list it actually reorders, the cross-encoder adds {relative}% relative on English questions.": "- **这份提升有一部分来自深度。** 重排器重排的是更深的融合列表（每个检索器的前若干个候选，而不是前 10 个）：按融合顺序，这个列表的英文 MRR@10 已经是 {deep}，而混合检索为 {base}。相对于它真正重排的那个列表，交叉编码器在英文问题上带来 {relative}% 的相对提升。",
    "- **Late interaction (ColBERT)** {verb} the cross-encoder on English MRR@10 ({colbert} vs {cross_encoder}).": "- **延迟交互（ColBERT）**在英文 MRR@10 上{verb}交叉编码器（{colbert} vs {cross_encoder}）。",
    "- **{name}** vs {reference} on the {n} sampled questions: recall@5 {recall}, MRR@10 {mrr} — it "
    "{verb}, at {calls:.1f} chat-model calls per question (on so few questions one question moves a "
    "mean by up to {step:.2f}).": "- **{name}** 对比 {reference}，在抽样的 {n} 个问题上：recall@5 {recall}，MRR@10 {mrr}——它{verb}，"
    "代价是每个问题 {calls:.1f} 次对话模型调用（问题这么少，一个问题就能让均值最多变动 {step:.2f}）。",
    "helps": "有帮助",
    "hurts": "反而有害",
    "changes little": "影响不大",
    "The best pipeline without a chat model by recall@5": "按 recall@5 计，不用对话模型的最佳流水线",
    "At the baseline's amount of text (top-5 characters within 1.2×), the best": "在与基线相当的文本量下（前 5 个结果的字符数不超过基线的 1.2 倍），最佳的",
    "- **Goals.** {label} is **{best}**: English recall@5 {english} (goal ≥ {english_goal}: {english_met}); it "
    "removes {removed} of the dense baseline's recall@5 misses over both languages (goal ≥ {misses_goal}: "
    "{misses_met}).": "- **目标。**{label}是 **{best}**：英文 recall@5 {english}（目标 ≥ {english_goal}：{english_met}）；"
    "在两种语言上，它消除了 dense 基线 recall@5 未命中部分的 {removed}（目标 ≥ {misses_goal}：{misses_met}）。",
    # lessons.transforms.qa_transform (notebook 03)
    "No gold question has its evidence in the sample: raise `N_QA_CHUNKS` to measure retrieval.": "样本里没有哪个金标准问题的证据：调大 `N_QA_CHUNKS` 才能测量检索。",
    "higher than": "高于",
    "lower than": "低于",
    "the same as": "等于",
    "as many questions": "一样多",
    "{count} question more": "多 {count} 个",
    "{count} questions more": "多 {count} 个",
    "{count} question fewer": "少 {count} 个",
    "{count} questions fewer": "少 {count} 个",
    "{mrr} {value:.2f}, {direction} the chunks' {chunks:.2f}; evidence in the top {k} for {found} ({hit} "
    "{hit_value:.2f} against {chunks_hit:.2f})": "{mrr} {value:.2f}，{direction}只检索块的 {chunks:.2f}；前 {k} 个结果中含证据的问题{found}"
    "（{hit} {hit_value:.2f}，只检索块为 {chunks_hit:.2f}）",
    "On {n} gold questions (one question moves {mrr} by up to {step:.2f}):": "在 {n} 个金标准问题上（一个问题最多让 {mrr} 变动 {step:.2f}）：",
    "- **QA documents alone**: {text}.": "- **只用 QA 文档**：{text}。",
    "  The pairs repeat {rate:.0%} of the evidence quotes (section 7): a question about a fact that got "
    "no pair can only land on some other pair.": "  问答对只复述了 {rate:.0%} 的证据引文（第 7 节）：问到一个没有得到问答对的事实时，只能落到别的问答对上。",
    "- **Hybrid, QA next to the chunks**: {text}. The evidence moves up for {helped} question(s), down for "
    "{hurt}, and stays put for {same}.": "- **混合，QA 与块并列**：{text}。证据在 {helped} 个问题上排名上升，{hurt} 个下降，{same} 个不变。",
    "the hybrid index and the chunks alone are within one question of each other: on this sample, "
    "one LLM call per chunk at indexing time bought no measurable gain": "混合索引与只检索块相差不到一个问题：在这个样本上，建索引时每个块一次 LLM 调用并没有换来可测量的提升",
    "the hybrid index ranks the evidence higher than the chunks alone by more than one question's worth": "混合索引把证据排得比只检索块更靠前，差距超过一个问题的分量",
    "the hybrid index ranks the evidence lower than the chunks alone by more than one question's worth": "混合索引把证据排得比只检索块更靠后，差距超过一个问题的分量",
    "In this run {verdict}. Read the per-question counts, not the third decimal.": "本次运行中，{verdict}。请看按问题统计的计数，而不是小数点后第三位。",
    # lessons.agents.grading (notebook 04)
    "abstention (out-of-KB)": "拒答率（知识库外）",
    "first-round stop (in-KB)": "首轮即停（知识库内）",
    "no data": "没有数据",
    "missed (the interval reaches the target)": "未达到（区间够得着目标）",
    "- **{label}, calibration:** t₁ = {t1:.2f} (cross-encoder), t₂ = {t2:.2f} (P(yes)); separation {ce_auc:.2f} "
    "for the cross-encoder's best score and {p_auc:.2f} for the best P(yes) — {better}.": "- **{label}，校准：**t₁ = {t1:.2f}（交叉编码器），t₂ = {t2:.2f}（P(yes)）；交叉编码器最高分的区分度为 {ce_auc:.2f}，"
    "最高 P(yes) 的区分度为 {p_auc:.2f}——{better}。",
    "the cross-encoder separates better": "交叉编码器区分得更好",
    "the chat model separates better": "对话模型区分得更好",
    "the two alike": "两者一样",
    "- **{label}, out-of-KB:** the gate abstained on {abstained}; without it the pipeline answered {answered} "
    "of these questions from chunks that do not hold the answer — {caught}.": "- **{label}，知识库外：**门控在 {abstained} 个问题上拒答；没有门控时，流水线用不含答案的块回答了其中 {answered} "
    "个问题——{caught}。",
    "hallucinations the gate caught": "这些幻觉被门控拦下了",
    "no hallucination to catch in this sample": "这个样本里没有幻觉可拦",
    "retrieval left room: the gate refused some questions whose evidence was there": "检索还有余地：门控拒绝了一些证据其实就在那里的问题",
    "retrieval was the limit: first-round stops cannot exceed {share} with this top {k}": "检索是瓶颈：在这个前 {k} 下，首轮即停不可能超过 {share}",
    "retrieval and gate agree on every question": "检索和门控在每个问题上都一致",
    "the gate also let through questions whose top chunks hold no evidence quote word for word": "门控也放行了一些问题，它们排在前面的块里并没有逐字包含证据引文",
    "- **{label}, in-KB:** answered {gated} gated against {ungated} ungated; {first} in the first round. The "
    "reranked top {k} held the evidence for {held} of them — {reading}.": "- **{label}，知识库内：**有门控时回答了 {gated}，无门控时回答了 {ungated}；其中 {first} 在第一轮就停下。"
    "重排后的前 {k} 个块为其中 {held} 个问题包含了证据——{reading}。",
    "- **Goal, {language} {goal}:** {count} ({measured}, 95% interval {interval}) against ≥ {target} — {verdict}.": "- **目标，{language} {goal}：**{count}（{measured}，95% 区间 {interval}），目标 ≥ {target}——{verdict}。",
    "- **Cost:** {rounds:.2f} rounds per question on average (cap {max_rounds}); {calls:.1f} chat-model "
    "calls per question gated.": "- **代价：**平均每个问题 {rounds:.2f} 轮（上限 {max_rounds}）；有门控时每个问题 {calls:.1f} 次对话模型调用。",
    # lessons.evaluation.three_agent_eval (notebook 05)
    "false-alarm rate": "误报率",
    "catch rate": "捕获率",
    "states the conflict": "指出了冲突",
    "follows the consistent sources (€45)": "采用了彼此一致的来源（€45）",
    "follows the Q3 deck only (€54)": "只采用了 Q3 演示文稿（€54）",
    "gives neither price": "两个价格都没给",
    "{count} of {total}": "{count}/{total}",
    "The two were right equally often, so the pipeline keeps the relevance model (no model call)": "两者做对的次数一样多，所以流水线保留相关性模型（不调用模型）",
    "The **{name}** was right more often, so the workflow below uses it": "**{name}**做对的次数更多，所以下面的工作流使用它",
    "**What the measurement says** ({n} questions, the same chunks for both): the cross-encoder made the right "
    "early-exit decision for {ce_right}, the chat model for {chat_right}. Chunks without gold evidence were stopped "
    "{ce_stopped} against {chat_stopped} of the time; chunks with evidence were passed on {ce_passed} against "
    "{chat_passed}. They gave the same label {same_label} of the time and the same decision {same_decision}. "
    "{verdict}.": "**测量结果**（{n} 个问题，两者用同一批块）：交叉编码器做出正确提前出口决定的比例是 {ce_right}，对话模型是 "
    "{chat_right}。不含金标准证据的块，交叉编码器拦下了 {ce_stopped}，对话模型拦下了 {chat_stopped}；含证据的块，"
    "交叉编码器放行了 {ce_passed}，对话模型放行了 {chat_passed}。两者给出相同标签的比例是 {same_label}，"
    "做出相同决定的比例是 {same_decision}。{verdict}。",
    ", ": "，",
    "; ": "；",
    "{n} {language}": "{language} {n} 个",
    "**What our drill says** ({n} questions — {languages}; {calls} verifier calls):": "**我们的演练结果**（{n} 个问题——{languages}；{calls} 次核查调用）：",
    "- **Correct drafts flagged (false alarms): {flagged}** with the checked lists. The model's own yes/no "
    'said "no" to {said_no} of them — {reading}.': "- **被标记的正确草稿（误报）：{flagged}**（按核查过的列表）。模型自己的 yes/no 对其中 {said_no} 个说了“no”——{reading}。",
    "fewer false alarms than the checked lists": "误报比核查过的列表少",
    "a rule on `supported`/`relevant` would not have rejected fewer correct answers": "基于 `supported`/`relevant` 的规则也不会少拒绝正确的回答",
    "- **Changed figures caught: {caught}** — by the string checks {checks}, by the verifier's list "
    "{verifier}, by the model's yes/no {yes_no}.": "- **抓到的改动数字：{caught}**——字符串检查 {checks}，验证器的列表 {verifier}，模型的 yes/no {yes_no}。",
    " A string check knows *that* a figure is in the context, not *where*: the missed ones ({ids}): "
    "the changed figure occurs elsewhere in the chunks, and the verifier's list did not name it.": "字符串检查只知道某个数字*在*上下文里，不知道*在哪里*：漏掉的那些（{ids}）里，改动后的数字出现在块的别处，"
    "而验证器的列表也没有点出它。",
    "- **Invented names caught: {caught}** — by the string checks {checks}, by the verifier's list {verifier}.": "- **抓到的捏造名称：{caught}**——字符串检查 {checks}，验证器的列表 {verifier}。",
    "- **Injected instruction: the research agent followed it in {followed} questions** ({followed_share}); "
    "verification flagged {flagged} of the obeyed drafts ({flagged_share}), {checks} by the string "
    "checks{caught}.": "- **注入的指令：研究智能体在 {followed} 个问题中照做了**（{followed_share}）；核查标记了照做的草稿中的 {flagged}"
    "（{flagged_share}），其中字符串检查标记了 {checks}{caught}。",
    "; of the questions where the agent obeyed, {caught} were caught": "；在智能体照做的问题中，抓住了 {caught}",
    "**What our run says** ({n} questions: {answerable} answerable, {out} out-of-KB):": "**我们的运行结果**（{n} 个问题：{answerable} 个可回答，{out} 个在知识库外）：",
    "{language} {complete} complete, {abstained} out-of-KB abstained": "{language}：完整 {complete}，知识库外拒答 {abstained}",
    "- **Answerable: {answered} answered, {complete} complete** — the answer states the reference answer's "
    "key fact, by the course's completeness judge — the one notebooks 06 and 07 use (lenient with a small "
    "model; an abstention is not complete){failures}. {per_language}.": "- **可回答的问题：回答了 {answered}，完整 {complete}**——回答说出了参考答案的关键事实，"
    "由课程的完整性评审判断——notebook 06 和 07 用的也是这个评审（小模型评得宽松；拒答不算完整）{failures}。{per_language}。",
    "; the judge failed on {failures}: counted, not guessed": "；评审在 {failures} 个问题上失败：照实计数，没有猜测",
    "- **Verification**: {passed} answers passed the checks; {researched} questions were re-researched.": "- **核查**：{passed} 个回答通过了检查；{researched} 个问题被重新研究。",
    "- **Out-of-KB: {abstained} abstained.**": "- **知识库外：拒答了 {abstained}。**",
    " The checks test that an answer *comes from* the context, not that it *answers the question*: a figure "
    "that is in the context but answers another question passes them.": "这些检查测试的是回答是否*来自*上下文，而不是它是否*回答了这个问题*：一个出现在上下文里、却回答了另一个问题的数字也能通过检查。",
    "- **The contradiction**: the answer {handling}.": "- **矛盾**：回答{handling}。",
    "- **Cost**: {calls:.1f} model calls, {tokens:,.0f} tokens and {seconds:.0f} s per question (judge excluded; "
    "times on this machine, at its load).": "- **代价**：每个问题 {calls:.1f} 次模型调用、{tokens:,.0f} 个 token、{seconds:.0f} 秒（不含评审；时间是这台机器在当前负载下测的）。",
    # lessons.evaluation (notebook 06)
    "- **Goals on {corpus}** ({n} answerable gold questions, no model calls): the best English {recall} is "
    "{best}'s {value:.2f} — goal 0.90 {english_met}; it removes {removed} of {baseline}'s {recall} misses over both "
    "languages — goal 50% {misses_met}.": "- **{corpus} 上的目标**（{n} 个可回答的金标准问题，不调用模型）：最好的英文 {recall} 是 {best} 的 {value:.2f}"
    "——目标 0.90 {english_met}；在两种语言上，它消除了 {baseline} 的 {recall} 未命中部分的 {removed}——目标 50% {misses_met}。",
    "- **Rank by {recall}**: the same order on both corpora ({order}).": "- **按 {recall} 排名**：两个语料库上的顺序相同（{order}）。",
    "; the move comes mostly from {language} questions ({recall} {before:.2f} on {a} → {after:.2f} on {b})": "；变动主要来自{language}问题（{recall}：{a} 上 {before:.2f} → {b} 上 {after:.2f}）",
    "- **{name} changes rank**: {rank_a} on {a} ({mean_a:.2f}), {rank_b} on {b} ({mean_b:.2f}){why}.": "- **{name} 的排名变了**：在 {a} 上排第 {rank_a}（{mean_a:.2f}），在 {b} 上排第 {rank_b}（{mean_b:.2f}）{why}。",
    "- Chinese questions are {share_a:.0%} of {a}'s answerable gold set and {share_b:.0%} of {b}'s: a "
    "technique that helps one language more moves with that share.": "- 中文问题占 {a} 可回答金标准问题集的 {share_a:.0%}，占 {b} 的 {share_b:.0%}：对某一种语言帮助更大的技术，"
    "排名会随这个比例变动。",
    "- **Answers on {corpus}** ({n} questions, read directions, not decimals): most complete {complete} "
    "({complete_value:.2f}), ": "- **{corpus} 上的回答**（{n} 个问题，看方向，不看小数）：最完整的是 {complete}（{complete_value:.2f}），",
    "best abstention {abstain} ({abstain_value:.2f}), ": "拒答最好的是 {abstain}（{abstain_value:.2f}），",
    "cheapest {cheapest} ({cheapest_calls:.1f} calls/question), dearest {dearest} ({dearest_calls:.1f}).": "最便宜的是 {cheapest}（每个问题 {cheapest_calls:.1f} 次调用），最贵的是 {dearest}（{dearest_calls:.1f}）。",
    "- **{what}, calibrated on {home}** ({thresholds}): at home it keeps {kept} of answerable questions "
    "and refuses {refused} of out-of-KB ones; on {away} {away_kept} and {away_refused}.": "- **{what}，在 {home} 上校准**（{thresholds}）：在本语料库上它保留了 {kept} 的可回答问题，拒绝了 {refused} "
    "的知识库外问题；在 {away} 上分别是 {away_kept} 和 {away_refused}。",
    # lessons.evaluation.deep_research_eval (notebook 07)
    "deep research gave {gap} more complete answers": "深度研究多给出了 {gap} 个完整的回答",
    "single-shot gave {gap} more complete answers": "单次检索多给出了 {gap} 个完整的回答",
    "the same count": "完整回答的数量相同",
    "**Complete: deep research {deep} of {n}, single-shot hybrid {shot} of {n}** — {verdict}. One question moves "
    "a share by {step:.2f}: read directions, not decimals": "**完整：深度研究 {deep}/{n}，单次混合检索 {shot}/{n}**——{verdict}。一道问题就让比例变动 {step:.2f}：看方向，不看小数",
    "; {failures} judge failure(s), counted, not guessed.": "；评审失败 {failures} 次，照实计数，没有猜测。",
    "{kind} {deep:.2f} against {shot:.2f} ({who})": "{kind} {deep:.2f} 对 {shot:.2f}（{who}）",
    "deep research read more": "深度研究读到的更多",
    "single-shot read more": "单次检索读到的更多",
    "the same": "一样",
    "**Evidence recall** (deep research against single-shot): {parts}.": "**证据召回率**（深度研究对单次检索）：{parts}。",
    "**Who ended the research**: the step cap in {capped} of {n} questions, the model's own `answer` in "
    "{own}; it read a page in {reading} of {n}.": "**谁结束了研究**：{n} 道问题中有 {capped} 道由步数上限结束，{own} 道由模型自己的 `answer` 结束；"
    "{n} 道中有 {reading} 道读了页面。",
    "**Cost per question**: {deep_calls:.1f} model calls and {deep_tokens:,.0f} tokens against {shot_calls:.1f} "
    "and {shot_tokens:,.0f} — {token_ratio:.1f}× the tokens and {time_ratio:.1f}× the seconds ({deep_seconds:.0f} "
    "s against {shot_seconds:.0f} s).": "**每道问题的代价**：{deep_calls:.1f} 次模型调用、{deep_tokens:,.0f} 个 token，对比 {shot_calls:.1f} 次和 "
    "{shot_tokens:,.0f} 个——token 是 {token_ratio:.1f} 倍，秒数是 {time_ratio:.1f} 倍（{deep_seconds:.0f} 秒对 "
    "{shot_seconds:.0f} 秒）。",
    "deep research": "深度研究",
    "single-shot hybrid": "单次混合检索",
    "**The contradiction case** (`contradiction_handling`): {cases}.": "**矛盾案例**（`contradiction_handling`）：{cases}。",
    "{method}: {handling}": "{method}：{handling}",
    "not read": "没有读到",
    # lessons.core.usage (every notebook's last line)
    "LLM calls: {calls} (+{cached} from cache) · tokens: {input:,} in, {output:,} out · DeepSeek cost: ${cost:.4f}": "LLM 调用：{calls} 次（另有 {cached} 次来自缓存）· token：输入 {input:,}，输出 {output:,} · DeepSeek 费用：${cost:.4f}",
    # notebook 06 (evaluation)
    "judged: {judged}; retrieval on every gold question: {retrieval}": "评审：{judged}；在每道金标准问题上测检索：{retrieval}",
    "vector store: {location}": "向量库：{location}",
    "gold questions": "金标准问题数",
    "answerable": "可回答",
    "corpus": "语料库",
    "type": "类型",
    "question": "问题",
    "evidence chunks": "证据块数",
    "{generated} · {seconds:.0f} s": "{generated} · {seconds:.0f} 秒",
    "saved to {path}": "已保存到 {path}",
    "reference": "参考答案",
    "evidence": "证据",
    "why it was not kept": "为什么没保留",
    "gold (answerable)": "金标准（可回答）",
    "generated": "生成的",
    "question words in its evidence (mean)": "问题中出现在其证据里的词（平均）",
    "dense {metric}": "dense {metric}",
    "relevant at ranks:": "相关块所在的排名：",
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
    "{pipelines} pipelines × {corpora} corpora ready in {seconds:.0f} s": "{pipelines} 条流水线 × {corpora} 个语料库，{seconds:.0f} 秒内准备好",
    "{corpus}: {n} questions ({answerable} answerable, {chinese} Chinese) × {pipelines} pipelines": "{corpus}：{n} 道问题（{answerable} 道可回答，{chinese} 道中文）× {pipelines} 条流水线",
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
    "second run: {seconds:.0f} s (first: {first:.0f} s); same table: {same}": "第二次运行：{seconds:.0f} 秒（第一次：{first:.0f} 秒）；表格相同：{same}",
    "whole notebook: {minutes:.1f} min": "整个 notebook：{minutes:.1f} 分钟",
    # notebook 02 (retrieval tricks)
    "{chunks} chunks; {answerable} answerable gold questions ({english} English, {chinese} Chinese)": "{chunks} 个块；{answerable} 个可回答的金标准问题（英文 {english} 个，中文 {chinese} 个）",
    "LLM sample: {n} questions — ": "LLM 样本：{n} 个问题——",
    "{children} children for {chunks} chunks, index ready in {seconds:.1f} s": "{chunks} 个块共 {children} 个子片段，索引在 {seconds:.1f} 秒内就绪",
    "{n} candidates reranked in {seconds:.2f} s": "{n} 个候选在 {seconds:.2f} 秒内重排完毕",
    "hybrid rank": "hybrid 排名",
    "chunk": "块",
    "new rank": "新排名",
    "— other languages keep the fused order": "——其他语言保留融合后的顺序",
    "reply: {reply!r}; log-probabilities returned: {returned}": "回答：{reply!r}；是否返回了对数概率：{returned}",
    "probability": "概率",
    "P(yes), chat model": "P(yes)，对话模型",
    "cross-encoder": "交叉编码器",
    "chat model: {llm_seconds:.1f} s for {n} judgements; cross-encoder: {ce_seconds:.2f} s": "对话模型：{n} 次评审用了 {llm_seconds:.1f} 秒；交叉编码器：{ce_seconds:.2f} 秒",
    "On this question the chat model's P(yes) ranges from {llm_min:.2f} to {llm_max:.2f}, the cross-encoder's score from {ce_min:.2f} to {ce_max:.2f}; the candidates holding the evidence rank {llm_ranks} by P(yes) and {ce_ranks} by the cross-encoder (of {n}), at {ratio:.0f}× the time for the chat model. Section 9 measures both on the same sample of questions.": "在这个问题上，对话模型的 P(yes) 介于 {llm_min:.2f} 和 {llm_max:.2f} 之间，交叉编码器的分数介于 {ce_min:.2f} 和 "
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
    "{techniques} techniques without a chat model × {questions} questions in {seconds:.0f} s": "{techniques} 种不用对话模型的技术 × {questions} 个问题，用时 {seconds:.0f} 秒",
    "{techniques} techniques with the chat model × {questions} questions in {seconds:.0f} s; {cached} of {calls} chat-model answers came from the cache": "{techniques} 种使用对话模型的技术 × {questions} 个问题，用时 {seconds:.0f} 秒；{calls} 个对话模型回答中有 {cached} 个来自缓存",
    "Every technique without a chat model, {n} questions, by language": "所有不用对话模型的技术，{n} 个问题，按语言分列",
    # notebook 07 (deep-research agent)
    "{n} chunks in the knowledge base index": "知识库索引中有 {n} 个块",
    "characters per page (median)": "每页字符数（中位数）",
    "A chunk of {chunk} characters sits on {source}, {title} ({page} characters).": "一个 {chunk} 个字符的块位于 {source} 的 {title}（这一页 {page} 个字符）。",
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
    "→ {outcome} after {calls} tool calls ({decisions} decisions by the model); pages read: {pages}": "→ {outcome}：{calls} 次工具调用之后（模型做了 {decisions} 次决定）；读过的页面：{pages}",
    "none": "无",
    "   cites {source}": "   引用 {source}",
    ", page {page}": "，第 {page} 页",
    "\nreference:": "\n参考答案：",
    "{banner}\n→ tool calls emitted: {calls}": "{banner}\n→ 发出的工具调用：{calls}",
    "\nWhat it wrote instead (as text — no ToolNode runs this):\n": "\n它写出来的是这些（文本——没有 ToolNode 会去执行它）：\n",
    "[SCRIPTED — not a model's answer] A tool-calling model would now answer from the tool results above.": "[脚本化——不是模型的回答] 一个会调用工具的模型此时会根据上面的工具结果作答。",
    "SCRIPTED model: {calls} tool calls (cap {cap}), {turns} model turns, ended by the cap: {at_cap}": "脚本化模型：{calls} 次工具调用（上限 {cap}），{turns} 轮模型回复，由上限结束：{at_cap}",
    "{calls} tool calls, ended by the cap: {at_cap}\n→ {answer}": "{calls} 次工具调用，由上限结束：{at_cap}\n→ {answer}",
    "The active model emits no tool calls (probe above): the tool-calling agent is not run with it. "
    "With DeepSeek (AGENTIC_RAG_MODEL=deepseek) this cell runs it.": "当前模型不发出工具调用（见上面的探针）：不用它运行工具调用智能体。"
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
    "  {method} (complete {complete}): {answer}": "  {method}（complete {complete}）：{answer}",
    "Our run: {n} questions ({multi_hop} multi-hop, {table} table, the contradiction case), "
    "`MAX_STEPS = {max_steps}`, search reranker `{reranker}`.": "我们这次运行：{n} 道问题（{multi_hop} 道多跳、{table} 道表格、矛盾案例），"
    "`MAX_STEPS = {max_steps}`，检索重排器 `{reranker}`。",
    "**The search tool's reranker** ({n} questions, four hits shown): evidence recall {recalls}"
    " — `default_reranker` {change} it by {gain:.2f} over the first stage (per language: {per_language}).": "**检索工具的重排器**（{n} 道问题，显示四个命中）：证据召回率 {recalls}"
    "——相对第一阶段，`default_reranker` 使它{change} {gain:.2f}（分语言：{per_language}）。",
    "raises": "提高了",
    "lowers": "降低了",
    "does not change": "没有改变，差值",
    "**Tool calling**: the active model emitted {n} tool call(s) when it was free to": "**工具调用**：在可以自由选择时，当前模型发出了 {n} 个工具调用",
    " — the tool-calling agent ran with it (above).": "——工具调用智能体已经用它运行过了（见上文）。",
    " — it wrote its call as text, so offline the loop decides with forced typed choices; the scripted model "
    "drove the `ToolNode` loop to {calls} tool calls and the cap ended it: {at_cap}.": "——它把调用写成了文本，所以离线时循环用强制的有类型选择来做决定；脚本化模型驱动 `ToolNode` 循环"
    "做了 {calls} 次工具调用，由上限结束：{at_cap}。",
    '**The conversation** (section 5): "{user}" became "{standalone}"; the reply: '
    '"{reply}" — check it against the release notes: a standalone question is necessary, not sufficient.': "**对话**（第 5 节）：“{user}”被改写成了“{standalone}”；回复是：“{reply}”"
    "——请对照发布说明核对它：独立问题是必要条件，而不是充分条件。",
    # notebook 03 (QA transformation)
    "gold evidence": "含金标准证据",
    "other": "其他",
    "total": "合计",
    "{chunks} chunks in the knowledge base; {sample} in the sample": "知识库中有 {chunks} 个块；样本中有 {sample} 个",
    "\n--- the system prompt for this chunk ---": "\n--- 这个块的系统提示词 ---",
    "QA pairs for one chunk": "一个块的问答对",
    "status {status!r}, asked for {tried} pair(s), model time when generated {seconds:.1f} s": "状态 {status!r}，要求的问答对数：{tried}，生成时的模型用时 {seconds:.1f} 秒",
    "(from the QA cache)": "（来自 QA 缓存）",
    "schedule for 4:": "4 对的安排：",
    "· for 3:": "· 3 对的安排：",
    "70% of {n} tokens": "{n} 个 token 的 70%",
    "estimated tokens per QA request (rules + chunk + schema + answer)": "每个 QA 请求估计的 token 数（规则 + 块 + schema + 回答）",
    "Every chunk of the knowledge base against the context budget": "知识库的每个块与上下文预算的对比",
    "largest request ≈ {largest} tokens; limit {limit}; over the limit: {over}": "最大的请求 ≈ {largest} 个 token；上限 {limit}；超过上限的：{over} 个",
    "{n} request over budget": "{n} 个请求超出预算",
    "QA pairs for {n} chunks (build 1)": "{n} 个块的问答对（第 1 次构建）",
    "schema success rate: {rate:.1%} of chunks got valid pairs ({first:.1%} on the first request); LLM calls in this build: {calls}": "schema 成功率：{rate:.1%} 的块得到了有效的问答对（第一次请求就成功的 {first:.1%}）；这次构建的 LLM 调用次数：{calls}",
    "Pairs per chunk against chunk length: thin chunks get fewer pairs.": "每个块的问答对数与块长度的关系：内容单薄的块得到的问答对更少。",
    "no QA documents": "没有 QA 文档",
    "QA pairs for {n} chunks (build 2, cached)": "{n} 个块的问答对（第 2 次构建，已缓存）",
    "build 1 (this run): {seconds:9.3f} s, {cached}/{chunks} chunks already in the QA cache": "第 1 次构建（本次运行）：{seconds:9.3f} 秒，{cached}/{chunks} 个块已在 QA 缓存中",
    "build 2           : {seconds:9.3f} s, {cached}/{chunks} from the QA cache, {calls} LLM calls (cached or not)": "第 2 次构建           ：{seconds:9.3f} 秒，{cached}/{chunks} 个来自 QA 缓存，{calls} 次 LLM 调用（无论是否命中缓存）",
    "model time recorded when the pairs were generated: {seconds:.1f} s (summed over chunks)": "生成问答对时记录的模型用时：{seconds:.1f} 秒（所有块的总和）",
    "cache ratio: build 2 / model time = {ratio:.1e} — about {faster:,.0f}× faster": "缓存比：第 2 次构建 / 模型用时 = {ratio:.1e}——大约快 {faster:,.0f} 倍",
    "build 2 / build 1 (wall clock, build 1 mostly generated) = {ratio:.1e}": "第 2 次构建 / 第 1 次构建（墙钟时间，第 1 次构建大多是现场生成）= {ratio:.1e}",
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
    "Chunk coverage ({chunk_rate:.0%}) follows the schema success rate ({success_rate:.0%}): a chunk that got pairs covers its quotes. Answer coverage is the honest one: ": "块覆盖率（{chunk_rate:.0%}）跟着 schema 成功率（{success_rate:.0%}）走：得到了问答对的块就覆盖了它的引文。"
    "答案覆盖率才是老实的那个：",
    "{gap} of the {reachable} reachable quotes got no pair about them — with at most {max_pairs} pairs per chunk the model picks *some* facts of a chunk, not necessarily the one a user will ask about. That gap is why the hybrid index below keeps the raw chunks too.": "{reachable} 条可达的引文中有 {gap} 条没有得到关于它的问答对——每个块最多 {max_pairs} 对时，模型只挑一个块的*某些*事实，"
    "不一定是用户会问的那一个。正因为有这个差距，下面的混合索引也保留了原始的块。",
    "here every reachable quote got a pair about it; the hybrid index below keeps the raw chunks all the same, since no sample guarantees that.": "这里每条可达的引文都得到了关于它的问答对；下面的混合索引仍然保留了原始的块，因为没有哪个样本能保证这一点。",
    "index chunks + QA documents": "为块 + QA 文档建索引",
    "hybrid store: {chunks} chunks + {qa} QA documents · {stats}": "混合库：{chunks} 个块 + {qa} 个 QA 文档 · {stats}",
    "retrieval for {n} questions × 3": "{n} 个问题 × 3 种检索",
    "{n} gold questions have their evidence in the sample": "{n} 个金标准问题的证据在样本中",
    "chunks only": "只检索块",
    "QA only (mapped to chunks)": "只检索 QA（映射回块）",
    "hybrid": "混合",
    "Retrieval on {questions} gold questions, {chunks}-chunk sample": "在 {questions} 个金标准问题上的检索，{chunks} 个块的样本",
    "MRR@{k} by question language": "按问题语言分列的 MRR@{k}",
    "hybrid vs chunks only: better on {helped} question(s), worse on {hurt}, equal on {equal}": "混合 vs 只检索块：{helped} 个问题上更好，{hurt} 个更差，{equal} 个持平",
    "best MRR@{k}: {best} ({best_mrr:.3f}); chunks only {chunks_mrr:.3f}; one question moves MRR@{k} by up to {step:.3f}": "最好的 MRR@{k}：{best}（{best_mrr:.3f}）；只检索块 {chunks_mrr:.3f}；一个问题最多能让 MRR@{k} 变动 {step:.3f}",
    "\nA question where the hybrid index ranks the evidence higher ({qid}): {question}": "\n混合索引把证据排得更靠前的一个问题（{qid}）：{question}",
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
    "{failures} of {documents} documents without valid properties; dates agree on {dates}, release kinds on {kinds} of {n}": "{documents} 个文档中有 {failures} 个没有得到有效属性；{n} 个中日期一致 {dates} 个，版本类型一致 {kinds} 个",
    "heading": "标题",
    "model date": "模型给的日期",
    "pattern date": "模式匹配的日期",
    "kind by rule": "按规则的类型",
    "The last columns check the model against rules: its `released` string, parsed by `extract_dates`, gives the pattern-based date for {dates_agree} of {n} releases, and its `release_kind` matches the version rule for {kinds_agree} of {n}": "最后几列用规则来检验模型：它给出的 `released` 字符串经 `extract_dates` 解析后，在 {n} 个版本中有 {dates_agree} 个"
    "与模式匹配得到的日期一致；它的 `release_kind` 在 {n} 个中有 {kinds_agree} 个符合版本号规则",
    ' — seeing no "minor release" in the text, a small model guesses.': '——文中看不到"次版本"（minor release）的字样，小模型只好去猜。',
    ".": "。",
    "value": "数值",
    "{rate:.1%} ({valid}/{chunks}; first try {first:.1%})": "{rate:.1%}（{valid}/{chunks}；第一次就成功 {first:.1%}）",
    "{chunk_rate:.1%} chunk · {answer_rate:.1%} answer ({quotes} quotes)": "块 {chunk_rate:.1%} · 答案 {answer_rate:.1%}（{quotes} 条引文）",
    "{rebuild:.3f} s vs {model:.1f} s model time (ratio {ratio:.1e}), {calls} LLM calls": "{rebuild:.3f} 秒 vs {model:.1f} 秒模型用时（比值 {ratio:.1e}），{calls} 次 LLM 调用",
    "schema success rate": "schema 成功率",
    "evidence coverage": "证据覆盖率",
    "rebuild from the QA cache": "从 QA 缓存重建",
    "{step:45} {seconds:8.2f} s": "{step:45} {seconds:8.2f} 秒",
    # notebook 04 (grading loop)
    "{chunks} chunks indexed; {gold} gold questions: {sample} to evaluate, {calibration} others to calibrate the gate": "已索引 {chunks} 个块；金标准问题 {gold} 个：{sample} 个用于评测，另外 {calibration} 个用于校准门控",
    "in the knowledge base": "在知识库中",
    "not in the knowledge base": "不在知识库中",
    "kind": "类别",
    "forced yes/no": "硬选 yes/no",
    "calibration questions": "校准问题",
    "t₁ cross-encoder": "t₁ 交叉编码器",
    "t₂ P(yes)": "t₂ P(yes)",
    "separation, cross-encoder": "区分度，交叉编码器",
    "separation, P(yes)": "区分度，P(yes)",
    "in-KB answered (calibration)": "知识库内已回答（校准）",
    "out-of-KB abstained (calibration)": "知识库外已拒答（校准）",
    "95% interval, abstention": "拒答率的 95% 区间",
    "in-KB": "知识库内",
    "out-of-KB": "知识库外",
    "the gate lets through": "门控放行的区域",
    "best cross-encoder score among the top K": "前 K 个块中最高的交叉编码器分数",
    "best P(yes) among the top K": "前 K 个块中最高的 P(yes)",
    "{language}: calibration questions and the chosen gate": "{language}：校准问题与选定的门控",
    "round": "轮次",
    "query": "查询",
    "grades": "评分",
    "decision": "决定",
    "{n} questions in {seconds:.0f} s ({per_question:.1f} s per question, both pipelines)": "{n} 个问题用时 {seconds:.0f} 秒（每个问题 {per_question:.1f} 秒，两条流水线合计）",
    "share of questions": "问题占比",
    "Gated vs ungated, by language": "有门控 vs 无门控，按语言分列",
    "rounds used": "所用轮数",
    "Rounds per question": "每个问题的轮数",
    "in KB": "在知识库中",
    "gated": "有门控",
    "ungated": "无门控",
    "ungated answer": "无门控的回答",
    "queries tried": "试过的查询",
    "The two pipelines agreed on every question of this sample.": "在这个样本的每个问题上，两条流水线的结果都一致。",
    # notebook 05 (three-agent verification)
    "reranker score": "重排器分数",
    "cross-encoder: CAN_ANSWER from {can_answer}, PARTIAL from {partial}, else NO_MATCH": "交叉编码器：从 {can_answer} 起为 CAN_ANSWER，从 {partial} 起为 PARTIAL，否则为 NO_MATCH",
    "in the documents": "在文档中",
    "same company, not in the documents": "同一家公司，但不在文档中",
    "unrelated": "无关",
    "best cross-encoder score": "最高的交叉编码器分数",
    "chat model": "对话模型",
    "draft": "草稿",
    "supported": "有依据",
    "relevant": "切题",
    "the model listed": "模型列出的",
    "what stands": "站得住的",
    "passed": "通过",
    "step": "步骤",
    "detail": "细节",
    "share of drafts flagged (correct drafts: false alarms)": "被标记的草稿占比（正确的草稿：误报）",
    "Hallucination drill: who catches what": "幻觉演练：谁抓住了什么",
    "flagged": "被标记",
    "unsupported": "缺乏依据",
    "{n} questions in {seconds:.0f} s": "{n} 个问题用时 {seconds:.0f} 秒",
    "Three agents on the gold sample, by language": "三个智能体在金标准样本上的表现，按语言分列",
    "outcome": "结果",
    "Latency per question": "每个问题的延迟",
    "correct": "正确",
    "rounds": "轮数",
    "\nContradiction handling:": "\n矛盾的处理方式：",
    # the headers of the lessons/ helpers' summary tables, shown through t_labels() where a master displays them
    # (the code reads these tables by their English names; metric and technique names stay as they are)
    "questions": "问题数",
    # notebook 01: compare_strategy
    "strategy": "策略",
    "median chars": "字符数中位数",
    "max chars": "最大字符数",
    # notebook 02: summarise, breakdown, gains_over
    "technique": "技术",
    "ms/query": "毫秒/查询",
    "LLM calls/query": "LLM 调用/查询",
    "tokens/query": "token/查询",
    "cached share": "缓存占比",
    "compared with": "对比对象",
    "error": "错误",
    # notebook 03
    "valid": "有效",
    "first_try": "第一次就成功",
    "pairs_per_chunk": "每块问答对数",
    "mode": "方式",
    # notebook 04: grading.summarise, goal_table
    "abstention (out-of-KB), gated": "拒答率（知识库外），有门控",
    "abstention (out-of-KB), ungated": "拒答率（知识库外），无门控",
    "answer rate (in-KB), gated": "回答率（知识库内），有门控",
    "answer rate (in-KB), ungated": "回答率（知识库内），无门控",
    "rounds per question": "每个问题的轮数",
    "tokens per question, gated": "每个问题的 token 数，有门控",
    "tokens per question, ungated": "每个问题的 token 数，无门控",
    "goal": "目标",
    "target": "目标值",
    "measured": "实测",
    "count": "计数",
    "95% interval": "95% 区间",
    "verdict": "结论",
    # notebook 05: relevance_summary, compare_relevance, drill_summary, summarise_runs
    "name": "名称",
    "right decision": "决定正确",
    "stopped (no evidence)": "拦下（无证据）",
    "passed on (evidence)": "放行（有证据）",
    "holds_evidence": "含证据",
    "cross_encoder": "交叉编码器",
    "best_score": "最高分",
    "chat_model": "对话模型",
    "changed figure": "改动的数字",
    "invented name": "捏造的名称",
    "injected instruction": "注入的指令",
    "drafts": "草稿数",
    "by the verifier's list": "由验证器的列表",
    "by the string checks": "由字符串检查",
    "by the model's yes/no": "由模型的 yes/no",
    "research agent followed it": "研究智能体照做了",
    "meaning": "含义",
    "complete (in-KB)": "完整（知识库内）",
    "answered (in-KB)": "已回答（知识库内）",
    "fully supported (of answered)": "完全有依据（占已回答）",
    "re-researched": "重新研究过",
    "with citations (of answered)": "带引用（占已回答）",
    "seconds per question": "每个问题的秒数",
    "tokens per question": "每个问题的 token 数",
    "LLM calls per question": "每个问题的 LLM 调用次数",
    # notebook 06: describe, retrieval_goals, compare, judge_failures, threshold_transfer
    "needs 2+ chunks": "需要 2 个以上的块",
    "question chars (mean)": "问题字符数（平均）",
    "reference chars (mean)": "参考答案字符数（平均）",
    "evidence chunks per question": "每道问题的证据块数",
    "English recall@5": "英文 recall@5",
    "misses": "未命中",
    "dense's misses removed": "消除的 dense 未命中",
    "English goal met": "达到英文目标",
    "misses goal met": "达到未命中目标",
    "ms": "毫秒",
    "factual consistency": "事实一致性",
    "judged answers": "评审过的回答数",
    "completeness": "完整性",
    "abstained (out-of-KB)": "拒答（知识库外）",
    "judge failures": "评审失败",
    "pipeline errors": "流水线错误",
    "LLM calls/question": "LLM 调用/问题",
    "tokens/question": "token/问题",
    "DeepSeek $/question": "DeepSeek $/问题",
    "s/question": "秒/问题",
    "judge": "评审",
    "cause": "原因",
    "complete_reason": "完整性理由",
    "calibrated on": "校准于",
    "measured on": "测量于",
    "thresholds": "阈值",
    "answerable kept": "保留的可回答问题",
    "out-of-KB refused": "拒绝的知识库外问题",
    "recall@{k} (every gold question)": "recall@{k}（每道金标准问题）",
    "completeness (judged sample)": "完整性（评审样本）",
    "abstained on out-of-KB (sample)": "知识库外拒答（样本）",
    "LLM calls / question": "LLM 调用 / 问题",
    # notebook 07: search_recall, trace_rows, message_rows, compare_methods, runs_table
    "reranker": "重排器",
    "action": "动作",
    "argument": "参数",
    "reason": "理由",
    "result": "结果",
    "message": "消息",
    "method": "方法",
    "evidence recall": "证据召回率",
    "at the cap": "止于上限",
    "LLM calls": "LLM 调用",
    "contradiction": "矛盾",
    # notebook 08 (service)
    "setting": "设置",
    "database": "数据库",
    "file store": "文件存储",
    "index": "索引",
    "collection": "集合",
    "worker threads": "工作线程数",
    "url": "URL",
    "data folder": "数据文件夹",
    "The server answered its health check {seconds:.1f} s after the start (the embedder and the cross-encoder load on first use, not here).": "服务器在启动 {seconds:.1f} 秒后通过了健康检查（嵌入模型和交叉编码器在第一次使用时才加载，不在这里）。",
    "status": "状态",
    "attempts": "尝试次数",
    "rank": "排名",
    "{qid}: {question}\n  answer: {answer}\n  reference: {reference}": "{qid}：{question}\n  回答：{answer}\n  参考答案：{reference}",
    " page {page}": " 第 {page} 页",
    "  cites {source}{page}: {text}…": "  引用 {source}{page}：{text}…",
    "stage": "阶段",
    "before the note": "上传笔记之前",
    "after the upload": "上传之后",
    "after the delete": "删除之后",
    "abstained": "拒答",
    "cites": "引用",
    "password in the answer": "回答里有密码",
    "The note was indexed as {chunks} chunk(s) in {seconds:.1f} s. Before it, the service {before}; with it, the answer {cites} and {contains} the password; after the delete, a search for the question {finds} the note and the answer {still_cites}.": "这份笔记用 {seconds:.1f} 秒被索引成 {chunks} 个块。上传它之前，服务{before}；有了它，回答{cites}，并且{contains}密码；删除之后，用这个问题检索{finds}这份笔记，回答{still_cites}。",
    "answered anyway": "照样作答了",
    "cites the note": "引用了这份笔记",
    "does not cite the note": "没有引用这份笔记",
    "contains": "包含",
    "does not contain": "不包含",
    "still finds": "仍然能找到",
    "no longer finds": "再也找不到",
    "still cites it": "仍然引用它",
    "no longer cites it": "不再引用它",
    "Uploading the same files again: {skipped} of {n} skipped, {queued} job(s) queued.": "再次上传同样的文件：{n} 个中跳过了 {skipped} 个，排入了 {queued} 个作业。",
    "run": "运行",
    "new documents": "新文档数",
    "nightly run": "夜间运行",
    "The service on questions about its new documents": "服务在关于其新文档的问题上的表现",
    "report: {report}": "报告：{report}",
    "The server {stopped} (exit status {status}); after it, the health check {answers} and the data folder {folder}.": "服务器{stopped}（退出状态 {status}）；此后健康检查{answers}，数据文件夹{folder}。",
    "needed SIGKILL": "需要 SIGKILL 才停下",
    "stopped on SIGTERM": "收到 SIGTERM 后停下",
    "still answers": "仍然有回应",
    "gets no answer": "没有回应",
    "is still there": "还在",
    "is gone": "已被删除",
    "Our run: {n} documents uploaded first, {later} between the nightly runs; the worker indexed {done} of the first {jobs} ({chunks} chunks) in {seconds:.0f} s.": "我们这次运行：先上传了 {n} 个文档，两次夜间运行之间又上传了 {later} 个；工作线程在 {seconds:.0f} 秒内索引完第一批 {jobs} 个中的 {done} 个（共 {chunks} 个块）。",
    "Search (hybrid + reranker): {results}.": "检索（混合检索 + 重排器）：{results}。",
    "{qid} found a chunk of its gold source in the top {k}": "{qid} 在前 {k} 个结果中找到了其金标准来源块",
    "{qid} missed a chunk of its gold source in the top {k}": "{qid} 在前 {k} 个结果中没有找到其金标准来源块",
    "Ask: {results}.": "提问：{results}。",
    "{qid} abstained": "{qid} 拒答",
    "{qid} answered citing {sources}": "{qid} 作答并引用了 {sources}",
    "nothing": "（无）",
    "The nightly runs: run {first_id} with {first_questions} question(s) on {first_documents} new document(s) ({recall} {first_recall}, {complete} {first_complete}); run {second_id} with {second_questions} on {second_documents} ({recall} {second_recall}, {complete} {second_complete}) — each run scores only the documents added since the one before, so the two are different questions, not a before and after.": "夜间运行：第 {first_id} 次运行在 {first_documents} 个新文档上出了 {first_questions} 道题（{recall} {first_recall}，{complete} {first_complete}）；第 {second_id} 次运行在 {second_documents} 个新文档上出了 {second_questions} 道题（{recall} {second_recall}，{complete} {second_complete}）——每次运行只给上一次以来新加的文档打分，所以两次问的是不同的问题，并不是前后对比。",
    "The whole notebook took {minutes:.1f} min.": "整个 notebook 用时 {minutes:.1f} 分钟。",
    # service.client (the upload progress bar of notebook 08)
    "upload": "上传",
    # lessons.widgets: the chunk explorer (notebook 01), the retrieval explorer (02), the chat panel (05)
    "document": "文档",
    "chunk size": "块大小",
    "overlap": "重叠",
    "chunk {number}: {characters} characters, {overlap} repeated from the previous chunk": "第 {number} 块：{characters} 个字符，其中 {overlap} 个与上一块重复",
    "<b>{n}</b> chunks · median <b>{median:.0f}</b> characters · longest <b>{longest}</b> · {over} over the chunk size": "<b>{n}</b> 个块 · 中位数 <b>{median:.0f}</b> 个字符 · 最长 <b>{longest}</b> · {over} 个超过块大小",
    "characters per chunk": "每块字符数",
    "Question": "问题",
    "Techniques": "技术",
    "Search": "检索",
    "✅ answered, verified": "✅ 已回答，已通过验证",
    "⚠️ answered, but the verifier did not accept it": "⚠️ 已回答，但验证智能体没有接受",
    "🚫 not in these documents (relevance check: no match)": "🚫 这些文档里没有（相关性检查：不匹配）",
    "🚫 not in these documents (the research agent found no answer)": "🚫 这些文档里没有（研究智能体没有找到答案）",
    "· {seconds:.1f} s · {rounds} research round(s)": "· {seconds:.1f} 秒 · 研究 {rounds} 轮",
    "Citations": "引用",
    ": none given by the research agent": "：研究智能体没有给出引用",
    "unsupported claims": "缺乏依据的论断",
    "contradictions": "矛盾之处",
    "Verification report": "验证报告",
    "s": "秒",
    "Agent trace": "智能体轨迹",
    "'{name}' saved as '{saved}' (same name as another upload, or a folder in its name)": "'{name}' 已另存为 '{saved}'（与另一个上传文件同名，或文件名里带有文件夹）",
    "Upload files": "上传文件",
    "Ask a question about the documents": "就这些文档提一个问题",
    "Ask": "提问",
    "the course knowledge base": "课程知识库",
    "Searching {source}.": "正在检索{source}。",
    "Upload files to start.": "先上传文件。",
    "Reading {n} file(s)…": "正在读取 {n} 个文件…",
    "Type a question first.": "请先输入一个问题。",
    "No documents yet: upload at least one file first.": "还没有文档：请先上传至少一个文件。",
    "Relevance checker → research agent → verification agent…": "相关性检查器 → 研究智能体 → 验证智能体…",
    "Done in {seconds:.1f} s.": "用时 {seconds:.1f} 秒完成。",
    "{kept} questions kept ({singles} from one chunk, {pairs} from two); {rejected} not kept": (
        "保留 {kept} 道问题（{singles} 道出自单个块，{pairs} 道出自两个块）；{rejected} 道未保留"
    ),
    "test questions": "测试问题",
    "pipeline × question": "流水线 × 问题",
    "best scores": "最高分",
    "gate calibration": "门控校准",
    "- **Completeness on the judged sample**: the same order on both corpora ({order}).": (
        "- **评审样本上的完整性**：两个语料库上顺序相同（{order}）。"
    ),
    "{name} {rank_a} on {a} ({value_a:.2f}) → {rank_b} on {b} ({value_b:.2f})": (
        "{name} 在 {a} 上排第 {rank_a}（{value_a:.2f}）→ 在 {b} 上排第 {rank_b}（{value_b:.2f}）"
    ),
    "- **Completeness ranks change on the judged sample** (small: read them with the retrieval ranks above): {moves}.": (
        "- **评审样本上完整性的排名变了**（样本小：请结合上面的检索排名来读）：{moves}。"
    ),
    "DeepSeek API": "DeepSeek API",
    "local llama.cpp server, {endpoint}": "本地 llama.cpp 服务器，{endpoint}",
    "Chat model: {name} ({where})": "对话模型：{name}（{where}）",
    "{files} file(s) → {chunks} chunks.": "{files} 个文件 → {chunks} 个块。",
    "Skipped {name}: {reason}": "已跳过 {name}：{reason}",
    "Skipped": "已跳过",
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


def _chinese_plots() -> None:
    """A notebook that speaks Chinese draws Chinese plot text: every translated notebook imports `t` in its
    first cell, so this registers the packaged font (lessons.core.plot_fonts) before any plot, no cell needed."""
    try:
        language = course_language()
    except LanguageError:
        return  # t() reports the bad setting where it is used
    if language != ENGLISH:
        from lessons.core.plot_fonts import use_chinese_font

        use_chinese_font()


if __name__ == "__main__":
    raise SystemExit(main())
else:
    _chinese_plots()
