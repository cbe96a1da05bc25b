"""The local model runtime's build: chosen per CPU (never native, never AMX), self-tested, repaired, recorded."""

import json
import signal
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from lessons.core import runtime_build as rb

ROOT = Path(__file__).resolve().parents[1]

# /proc/cpuinfo flags of the machine where the default build crashed (a Xeon VM reporting AVX-512 and AMX),
# of a laptop with AVX2 only, and of an old CPU without AVX.
SAPPHIRE_RAPIDS = frozenset(
    [
        "sse4_2",
        "avx",
        "f16c",
        "fma",
        "bmi2",
        "avx2",
        "avx_vnni",
        "avx512f",
        "avx512cd",
        "avx512vl",
        "avx512dq",
        "avx512bw",
        "avx512vbmi",
        "avx512_vnni",
        "avx512_bf16",
        "avx512_fp16",
        "amx_tile",
        "amx_int8",
        "amx_bf16",
    ]
)
AVX2_LAPTOP = frozenset(["sse4_2", "avx", "f16c", "fma", "bmi2", "avx2"])
OLD_CPU = frozenset(["sse4_2"])


def test_the_pin_is_the_projects_pin():
    local = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]["local"]
    assert rb.LLAMA_CPP_PYTHON.replace("llama-cpp-python", "llama-cpp-python[server]") in local


def test_an_amx_cpu_gets_its_avx512_kernels_but_never_amx_nor_native():
    variants = rb.build_variants(SAPPHIRE_RAPIDS, "x86_64", "Linux")
    assert [v.name for v in variants] == ["avx512", "avx2", "x86-64"]
    fastest = variants[0].cmake_args
    assert "-DGGML_NATIVE=OFF" in fastest
    for option in ("AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AVX_VNNI", "AVX2", "FMA"):
        assert f"-DGGML_{option}=ON" in fastest
    for variant in variants:
        assert "-DGGML_NATIVE=OFF" in variant.cmake_args  # never -march=native on x86
        assert not [arg for arg in variant.cmake_args if "AMX" in arg and arg.endswith("=ON")]
        assert not [flag for flag in variant.requires if "amx" in flag]


def test_every_x86_option_is_set_explicitly_in_every_variant():
    """llama.cpp turns AVX/AVX2/FMA/F16C/BMI2 on by default when NATIVE is off: a variant must say OFF itself."""
    for flags in (SAPPHIRE_RAPIDS, AVX2_LAPTOP, OLD_CPU):
        for variant in rb.build_variants(flags, "x86_64", "Linux"):
            for option, _ in rb.X86_OPTIONS:
                settings = [a for a in variant.cmake_args if a.startswith(f"-DGGML_{option}=")]
                assert len(settings) == 1, (variant.name, option, settings)
    baseline = rb.build_variants(OLD_CPU, "x86_64", "Linux")[0].cmake_args
    assert "-DGGML_AVX=OFF" in baseline and "-DGGML_AVX2=OFF" in baseline and "-DGGML_FMA=OFF" in baseline


def test_each_variant_requires_only_what_it_compiles_in():
    avx512, avx2, baseline = rb.build_variants(SAPPHIRE_RAPIDS, "x86_64", "Linux")
    assert {"avx512f", "avx512bw", "avx512_bf16"} <= set(avx512.requires)
    assert "avx512f" not in avx2.requires and "avx2" in avx2.requires
    assert baseline.requires == ("sse4_2",)
    assert len({avx512.key, avx2.key, baseline.key}) == 3  # three builds, three cache folders


def test_a_cpu_without_avx512_starts_at_avx2_and_an_old_one_at_the_baseline():
    assert [v.name for v in rb.build_variants(AVX2_LAPTOP, "x86_64", "Linux")] == ["avx2", "x86-64"]
    assert [v.name for v in rb.build_variants(OLD_CPU, "x86_64", "Linux")] == ["x86-64"]
    stray = frozenset({"avx512_vnni", *AVX2_LAPTOP})  # an extension without AVX-512 itself is not used
    assert not [a for a in rb.build_variants(stray, "x86_64", "Linux")[0].cmake_args if "AVX512" in a and "=ON" in a]


def test_arm_builds():
    assert [v.name for v in rb.build_variants(frozenset(), "arm64", "Darwin")] == ["apple-default"]
    linux = rb.build_variants(frozenset(), "aarch64", "Linux")
    assert [v.name for v in linux] == ["native", "portable"] and linux[1].cmake_args == ("-DGGML_NATIVE=OFF",)


_BUILD_VARIANTS = rb.build_variants  # the real function, before a fixture replaces it


def _real_variants(flags):
    return _BUILD_VARIANTS(flags, "x86_64", "Linux")


@pytest.fixture
def wheel_cache(tmp_path, monkeypatch):
    """A wheel cache under tmp_path, on a CPU that reports AVX-512 and AMX."""
    monkeypatch.setenv("AGENTIC_RAG_WHEEL_CACHE", str(tmp_path / "wheels"))
    monkeypatch.setattr(rb, "cpu_flags", lambda: SAPPHIRE_RAPIDS)
    monkeypatch.setattr(rb, "build_variants", lambda *a, **k: _real_variants(SAPPHIRE_RAPIDS))
    return tmp_path


def test_wheels_live_outside_pips_cache_in_a_folder_named_by_the_options(wheel_cache):
    avx512, avx2, _ = _real_variants(SAPPHIRE_RAPIDS)
    assert rb.wheel_dir(avx512).is_relative_to(wheel_cache / "wheels")
    assert avx512.key in rb.wheel_dir(avx512).name and rb.wheel_dir(avx512) != rb.wheel_dir(avx2)


def test_a_crashed_build_is_skipped_on_this_cpu_only(wheel_cache):
    avx512, avx2, _ = _real_variants(SAPPHIRE_RAPIDS)
    assert rb.chosen_variant() == avx512
    rb.mark_crashed(avx512)
    assert rb.chosen_variant() == avx2
    assert rb.crashed_builds(fingerprint="another-cpu") == set()


CRASHING_PYTHON = """#!/bin/sh
echo "SYSTEM_INFO CPU : SSE3 = 1 | AVX512 = 1 | AMX_INT8 = 1 |"
kill -SEGV $$
"""


def test_a_crashing_runtime_is_caught_and_named(tmp_path):
    fake = tmp_path / "python"
    fake.write_text(CRASHING_PYTHON)
    fake.chmod(0o755)
    test = rb.self_test(tmp_path / "model.gguf", python=str(fake), timeout=30)
    assert not test.ok and test.returncode == -signal.SIGSEGV and test.signal_name == "SIGSEGV"
    assert "AMX_INT8 = 1" in test.system_info
    report = test.crash_report(rb.build_variants(SAPPHIRE_RAPIDS, "x86_64", "Linux")[0])
    assert "killed by SIGSEGV" in report and "-DGGML_NATIVE=OFF" in report and "AMX_INT8 = 1" in report


def test_check_repairs_a_crash_with_the_next_safer_build(wheel_cache, monkeypatch, capsys):
    avx512 = _real_variants(SAPPHIRE_RAPIDS)[0]
    installed, tested = [], []
    monkeypatch.setattr(rb, "build", lambda variant, python=sys.executable: Path(f"/wheels/{variant.name}.whl"))
    monkeypatch.setattr(rb, "install", lambda wheel, python=sys.executable: installed.append(wheel.name))
    monkeypatch.setattr(rb, "_model_path", lambda: Path("model.gguf"))
    monkeypatch.setattr(rb, "record_path", lambda prefix=None: wheel_cache / "record.json")

    def fake_self_test(model_path, threads=2, python=sys.executable, timeout=600):
        tested.append(installed[-1])
        if installed[-1] == "avx512.whl":
            return rb.SelfTest(False, -signal.SIGSEGV, 1.0, signal_name="SIGSEGV")
        return rb.SelfTest(True, 0, 2.0, prompt_tokens=80, completion_tokens=4)

    monkeypatch.setattr(rb, "self_test", fake_self_test)
    assert rb.command_check() == 0
    assert installed == ["avx512.whl", "avx2.whl"] and tested == ["avx512.whl", "avx2.whl"]
    assert rb.crashed_builds() == {avx512.key}
    record = json.loads((wheel_cache / "record.json").read_text())
    assert record["variant"] == "avx2" and record["self_test"]["ok"]
    out = capsys.readouterr()
    assert "killed by SIGSEGV" in out.err and "trying a safer build" in out.out
    installed.clear()
    assert rb.command_check() == 0 and installed == []  # this CPU passed: instant, nothing reinstalled


def test_a_runtime_built_for_another_cpu_is_refused_before_it_starts(tmp_path):
    variant = rb.build_variants(SAPPHIRE_RAPIDS, "x86_64", "Linux")[0]
    rb.write_record(variant, rb.SelfTest(True, 0, 1.0), prefix=tmp_path)
    assert rb.runtime_mismatch(tmp_path, flags=SAPPHIRE_RAPIDS) is None
    message = rb.runtime_mismatch(tmp_path, flags=AVX2_LAPTOP)
    assert "avx512f" in message and "scripts/setup.sh" in message


def test_the_installed_runtime_passes_its_self_test():
    """The build setup installed evaluates a prompt on this CPU (no signal, an answer)."""
    pytest.importorskip("llama_cpp")
    from lessons.core.local_model import resolve_local_model

    test = rb.self_test(resolve_local_model(progress=False).path)
    assert test.ok, test.crash_report(None)
    assert test.prompt_tokens > 50 and "AMX" not in test.system_info


def _a_server_that_crashed():
    """Record as the course's server a process that died of SIGSEGV under faulthandler; its log path."""
    from lessons.core import local_server

    log = local_server.server_log_path()
    code = "import faulthandler, os, signal; faulthandler.enable(); os.kill(os.getpid(), signal.SIGSEGV)"
    with open(log, "w") as handle:
        dead = subprocess.Popen([sys.executable, "-c", code], stdout=handle, stderr=subprocess.STDOUT)
        dead.wait()
    state = local_server.ServerInfo("http://127.0.0.1:9", "local", dead.pid, None, str(log))
    local_server._state_file().write_text(json.dumps(state.__dict__))
    return log


def test_the_server_log_names_a_crash(fresh_settings, monkeypatch, tmp_path):
    """A server that dies of a signal under faulthandler is reported as a crash, with the fix."""
    from lessons.core import local_server

    log = _a_server_that_crashed()
    report = local_server.crash_report()
    assert "crashed: Segmentation fault" in report and "runtime_build check --force" in report
    log.write_text("INFO: shutting down\n")
    assert "stopped without a crash" in local_server.crash_report()
    # an external server is never diagnosed as ours
    monkeypatch.setenv("AGENTIC_RAG_SERVER_URL", "http://127.0.0.1:9")
    fresh_settings.cache_clear()
    assert local_server.crash_report() is None


def test_a_chinese_reader_is_told_of_the_crash_in_chinese(fresh_settings, monkeypatch):
    """The crash report, the server's status and the server command's lines follow the course language."""
    from lessons.core import local_server, local_server_cli

    monkeypatch.setenv("AGENTIC_RAG_LANG", "zh")
    fresh_settings()
    _a_server_that_crashed()
    report = local_server.crash_report()
    assert "崩溃了：Segmentation fault" in report and "runtime_build check --force" in report
    assert "crashed" not in report and "Fix" not in report
    assert local_server.server_status() == "没有正在运行的本地服务器"
    assert local_server_cli.main(["bogus"]) == 2


def test_a_chat_call_to_a_crashed_server_says_so(fresh_settings, monkeypatch):
    """The chat model names the crash instead of 'could not reach the server' (and does not hide it)."""
    from lessons.core import local_server, models

    monkeypatch.setattr(local_server, "crash_report", lambda: "the local model server (pid 7) crashed: Illegal")
    monkeypatch.setattr(models.CourseChatModel, "_server_restarted", lambda self: False)
    llm = models.CourseChatModel(
        model="local", api_base=f"http://127.0.0.1:{local_server.free_port()}/v1", api_key="x",
        provider="local", max_retries=0, cache=False, timeout=5,
    )  # fmt: skip
    with pytest.raises(models.LocalServerCrashed, match="crashed: Illegal"):
        llm.invoke("hello")


def test_an_evaluation_stops_at_a_crashed_server_but_records_other_errors():
    """One failing question is a row; a dead local server ends the run with its cause (every later row would fail)."""
    from lessons.core.fakes import ScriptedChatModel
    from lessons.core.models import LocalServerCrashed
    from lessons.evaluation.pipelines import evaluate_item
    from lessons.evaluation.testset import TestItem

    item = TestItem(id="q-out", question="Who is the CFO?", language="en", type="out_of_kb", origin="gold")

    def broken(question):
        raise ValueError("a bug in this pipeline")

    row = evaluate_item("broken", broken, item, ScriptedChatModel(), None)
    assert row["error"] == "ValueError: a bug in this pipeline" and row["correct_abstention"] is None

    def crashed(question):
        raise LocalServerCrashed("the local model server (pid 7) crashed: Segmentation fault")

    with pytest.raises(LocalServerCrashed, match="Segmentation fault"):
        evaluate_item("crashed", crashed, item, ScriptedChatModel(), None)


def test_a_benchmark_records_which_cpu_it_ran_on_beyond_its_name(monkeypatch, tmp_path):
    """`cpu_summary`: the family and model numbers (two VMs both named "AMD EPYC" differed twofold in speed) and the
    vector features a build could use, AMX included; flags no build reads are left out."""
    from pathlib import Path

    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor\t: 0\ncpu family\t: 25\nmodel\t\t: 1\nmodel name\t: AMD EPYC\n"
                       "flags\t\t: fpu sse4_2 avx avx2 fma f16c bmi2 amx_tile avx512f\n")  # fmt: skip
    real = Path.read_text
    monkeypatch.setattr(
        Path, "read_text", lambda self, *a, **k: real(cpuinfo if str(self) == "/proc/cpuinfo" else self, *a, **k)
    )
    summary = rb.cpu_summary()
    assert summary == {"model_name": "AMD EPYC", "family": "25", "model": "1",
                       "vector_features": "amx_tile avx avx2 avx512f bmi2 f16c fma sse4_2"}  # fmt: skip
