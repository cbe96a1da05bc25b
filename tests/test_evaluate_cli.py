"""The evaluation command line: config errors, a run on a small folder of documents, and the scale-out path —
the same command against a Chroma server (`chroma run`, started here) and with DeepSeek selected by settings."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest
from langchain_core.messages import AIMessage

from lessons.core import models
from lessons.core.fakes import ScriptedChatModel
from lessons.core.settings import SettingsError
from lessons.evaluation.cli import ConfigError, load_config, main

REAL_GET_CHAT_MODEL = models.get_chat_model  # the project fixture replaces it with a scripted fake

DOCS = {
    "atlas.md": "# Atlas Server\n\nAtlas Server exposes its REST API on port 7420 by default. "
    "The admin console needs a licence key from the Tidewell portal. " * 2 + "\n",
    "leave_zh.md": "# 年假\n\n"
    + "鹿特丹的员工每年有 27 天年假，未用完的假期最多可结转 5 天，须在次年 4 月 30 日前用完。" * 5
    + "\n",
}
QUESTIONS = [
    {
        "id": "q1",
        "question": "Which port does Atlas Server use by default?",
        "language": "en",
        "type": "fact",
        "reference": "Port 7420.",
        "evidence": ["port 7420 by default"],
    },
    {
        "id": "q2",
        "question": "鹿特丹员工每年有几天年假？",
        "language": "zh",
        "type": "fact",
        "reference": "27 天。",
        "evidence": ["每年有 27 天年假"],
    },
    {"id": "q3", "question": "Who is the chief financial officer?", "language": "en", "type": "out_of_kb"},
]


def scripted_model():
    """Answers every structured request of the pipelines and judges, deterministically, from the prompt."""

    def reply(messages, tools):
        prompt = messages[-1].content if tools else messages[0].content
        if not tools and ("Search result:" in messages[-1].content or "搜索结果：" in messages[-1].content):
            # the calibrated grader's one-token judge (English or Chinese prompt)
            judged = messages[-1].content
            return AIMessage("no" if "financial" in judged else "yes")  # no log-probabilities: the reply decides
        if tools == ["RewrittenQuery"]:
            return {"query": "CFO name", "new_keywords": ["finance"]}
        if tools == ["DraftAnswer"]:
            if "financial" in prompt:
                return {"answer": "", "found": "no"}
            return {"answer": "27 天。" if "年假" in prompt else "Port 7420.", "found": "yes"}
        if tools == ["Evidence"]:  # the answerability check's judge quotes the sentence that answers
            if "financial" in prompt:
                return {"quote": "", "answer": ""}
            if "年假" in prompt.splitlines()[0]:  # the question (the documents hold both passages)
                return {"quote": "鹿特丹的员工每年有 27 天年假", "answer": "27 天"}
            return {"quote": "Atlas Server exposes its REST API on port 7420 by default.", "answer": "7420"}
        if tools == ["GeneratedQuestion"]:
            if "Text A" in prompt:
                return {
                    "question": "Which port does Atlas use, and how many days of leave are there?",
                    "answer": "port 7420; 27 天年假",
                }
            if "7420" in prompt:
                return {"question": "Which port does Atlas Server use by default?", "answer": "port 7420 by default"}
            return {"question": "鹿特丹员工每年有几天年假？", "answer": "27 天年假"}
        if tools == ["FaithfulnessVerdict"]:
            return {"answer_claim": "the fact", "context_says": "the fact", "consistent": "yes"}
        if tools == ["CompletenessVerdict"]:
            return {"reference_key_fact": "the fact", "answer_says": "the fact", "complete": "yes"}
        raise AssertionError(f"unexpected request {tools}")

    return ScriptedChatModel(default=reply)


@pytest.fixture
def project(tmp_path, fresh_settings, monkeypatch):
    """A documents folder, a questions file and a config; chat models come from a scripted fake."""
    docs = tmp_path / "docs"
    docs.mkdir()
    for name, text in DOCS.items():
        (docs / name).write_text(text, encoding="utf-8")
    (tmp_path / "questions.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in QUESTIONS))
    config = tmp_path / "eval.toml"
    config.write_text('documents = "docs"\nquestions = "questions.jsonl"\npipelines = ["dense", "hybrid", "grading-loop"]\n'
                      'output = "out"\n\n[retrieval]\nk = 2\nmax_rounds = 2\n')  # fmt: skip
    made = []

    def fake_get_chat_model(*args, **kwargs):
        from lessons.core.models import active_model_info

        made.append(active_model_info())  # what the settings select; the calls go to the fake
        return scripted_model()

    monkeypatch.setattr("lessons.core.models.get_chat_model", fake_get_chat_model)
    return {"root": tmp_path, "config": config, "models": made, "settings": fresh_settings}


def read_table(out: Path) -> pd.DataFrame:
    data = json.loads((out / "results.json").read_text())
    return pd.DataFrame(data["table"]).drop(columns=["s/question"]).set_index("pipeline")


def test_the_command_writes_json_markdown_and_a_chart(project, capsys):
    assert main([str(project["config"]), "--no-progress"]) == 0
    out = project["root"] / "out"
    for name in ("results.json", "report.md", "comparison.png", "test_set.jsonl"):
        assert (out / name).is_file(), name
    table = read_table(out)
    assert list(table.index) == ["dense", "hybrid", "grading-loop"]
    assert (table["hit@2"] == 1.0).all() and (table["abstained (out-of-KB)"] == 1.0).all()
    assert (table["judge failures"] == 0).all() and (table["completeness"] == 1.0).all()
    assert (table["pipeline errors"] == 0).all()
    assert "\n| dense " in capsys.readouterr().out  # the comparison table's row (padded by DataFrame.to_markdown)
    assert project["models"][0].provider == "local"


def test_the_same_config_gives_the_same_table(project):
    assert main([str(project["config"]), "--no-progress"]) == 0
    first = read_table(project["root"] / "out")
    shutil.rmtree(project["root"] / "out")  # the second table is the second run's, not the first one's file
    assert main([str(project["config"]), "--no-progress"]) == 0
    pd.testing.assert_frame_equal(first, read_table(project["root"] / "out"))


def test_generate_makes_the_questions_and_saves_them_with_their_evidence(project):
    config = project["root"] / "generate.toml"
    config.write_text('documents = "docs"\nquestions = "generate"\npipelines = ["dense"]\noutput = "gen"\n\n'
                      '[generate]\nsingle = 2\nmulti = 1\n\n[retrieval]\nk = 2\n')  # fmt: skip
    assert main([str(config), "--no-progress"]) == 0
    saved = [json.loads(line) for line in (project["root"] / "gen" / "test_set.jsonl").read_text().splitlines()]
    assert {q["language"] for q in saved} == {"en", "zh"}
    assert all(q["origin"] == "generated" and q["evidence_chunk_ids"] for q in saved)
    table = read_table(project["root"] / "gen")
    assert table.loc["dense", "questions"] == len(saved) and table.loc["dense", "hit@2"] == 1.0


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (
            'documents = "docs"\nquestions = "gold"\npipelines = ["dense", "colbert"]\n',
            "unknown pipeline(s) ['colbert']",
        ),
        ('documents = "nowhere"\nquestions = "gold"\npipelines = ["dense"]\n', "documents folder"),
        ('documents = "docs"\nquestions = "missing.jsonl"\npipelines = ["dense"]\n', "questions file"),
        ('documents = "docs"\nquestions = "gold"\n', "missing 'pipelines'"),
        ('documents = "docs"\nquestions = "gold"\npipelines = ["dense"]\nmodel = "gpt"\n', "unknown key 'model'"),
        (
            'documents = "docs"\nquestions = "gold"\npipelines = ["dense"]\n[retrieval]\nk = "three"\n',
            "must be a whole number",
        ),
        ('documents = "docs\nquestions = 1\n', "not valid TOML"),
    ],
)
def test_a_bad_config_names_the_file_and_the_fix(project, content, fragment):
    path = project["root"] / "bad.toml"
    path.write_text(content)
    with pytest.raises(ConfigError, match="bad.toml") as error:
        load_config(path)
    assert fragment in str(error.value)


BASE = 'documents = "docs"\nquestions = "gold"\npipelines = ["dense"]\n'


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (BASE + "[retrieval]\nk = 0\n", "[retrieval] k = 0 is out of range — use a whole number from 1 to 50"),
        (BASE + "[retrieval]\nrank_k = -5\n", "[retrieval] rank_k = -5 is out of range"),
        (BASE + "[retrieval]\nmax_rounds = 0\n", "[retrieval] max_rounds = 0 is out of range"),
        (BASE + "[retrieval]\nk = 5\nrank_k = 4\n", "rank_k = 4 is less than k = 5"),
        (BASE + "[sample]\nin_kb = -1\n", "[sample] in_kb = -1 is out of range"),
        (BASE + "[sample]\nin_kb = 0\nout_of_kb = 0\n", "sample at least one question"),
        (BASE + "[limits]\nmax_file_bytes = 0\n", "[limits] max_file_bytes = 0 is out of range"),
        (
            'documents = "docs"\nquestions = "generate"\npipelines = ["dense"]\n[generate]\nsingle = 0\nmulti = 0\n',
            "ask for at least one question",
        ),
        (
            'documents = "docs"\nquestions = "gold"\npipelines = ["dense", "hybrid", "dense"]\n',
            "['dense'] are listed more than once",
        ),
        (BASE + "generate = 5\n", "[generate] is a section of settings, not a value"),
        (BASE + "[rerank]\nfirst_stage_weight = 1.5\n", "[rerank] first_stage_weight = 1.5 — use a number from 0 to 1"),
        (BASE + '[rerank]\nfirst_stage_weight = "high"\n', "use a number from 0 to 1"),
        (BASE + "[rerank]\ncross_lingual = 1\n", "[rerank] cross_lingual = 1 — write true or false"),
        (BASE + "[rerank]\nweight = 0.2\n", "unknown key 'weight' in [rerank]"),
    ],
)
def test_every_numeric_setting_is_bounded_and_duplicates_refused(project, content, fragment):
    path = project["root"] / "bad.toml"
    path.write_text(content)
    with pytest.raises(ConfigError, match="bad.toml") as error:
        load_config(path)
    assert fragment in str(error.value)


def test_a_config_with_a_byte_order_mark_is_read_and_a_latin1_one_names_the_file(project):
    path = project["root"] / "bom.toml"
    path.write_bytes(b"\xef\xbb\xbf" + (BASE + "# caf\u00e9\n").encode("utf-8"))
    assert load_config(path).pipelines == ["dense"]
    path = project["root"] / "latin.toml"
    path.write_bytes((BASE + "# le caf\u00e9 est tr\u00e8s bon, merci\n").encode("latin-1"))
    with pytest.raises(ConfigError, match="latin.toml: not UTF-8") as error:
        load_config(path)
    assert "WINDOWS-1252" in str(error.value) and "Save with Encoding" in str(error.value)


def test_bad_files_in_the_folder_are_listed_and_the_rest_is_evaluated(project, capsys):
    docs = project["root"] / "docs"
    (docs / "empty.pdf").write_bytes(b"")
    (docs / "zz_copy.md").write_bytes((docs / "atlas.md").read_bytes())
    assert main([str(project["config"]), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "Skipped 2 file(s)" in out and "empty.pdf: EmptyFile" in out and "zz_copy.md: DuplicateContent" in out
    table = read_table(project["root"] / "out")
    assert (table["hit@2"] == 1.0).all(), "the good files were evaluated"
    report = (project["root"] / "out" / "report.md").read_text()
    assert "files skipped" in report and "empty.pdf" in report


@pytest.mark.parametrize("bad", ["empty", "only bad files"])
def test_a_folder_with_nothing_readable_stops_before_any_model_call(project, capsys, bad):
    docs = project["root"] / "docs"
    for path in docs.iterdir():
        path.unlink()
    if bad == "only bad files":
        (docs / "empty.pdf").write_bytes(b"")
    assert main([str(project["config"]), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "no file in" in err and ("folder is empty" in err if bad == "empty" else "empty.pdf: EmptyFile" in err)
    assert project["models"] == [], "no chat model was even made"


def test_size_limits_from_the_config_reach_ingestion(project, capsys):
    sizes = sorted((path.stat().st_size, path.name) for path in (project["root"] / "docs").iterdir())
    (small, _), (large, large_name) = sizes
    assert small < large
    config = project["root"] / "limits.toml"
    config.write_text(
        project["config"].read_text().replace("[retrieval]", f"[limits]\nmax_file_bytes = {small}\n\n[retrieval]")
    )
    assert load_config(config).ingest_limits().max_file_bytes == small
    assert main([str(config), "--no-progress"]) == 2, "a question's evidence is in the file that was skipped"
    assert "is in none of the chunks" in capsys.readouterr().err
    kept = [q for q in QUESTIONS if not any(quote in DOCS[large_name] for quote in q.get("evidence", []))]
    (project["root"] / "questions.jsonl").write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in kept))
    assert main([str(config), "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"{large_name}: FileTooLarge" in out and "[limits] max_file_bytes" in out


def test_a_bad_config_is_an_error_message_not_a_traceback(project, capsys):
    assert main([str(project["root"] / "absent.toml")]) == 2
    assert "--example" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('documents = "docs"\nquestions = "gold"\n', "缺少 'pipelines'"),
        ('documents = "docs"\nquestions = "gold"\npipelines = ["dense"]\n[retrieval]\nk = 99\n', "超出范围"),
        ('documents = "docs"\nquestions = "gold"\npipelines = ["dense", "dense"]\n', "每条流水线只列一次"),
        ('documents = "docs"\nquestions = "gold"\npipelines = ["densest"]\n', "未知的流水线 ['densest']"),
    ],
)
def test_a_chinese_reader_gets_the_config_error_in_chinese(project, monkeypatch, content, fragment):
    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    config = project["root"] / "zh.toml"
    config.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError) as error:
        load_config(config)
    assert fragment in str(error.value) and str(config) in str(error.value)


@pytest.mark.parametrize(
    ("argv", "code", "shown", "english"),
    [
        (["--help"], 0, ["用法：", "位置参数", "显示这段帮助并退出", "只评测前 N 道问题", "第二个知识库"],
         ["usage:", "options", "show this help", "evaluate only"]),
        (["--limit", "x"], 2, ["用法：", "错误：参数 --limit：无效的 int 值：'x'"], ["usage:", "error:", "invalid"]),
        (["a.toml", "--bogus"], 2, ["错误：无法识别的参数：--bogus"], ["error:", "unrecognized"]),
        (["--preset", "nope"], 2, ["错误：参数 --preset：无效的选择：'nope'"], ["error:", "invalid choice"]),
        ([], 2, ["错误：请给出一个配置文件"], ["error:", "give a config"]),
        (["a.toml", "--preset", "packages"], 2, ["错误：请给出配置文件或 --preset，不要同时给出"], ["error:", "not both"]),
    ],
)  # fmt: skip
def test_a_chinese_reader_gets_the_help_and_the_argument_errors_in_chinese(
    monkeypatch, capsys, argv, code, shown, english
):
    import argparse

    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    original = argparse._
    with pytest.raises(SystemExit) as stop:
        main(argv)
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert stop.value.code == code
    assert all(fragment in text for fragment in shown), text
    assert not [word for word in english if word in text], text
    assert argparse._ is original  # argparse speaks as before once the command has parsed its arguments


def test_an_english_reader_gets_argparses_own_help_and_errors(monkeypatch, capsys):
    monkeypatch.setenv("AGENTIC_RAG_LANG", "en")
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert out.startswith("usage: python -m lessons.evaluation.cli") and "show this help message and exit" in out
    with pytest.raises(SystemExit):
        main(["--limit", "x"])
    assert "error: argument --limit: invalid int value: 'x'" in capsys.readouterr().err


def test_the_example_config_names_every_pipeline_the_registry_has():
    from lessons.evaluation.cli import EXAMPLE_CONFIG
    from lessons.evaluation.pipelines import PIPELINES

    missing = [name for name in PIPELINES if f'"{name}"' not in EXAMPLE_CONFIG]
    assert not missing, f"the example config's pipelines line does not mention {missing}"


def test_the_example_config_is_valid(project, capsys, monkeypatch):
    assert main(["--example"]) == 0
    example = project["root"] / "example.toml"
    example.write_text(capsys.readouterr().out.replace('"data/corpus"', '"docs"'))
    config = load_config(example)
    assert config.questions == "generate" and "qa-hybrid" in config.pipelines


# --- the scale-out path: settings only ------------------------------------------------------------


def chroma_executable() -> str | None:
    beside_python = Path(sys.executable).parent / "chroma"
    return str(beside_python) if beside_python.exists() else shutil.which("chroma")


@pytest.fixture
def chroma_server(tmp_path):
    """`chroma run` on a free port of 127.0.0.1, stopped at the end."""
    executable = chroma_executable()
    if executable is None:
        pytest.skip("the `chroma` command is not installed (it comes with `pip install chromadb`)")
    import chromadb

    from lessons.core.local_server import free_port

    port = free_port()
    log = (tmp_path / "chroma.log").open("w")
    process = subprocess.Popen([executable, "run", "--host", "127.0.0.1", "--port", str(port), "--path", str(tmp_path / "chroma-data")],
                               stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                chromadb.HttpClient(
                    host="127.0.0.1", port=port, settings=chromadb.Settings(anonymized_telemetry=False)
                ).heartbeat()
                break
            except Exception:  # noqa: BLE001 - not answering yet; a dead process or the deadline raises below
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(
                        f"chroma run did not start: {(tmp_path / 'chroma.log').read_text()[-2000:]}"
                    ) from None
                time.sleep(0.3)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


def test_the_same_command_runs_against_a_chroma_server(project, chroma_server, monkeypatch):
    import chromadb

    assert main([str(project["config"]), "--no-progress"]) == 0
    embedded = read_table(project["root"] / "out")
    shutil.rmtree(project["root"] / "out")

    monkeypatch.setenv("AGENTIC_RAG_CHROMA_URL", chroma_server)
    project["settings"].cache_clear()
    assert main([str(project["config"]), "--no-progress"]) == 0
    served = read_table(project["root"] / "out")

    port = int(chroma_server.rsplit(":", 1)[1])
    client = chromadb.HttpClient(host="127.0.0.1", port=port, settings=chromadb.Settings(anonymized_telemetry=False))
    (collection,) = client.list_collections()
    assert collection.name.startswith("eval-") and collection.count() == 2  # the two documents' chunks, on the server
    report = (project["root"] / "out" / "report.md").read_text()
    assert f"Chroma server {chroma_server}" in report
    pd.testing.assert_frame_equal(embedded, served)


def test_a_chroma_url_with_no_server_behind_it_says_how_to_start_one(fresh_settings, monkeypatch):
    from lessons.core.local_server import free_port
    from lessons.core.vectorstore import chroma_client

    monkeypatch.setenv("AGENTIC_RAG_CHROMA_URL", f"http://127.0.0.1:{free_port()}")
    fresh_settings.cache_clear()
    with pytest.raises(ConnectionError, match="chroma run --host 127.0.0.1"):
        chroma_client()


def test_a_malformed_chroma_url_is_a_settings_error(fresh_settings, monkeypatch):
    monkeypatch.setenv("AGENTIC_RAG_CHROMA_URL", "127.0.0.1:8000")
    with pytest.raises(SettingsError, match="AGENTIC_RAG_CHROMA_URL.*http://HOST:PORT"):
        fresh_settings()


def test_deepseek_is_selected_by_settings_alone_never_silently_replaced(project, monkeypatch, capsys):
    """No internet here: the command is run with DeepSeek settings and the model it asked for is
    inspected (the calls themselves go to the scripted fake)."""
    monkeypatch.setenv("AGENTIC_RAG_MODEL", "deepseek")
    project["settings"].cache_clear()
    assert main([str(project["config"]), "--no-progress"]) == 2  # no key: an error, not the local model
    assert "DEEPSEEK_API_KEY is not set" in capsys.readouterr().err
    assert project["models"] == []

    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-not-used")
    project["settings"].cache_clear()
    assert main([str(project["config"]), "--no-progress"]) == 0
    assert project["models"][-1].provider == "deepseek" and "deepseek.com" in project["models"][-1].endpoint
    report = (project["root"] / "out" / "report.md").read_text()
    assert "DeepSeek API" in report  # the report names the model that the settings chose


def test_the_real_get_chat_model_points_at_deepseek_when_settings_say_so(fresh_settings, monkeypatch):
    from lessons.core import models

    monkeypatch.setenv("AGENTIC_RAG_MODEL", "deepseek")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-test-not-used")
    fresh_settings.cache_clear()
    model = models.get_chat_model()  # constructs the client; nothing is sent
    assert model.provider == "deepseek" and "api.deepseek.com" in str(model.api_base)


# --- the second corpus preset, and the gate's thresholds said plainly ----------------------------------


def test_a_report_on_other_documents_says_the_gate_thresholds_come_from_elsewhere(project):
    assert main([str(project["config"]), "--no-progress"]) == 0
    report = (project["root"] / "out" / "report.md").read_text(encoding="utf-8")
    line = next(line for line in report.splitlines() if line.startswith("- **gate thresholds**"))
    assert "NOT calibrated on" in line and "course corpus" in line and str(project["root"] / "docs") in line


def test_the_packages_preset_reads_the_second_corpus_and_its_gold_set(fresh_settings):
    from lessons.evaluation.cli import PRESETS, preset_config
    from lessons.ingest.corpus import PACKAGES_DIR

    assert "packages" in PRESETS
    config = preset_config("packages")  # written under the project root (here: the test's tmp_path)
    assert config.corpus == "packages" and config.documents == PACKAGES_DIR.resolve() and config.questions == "gold"
    assert config.gate == {"calibrate": 24, "seed": 0}  # its gate is calibrated on its own questions
    with pytest.raises(ConfigError, match="unknown preset 'nope'"):
        preset_config("nope")


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('corpus = "tidewell"\nquestions = "gold"\npipelines = ["dense"]\n', "corpus = 'tidewell' — choose one of"),
        (
            'corpus = "packages"\ndocuments = "docs"\nquestions = "gold"\npipelines = ["dense"]\n',
            "remove one of the two",
        ),
    ],
)
def test_a_bad_corpus_key_names_the_fix(project, content, fragment):
    path = project["root"] / "bad.toml"
    path.write_text(content, encoding="utf-8")
    with pytest.raises(ConfigError, match=fragment.replace("(", "\\(").replace(")", "\\)")):
        load_config(path)


def test_the_gold_questions_of_a_corpus_preset_are_that_corpus(project, monkeypatch):
    from lessons.evaluation.cli import question_set

    path = project["root"] / "packages.toml"
    path.write_text('corpus = "packages"\nquestions = "gold"\npipelines = ["dense"]\n', encoding="utf-8")
    config = load_config(path)
    seen = []
    monkeypatch.setattr("lessons.evaluation.testset.from_gold", lambda gold, chunks: seen.extend(gold) or [])
    question_set(config, [], None, progress=False)
    from lessons.ingest.corpus import load_gold

    assert [q.id for q in seen] == [q.id for q in load_gold(corpus="packages")]


# --- [gate] calibrate: the gate's thresholds calibrated on the user's own questions -----------------------


def test_calibrate_sets_the_gate_from_the_test_set_and_the_report_says_on_what(project, capsys):
    config = project["root"] / "calibrate.toml"
    config.write_text(project["config"].read_text() + "\n[gate]\ncalibrate = 3\n")
    assert main([str(config), "--no-progress"]) == 0
    report = (project["root"] / "out" / "report.md").read_text(encoding="utf-8")
    line = next(line for line in report.splitlines() if line.startswith("- **gate thresholds**"))
    # the scripted judge says "yes" (P(yes) 1) to the port question and "no" (0) to the CFO one: midway is 0.50;
    # no [sample], so the only questions are the evaluated ones and the note says in-sample
    assert "en P(yes) ≥ 0.50 calibrated on 2 of the evaluated questions themselves (in-sample" in line
    assert "refuses 100% of those out-of-KB" in line
    # no Chinese near miss: the Chinese threshold stays the course's, said plainly
    assert "zh P(yes) ≥ 0.77 from" in line and "NOT calibrated on" in line and "add near misses in zh" in line
    assert (read_table(project["root"] / "out").loc["grading-loop", "abstained (out-of-KB)"] == 1.0).all()
    scores = json.loads((project["root"] / "out" / "gate_calibration.json").read_text(encoding="utf-8"))
    assert sorted((s["question_id"], s["score"]) for s in scores) == [("q1", 1.0), ("q2", 1.0), ("q3", 0.0)]
    # the thresholds themselves, for AGENTIC_RAG_GATE_FILE (the service and later evaluations), with what they rest on
    from lessons.agents.grading import DEFAULT_GATE, GateThresholds, load_gate

    assert load_gate(project["root"] / "out" / "gate.json") == {
        "en": GateThresholds(0.0, 0.5),
        "zh": DEFAULT_GATE["zh"],
    }
    saved = json.loads((project["root"] / "out" / "gate.json").read_text(encoding="utf-8"))["calibrated_on"]
    assert saved["in_sample"] is True and saved["languages"]["en"] == {"answerable": 1, "out_of_kb": 1}
    assert saved["languages"]["zh"].startswith("not calibrated")


def test_calibration_questions_come_from_outside_the_evaluated_sample_when_there_are_any(project):
    from lessons.evaluation.cli import calibration_questions
    from lessons.evaluation.testset import load_test_set

    extra = [{"id": "q4", "question": "Which port does the Atlas admin console use?", "language": "en",
              "type": "fact", "reference": "Port 7420.", "evidence": ["port 7420 by default"]},
             {"id": "q5", "question": "鹿特丹员工的加班费是多少？", "language": "zh", "type": "out_of_kb"}]  # fmt: skip
    path = project["root"] / "more.jsonl"
    path.write_text("".join(json.dumps(q, ensure_ascii=False) + "\n" for q in [*QUESTIONS, *extra]), encoding="utf-8")
    pool = load_test_set(path)
    config = load_config(project["config"])
    config.gate = {"calibrate": 6}
    evaluated = [item for item in pool if item.id in {"q1", "q2", "q3"}]
    chosen, in_sample = calibration_questions(config, pool, evaluated)
    assert not in_sample and sorted(item.id for item in chosen) == ["q4", "q5"]
    chosen, in_sample = calibration_questions(config, pool, pool)  # nothing outside: the evaluated ones, said so
    assert in_sample and {item.id for item in chosen} <= {item.id for item in pool}
    answerable_only = [item for item in pool if item.answerable]
    with pytest.raises(ConfigError, match="needs out-of-KB questions"):
        calibration_questions(config, answerable_only, answerable_only)


def test_calibrating_on_a_generated_test_set_is_refused_before_anything_runs(project):
    path = project["root"] / "bad.toml"
    path.write_text('documents = "docs"\nquestions = "generate"\npipelines = ["grading-loop"]\n[gate]\ncalibrate = 8\n')
    with pytest.raises(ConfigError, match="bad.toml") as error:
        load_config(path)
    assert "a generated test set has none" in str(error.value)
    path.write_text(BASE + "[gate]\ncalibrate = -1\n")
    with pytest.raises(ConfigError, match=r"\[gate\] calibrate = -1 is out of range"):
        load_config(path)


def _count_ingests(monkeypatch) -> list:
    """Record every call of `lessons.ingest.files.ingest` (the folder read of the evaluation command)."""
    from lessons.ingest import files

    calls, real = [], files.ingest

    def counted(*args, **kwargs):
        calls.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(files, "ingest", counted)
    return calls


def test_a_bad_questions_line_is_reported_before_anything_is_ingested(project, capsys, monkeypatch):
    ingests = _count_ingests(monkeypatch)
    lines = [json.dumps(QUESTIONS[0]), json.dumps({"id": "q2", "question": "How long?", "refrence": "27 days"})]
    (project["root"] / "questions.jsonl").write_text("\n".join(lines) + "\n")
    assert main([str(project["config"]), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "questions.jsonl, line 2: unknown key 'refrence'" in err
    assert ingests == [] and project["models"] == [], "nothing ingested, no chat model made"


def test_a_question_over_the_length_limit_is_refused_with_its_line(project, capsys, monkeypatch):
    from lessons.evaluation.testset import TestSetError

    MAX_QUESTION_CHARS = 2000  # the limit the command names

    ingests = _count_ingests(monkeypatch)
    long = {"id": "q9", "question": "Which port? " + "x" * MAX_QUESTION_CHARS, "type": "out_of_kb"}
    (project["root"] / "questions.jsonl").write_text(
        "".join(json.dumps(q, ensure_ascii=False) + "\n" for q in [*QUESTIONS[:2], long])
    )
    with pytest.raises(TestSetError) as error:
        load_config(project["config"])
    message = str(error.value)
    assert f"questions.jsonl, line 3: the question is {len(long['question']):,} characters long" in message
    assert f"over the limit of {MAX_QUESTION_CHARS:,}" in message
    assert main([str(project["config"]), "--no-progress"]) == 2 and "line 3" in capsys.readouterr().err
    assert ingests == []


def test_a_wrong_server_url_is_an_error_line_with_exit_2_before_anything_is_ingested(project, capsys, monkeypatch):
    from lessons.core import local_server

    monkeypatch.setattr("lessons.core.models.get_chat_model", REAL_GET_CHAT_MODEL)  # the real one, not the fake
    monkeypatch.setenv("AGENTIC_RAG_SERVER_URL", f"http://127.0.0.1:{local_server.free_port()}")  # nothing listens
    project["settings"].cache_clear()
    ingests = _count_ingests(monkeypatch)
    assert main([str(project["config"]), "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: AGENTIC_RAG_SERVER_URL=http://127.0.0.1:") and "does not answer" in err, err
    assert ingests == []


def test_documents_may_be_one_file_and_a_file_that_is_not_a_document_is_named_as_a_file(project, capsys):
    root = project["root"]
    (root / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in (QUESTIONS[0], QUESTIONS[2])))
    config = root / "one.toml"
    config.write_text(project["config"].read_text().replace('documents = "docs"', 'documents = "docs/atlas.md"'))
    assert load_config(config).documents == (root / "docs" / "atlas.md").resolve()
    assert main([str(config), "--no-progress"]) == 0
    table = read_table(root / "out")
    assert (table["hit@2"] == 1.0).all(), "the one document was evaluated"
    config.write_text(project["config"].read_text().replace('documents = "docs"', 'documents = "questions.jsonl"'))
    with pytest.raises(ConfigError) as error:
        load_config(config)
    assert "questions.jsonl is a file, not a folder" in str(error.value) and ".pdf .docx" in str(error.value)


def test_the_reranker_variants_reach_the_run_and_its_report(project, monkeypatch):
    """[rerank]: plain hybrid, the cross-encoder alone (weight 0) or another fusion weight, the cross-lingual route on
    or off — a user compares them on their own documents; the run builds its pipelines with them."""
    from lessons.evaluation import pipelines as harness

    config = project["config"]
    config.write_text(config.read_text().replace('["dense", "hybrid", "grading-loop"]', '["hybrid", "hybrid+rerank"]')
                      + "\n[rerank]\nfirst_stage_weight = 0\ncross_lingual = false\n")  # fmt: skip
    loaded = load_config(config)
    assert loaded.rerank == {"first_stage_weight": 0.0, "cross_lingual": False}
    seen = []
    build = harness.build_measured

    def spy(names, resources):
        seen.append((resources.first_stage_weight, resources.cross_lingual))
        return build(names, resources)

    monkeypatch.setattr(harness, "build_measured", spy)
    assert main([str(config), "--no-progress"]) == 0
    assert seen == [(0.0, False)]
    report = (project["root"] / "out" / "report.md").read_text()
    assert "first-stage weight 0, cross-lingual route off" in report
