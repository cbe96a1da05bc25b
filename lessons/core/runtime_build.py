"""The offline model's runtime: a llama.cpp build that runs on *this* CPU, chosen, built, self-tested and recorded.

Introduced in notebook 00 (setup); `scripts/setup.sh` runs `python -m lessons.core.runtime_build wheel` before it
installs the course and `… check` after. llama-cpp-python has no binary wheel on PyPI, so it is compiled here,
and llama.cpp's default build (`GGML_NATIVE=ON`, i.e. `-march=native`) compiles every kernel the build machine's
CPU reports — on a virtual machine whose CPU reports AMX that includes the AMX kernels, and the first evaluation
dies with a general protection fault. So the course never builds "native":

- `build_variants()` lists the builds for this CPU, fastest first: the CPU's own vector extensions named one by
  one (`GGML_NATIVE=OFF` plus AVX2 / AVX-512 / VNNI / BF16 options as the CPU reports them, **never AMX**), then
  AVX2 only, then the x86-64 baseline (or, on arm64, llama.cpp's default, then a portable build).
- Each build is a wheel kept in the user's cache folder under a name that holds the build options
  (`~/.cache/agentic-rag/llama-wheels/<version>-<variant>-<hash>/`), never in pip's own wheel cache, whose key
  ignores compiler options: a wheel built for one CPU is never picked up on another by mistake.
- `self_test()` loads the model in a subprocess and evaluates a short prompt. A crash (a signal) is named with the
  signal, the CPU, the build options and the kernel log's line when readable; `check` then marks that build bad for
  this CPU, installs the next safer one and tests again, and says so.
- The installed build is recorded in `<venv>/.llama-runtime.json` (the CPU features it needs, the test result);
  `runtime_mismatch()` tells the server starter when the venv has moved to a CPU that lacks them.

Standard library only: setup runs it before the course's packages are installed.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

LLAMA_CPP_PYTHON = "llama-cpp-python==0.3.36"  # the pin of pyproject.toml's `local` extra (a test keeps them equal)
# The course serves text only: skipping llama.cpp's multimodal library (mtmd) shortens the build.
COMMON_CMAKE_ARGS = ("-DLLAVA_BUILD=OFF",)

# GGML's x86 options and the /proc/cpuinfo flags each one needs, in llama.cpp's order. AMX is deliberately absent.
X86_OPTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("SSE42", ("sse4_2",)),
    ("AVX", ("avx",)),
    ("F16C", ("f16c",)),
    ("FMA", ("fma",)),
    ("BMI2", ("bmi2",)),
    ("AVX2", ("avx2",)),
    ("AVX_VNNI", ("avx_vnni",)),
    ("AVX512", ("avx512f", "avx512cd", "avx512vl", "avx512dq", "avx512bw")),
    ("AVX512_VBMI", ("avx512vbmi",)),
    ("AVX512_VNNI", ("avx512_vnni",)),
    ("AVX512_BF16", ("avx512_bf16",)),
)
AVX2_TIER = ("SSE42", "AVX", "F16C", "FMA", "BMI2", "AVX2")
NEVER = ("AMX_TILE", "AMX_INT8", "AMX_BF16")  # crash with a general protection fault on some VMs that report AMX

# About 230 tokens: long enough that llama.cpp evaluates it in batched matrix kernels, where a build's vector
# extensions (and, in the build that crashed, AMX) do their work; a few seconds on 2 cores.
SELF_TEST_PROMPT = "You are a careful assistant. Read the passages and answer in one word.\n" + "\n".join(
    f"Passage {i}: The {city} office opened in {month} {year} with {n} engineers; it hosts the {team} team and "
    "reports to the operations director, who reviews its budget every quarter."
    for i, (city, month, year, n, team) in enumerate(
        [("Berlin", "March", 2024, 12, "platform"), ("Lisbon", "October", 2025, 9, "support"),
         ("Osaka", "May", 2023, 15, "data"), ("Austin", "June", 2022, 21, "sales"),
         ("Nairobi", "April", 2026, 7, "security"), ("Krakow", "July", 2021, 18, "billing")],
        start=1,
    )
) + "\nQuestion: Which office hosts the support team?\nAnswer:"  # fmt: skip


class RuntimeBuildError(RuntimeError):
    """No build of the local model runtime works on this machine; the message names the cause and the fix."""


@dataclass(frozen=True)
class BuildVariant:
    """One way to compile llama.cpp: a name, its CMake options and the CPU flags it needs to run."""

    name: str
    cmake_args: tuple[str, ...]
    requires: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        """A short hash of what makes two builds differ: the package version and every CMake option."""
        text = LLAMA_CPP_PYTHON + " " + " ".join((*self.cmake_args, *COMMON_CMAKE_ARGS))
        return hashlib.sha256(text.encode()).hexdigest()[:12]

    @property
    def label(self) -> str:
        return f"{self.name} ({' '.join(self.cmake_args) or 'llama.cpp defaults'})"


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags as Linux names them (`/proc/cpuinfo`); on macOS from sysctl; else empty."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith(("flags", "Features")):
                return frozenset(line.split(":", 1)[1].split())
    except OSError:
        pass
    if platform.system() == "Darwin":
        out = _run_quiet(["sysctl", "-n", "machdep.cpu.features", "machdep.cpu.leaf7_features"])
        return frozenset(word.lower().replace(".", "_") for word in out.split())
    return frozenset()


def cpu_model() -> str:
    """The CPU's model name, for messages and the benchmark's table."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return _run_quiet(["sysctl", "-n", "machdep.cpu.brand_string"]).strip() or platform.processor() or "unknown CPU"


def _run_quiet(command: list[str]) -> str:
    try:
        return subprocess.run(command, check=False, capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return ""


def _x86_variant(name: str, options: tuple[str, ...]) -> BuildVariant:
    # Every option is set, ON or OFF: with GGML_NATIVE=OFF llama.cpp turns AVX, AVX2, FMA, F16C and BMI2 on by default,
    # so a "baseline" build that only lists what it wants is an AVX2 build (measured: the first x86-64 build was).
    args = ["-DGGML_NATIVE=OFF"] + [
        f"-DGGML_{option}={'ON' if option in options else 'OFF'}" for option, _ in X86_OPTIONS
    ]
    args += [f"-DGGML_{option}=OFF" for option in NEVER]
    requires = sorted({flag for option, flags in X86_OPTIONS if option in options for flag in flags})
    return BuildVariant(name, tuple(args), tuple(requires))


def build_variants(flags: frozenset[str] | None = None, machine: str | None = None, system: str | None = None):
    """The builds to try on this CPU, fastest first, each later one safer; never `-march=native`, never AMX."""
    flags = cpu_flags() if flags is None else flags
    machine = (machine or platform.machine()).lower()
    system = system or platform.system()
    if machine in ("x86_64", "amd64", "x86"):
        own = tuple(option for option, needed in X86_OPTIONS if all(flag in flags for flag in needed))
        if "AVX512" not in own:  # the AVX-512 extensions are only used together with AVX-512 itself
            own = tuple(option for option in own if not option.startswith("AVX512_"))
        variants = []
        if "AVX512" in own:
            variants.append(_x86_variant("avx512", own))
        if all(option in own for option in AVX2_TIER):
            avx2 = AVX2_TIER + (("AVX_VNNI",) if "AVX_VNNI" in own and not variants else ())
            variants.append(_x86_variant("avx2", avx2))
        variants.append(_x86_variant("x86-64", ("SSE42",) if "SSE42" in own else ()))
        return variants
    if system == "Darwin":  # Apple silicon: llama-cpp-python's own macOS defaults (Metal, the M-series CPU)
        return [BuildVariant("apple-default", ())]
    return [BuildVariant("native", ()), BuildVariant("portable", ("-DGGML_NATIVE=OFF",))]


def build_features(flags: frozenset[str]) -> list[str]:
    """The CPU flags a build could use, sorted: those `X86_OPTIONS` turn on, and AMX's (which no build uses)."""
    return sorted(flags & {f for _, needed in X86_OPTIONS for f in needed} | {f for f in flags if "amx" in f})


def cpu_summary() -> dict[str, str]:
    """This CPU as a benchmark records it: the model name (VMs often say only "AMD EPYC"), the family and model numbers
    that tell two CPUs of one name apart, and the vector features a build could use (`X86_OPTIONS`, AMX)."""
    info = {}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("cpu family", "model") and key.strip() not in info:
                info[key.strip()] = value.strip()
    except OSError:
        pass
    return {"model_name": cpu_model(), "family": info.get("cpu family", "?"), "model": info.get("model", "?"),
            "vector_features": " ".join(build_features(cpu_flags()))}  # fmt: skip


def cpu_fingerprint(flags: frozenset[str] | None = None) -> str:
    """Which CPU this is, as far as a build cares: its model name and the flags any variant could use."""
    relevant = build_features(cpu_flags() if flags is None else flags)
    return hashlib.sha256((cpu_model() + "|" + " ".join(relevant)).encode()).hexdigest()[:12]


# --- where builds are kept -------------------------------------------------------------------------------------


def cache_root() -> Path:
    """`AGENTIC_RAG_WHEEL_CACHE`, else `$XDG_CACHE_HOME/agentic-rag`, else `~/.cache/agentic-rag`.

    Outside the checkout on purpose: a second clone (a CI run, a workshop copy) reuses the same builds.
    """
    # Not a field of lessons.core.settings: scripts/setup.sh runs this module before the course's packages exist.
    explicit = os.environ.get("AGENTIC_RAG_WHEEL_CACHE", "").strip()
    if explicit:
        return Path(explicit).expanduser()
    return Path(os.environ.get("XDG_CACHE_HOME", "") or Path.home() / ".cache") / "agentic-rag"


def wheel_dir(variant: BuildVariant) -> Path:
    version = LLAMA_CPP_PYTHON.split("==")[1]
    return cache_root() / "llama-wheels" / f"{version}-{variant.name}-{variant.key}"


def built_wheel(variant: BuildVariant) -> Path | None:
    wheels = sorted(wheel_dir(variant).glob("llama_cpp_python-*.whl"))
    return wheels[0] if wheels else None


def _bad_file() -> Path:
    return cache_root() / "llama-wheels" / "crashed.json"


def crashed_builds(fingerprint: str | None = None) -> set[str]:
    """Keys of the builds whose self-test crashed on this CPU (recorded by `check`)."""
    try:
        return set(json.loads(_bad_file().read_text()).get(fingerprint or cpu_fingerprint(), []))
    except (OSError, ValueError):
        return set()


def mark_crashed(variant: BuildVariant, fingerprint: str | None = None) -> None:
    path = _bad_file()
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        data = {}
    fingerprint = fingerprint or cpu_fingerprint()
    data[fingerprint] = sorted({*data.get(fingerprint, []), variant.key})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2))


def chosen_variant() -> BuildVariant:
    """The fastest build for this CPU that has not crashed here."""
    bad = crashed_builds()
    for variant in build_variants():
        if variant.key not in bad:
            return variant
    raise RuntimeBuildError(_all_crashed_message())


def _all_crashed_message() -> str:
    tried = ", ".join(v.label for v in build_variants())
    return (
        f"every build of the local model runtime crashed its self-test on this CPU ({cpu_model()}); tried: {tried}. "
        "The course still runs with DeepSeek: put DEEPSEEK_API_KEY=sk-... in .env (or set AGENTIC_RAG_MODEL=deepseek). "
        f"To try the builds again after a system update, delete {_bad_file()}."
    )


# --- building and installing -----------------------------------------------------------------------------------


def build(variant: BuildVariant, python: str = sys.executable) -> Path:
    """The wheel of `variant`, compiled now unless it is already in the cache (several minutes on 2 cores)."""
    if (wheel := built_wheel(variant)) is not None:
        return wheel
    target = wheel_dir(variant)
    target.parent.mkdir(parents=True, exist_ok=True)
    log = target.parent / f"build-{variant.name}-{variant.key}.log"
    say(f"Compiling llama.cpp for this CPU: {variant.label}.")
    say(f"  This takes 3-7 minutes on 2 cores, once; the log is {log}.")
    env = {**os.environ, "CMAKE_ARGS": " ".join((*variant.cmake_args, *COMMON_CMAKE_ARGS)), "FORCE_CMAKE": "1"}
    started = time.monotonic()
    with tempfile.TemporaryDirectory(dir=target.parent) as tmp, open(log, "w") as handle:
        command = [python, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "--no-binary", "llama-cpp-python"]
        done = subprocess.run(
            [*command, LLAMA_CPP_PYTHON, "-w", tmp], check=False, stdout=handle, stderr=subprocess.STDOUT, env=env
        )
        wheels = list(Path(tmp).glob("llama_cpp_python-*.whl"))
        if done.returncode != 0 or not wheels:
            raise RuntimeBuildError(
                f"compiling {LLAMA_CPP_PYTHON} ({variant.label}) failed with exit code {done.returncode}. "
                f"Last lines of {log}:\n{_tail(log)}\nA C/C++ compiler and CMake ≥ 3.21 are needed "
                "(Debian/Ubuntu: sudo apt-get install build-essential cmake); or use DeepSeek (DEEPSEEK_API_KEY in .env) "
                "and AGENTIC_RAG_NO_LOCAL=1."
            )
        staging = Path(tmp) / "done"
        staging.mkdir()
        shutil.move(str(wheels[0]), staging / wheels[0].name)
        shutil.rmtree(target, ignore_errors=True)
        os.replace(staging, target)  # all or nothing: a half-built folder never counts as a build
    say(f"  compiled in {time.monotonic() - started:.0f} s.")
    return built_wheel(variant)  # type: ignore[return-value]


def say(message: str) -> None:
    """Progress for the person running setup, on stderr (stdout carries the `wheel` command's answer)."""
    print(message, file=sys.stderr, flush=True)


def install(wheel: Path, python: str = sys.executable) -> None:
    """Install `wheel` into the environment of `python`, replacing whatever llama-cpp-python is there."""
    command = [python, "-m", "pip", "install", "--quiet", "--no-deps", "--force-reinstall", str(wheel)]
    subprocess.run(command, check=True)


def _tail(path: Path, lines: int = 20) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


# --- the self-test ---------------------------------------------------------------------------------------------

_SELF_TEST_CODE = r"""
import faulthandler, json, sys, time
faulthandler.enable()
import llama_cpp
print("SYSTEM_INFO", llama_cpp.llama_print_system_info().decode(errors="replace"), flush=True)
llm = llama_cpp.Llama(model_path=sys.argv[1], n_ctx=1024, n_threads=int(sys.argv[2]), verbose=False, seed=0)
prompt = llm.tokenize(sys.argv[3].encode())
start = time.perf_counter()
out = llm.create_completion(sys.argv[3], max_tokens=int(sys.argv[4]), temperature=0.0)
seconds = time.perf_counter() - start
print("RESULT", json.dumps({"prompt_tokens": len(prompt), "completion_tokens": out["usage"]["completion_tokens"],
      "seconds": seconds, "text": out["choices"][0]["text"]}), flush=True)
"""


@dataclass
class SelfTest:
    """What one self-test of the installed runtime found."""

    ok: bool
    returncode: int
    seconds: float
    system_info: str = ""
    prompt_tokens: int = 0
    completion_tokens: int = 0
    eval_seconds: float = 0.0  # the evaluation alone (prompt + a few generated tokens), without loading the model
    text: str = ""
    signal_name: str = ""
    kernel_log: list[str] = field(default_factory=list)
    output_tail: str = ""

    def crash_report(self, variant: BuildVariant | None) -> str:
        """The crash named: signal, CPU, build options, what llama.cpp compiled in, the kernel's line."""
        what = f"killed by {self.signal_name}" if self.signal_name else f"exited with code {self.returncode}"
        lines = [
            f"the local model runtime {what} while evaluating a short prompt (self-test).",
            f"  CPU: {cpu_model()}",
            f"  build: {variant.label if variant else 'unknown (not installed by scripts/setup.sh)'}",
        ]
        if self.system_info:
            lines.append(f"  llama.cpp compiled in: {self.system_info}")
        lines += [f"  kernel log: {line}" for line in self.kernel_log[-3:]]
        if self.output_tail:
            lines.append("  last output:\n    " + self.output_tail.replace("\n", "\n    "))
        return "\n".join(lines)


def self_test(model_path: Path, threads: int = 2, python: str = sys.executable, timeout: float = 600) -> SelfTest:
    """Load the model in a subprocess and evaluate a short prompt; a crash comes back named, never raised."""
    started = time.monotonic()
    command = [python, "-c", _SELF_TEST_CODE, str(model_path), str(threads), SELF_TEST_PROMPT, "4"]
    before = _kernel_log_length()
    try:
        done = subprocess.run(command, check=False, capture_output=True, text=True, timeout=timeout, env=_quiet_env())
    except subprocess.TimeoutExpired:
        return SelfTest(False, -1, time.monotonic() - started, output_tail=f"no answer within {timeout:.0f} s")
    seconds = time.monotonic() - started
    info, result = "", {}
    for line in done.stdout.splitlines():
        if line.startswith("SYSTEM_INFO "):
            info = line.split(" ", 1)[1].strip()
        elif line.startswith("RESULT "):
            result = json.loads(line.split(" ", 1)[1])
    code = done.returncode
    name = signal.Signals(-code).name if code < 0 and -code in signal.Signals._value2member_map_ else ""
    ok = code == 0 and bool(result)
    tail = "" if ok else "\n".join((done.stdout + "\n" + done.stderr).strip().splitlines()[-8:])
    kernel = [] if ok else _kernel_log_since(before)
    return SelfTest(
        ok, code, seconds, info, result.get("prompt_tokens", 0), result.get("completion_tokens", 0),
        result.get("seconds", 0.0), result.get("text", ""), name, kernel, tail,
    )  # fmt: skip


def _quiet_env() -> dict[str, str]:
    return {**os.environ, "PYTHONFAULTHANDLER": "1"}


def _kernel_lines() -> list[str] | None:
    """The kernel log (`dmesg`), or None where it cannot be read (not root, no dmesg)."""
    try:
        done = subprocess.run(["dmesg"], check=False, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.splitlines() if done.returncode == 0 else None


def _kernel_log_length() -> int:
    lines = _kernel_lines()
    return len(lines) if lines is not None else 0


def _kernel_log_since(start: int) -> list[str]:
    """New kernel-log lines that speak of a crash in a user process (a trap, a segfault, a protection fault)."""
    lines = _kernel_lines() or []
    words = ("traps:", "segfault", "general protection", "invalid opcode", "libggml")
    return [line for line in lines[start:] if any(word in line for word in words)]


# --- the record in the environment -----------------------------------------------------------------------------


def record_path(prefix: str | Path | None = None) -> Path:
    """`<venv>/.llama-runtime.json`: which build is installed in this environment and what its self-test found."""
    return Path(prefix or sys.prefix) / ".llama-runtime.json"


def read_record(prefix: str | Path | None = None) -> dict | None:
    try:
        return json.loads(record_path(prefix).read_text())
    except (OSError, ValueError):
        return None


def write_record(variant: BuildVariant, test: SelfTest, prefix: str | Path | None = None) -> None:
    data = {
        "variant": variant.name,
        "key": variant.key,
        "cmake_args": [*variant.cmake_args, *COMMON_CMAKE_ARGS],
        "requires": list(variant.requires),
        "cpu": cpu_model(),
        "cpu_fingerprint": cpu_fingerprint(),
        "self_test": asdict(test),
    }
    record_path(prefix).write_text(json.dumps(data, indent=2))


def runtime_mismatch(prefix: str | Path | None = None, flags: frozenset[str] | None = None) -> str | None:
    """Why the recorded build cannot run on this CPU (features it was compiled for and this CPU lacks), or None."""
    record = read_record(prefix)
    if not record:
        return None
    flags = cpu_flags() if flags is None else flags
    if not flags:
        return None  # nothing to compare with (not Linux or macOS): the self-test and crash reports still work
    missing = [flag for flag in record.get("requires", []) if flag not in flags]
    if not missing:
        return None
    return (
        f"the local model runtime in this environment was compiled for a CPU with {', '.join(missing)}, "
        f"which this CPU ({cpu_model()}) does not have — it would stop with an illegal instruction. "
        "Fix: run `scripts/setup.sh` (or `make course`) again: it compiles the runtime for this CPU."
    )


def describe_installed(prefix: str | Path | None = None) -> str:
    """One line for crash messages: which build is installed and whether it passed its self-test on this CPU."""
    record = read_record(prefix)
    if not record:
        return "build: not recorded (llama-cpp-python was not installed by scripts/setup.sh)"
    same_cpu = record.get("cpu_fingerprint") == cpu_fingerprint()
    tested = "passed its self-test on this CPU" if same_cpu else f"self-tested on another CPU ({record.get('cpu')})"
    return f"build: {record['variant']} ({' '.join(record['cmake_args'])}), {tested}"


# --- the commands setup.sh runs --------------------------------------------------------------------------------


def command_wheel() -> int:
    """`wheel`: print the folder holding the wheel of the build to install (compiling it if needed)."""
    variant = chosen_variant()
    build(variant)
    print(wheel_dir(variant))
    return 0


def command_check(force: bool = False) -> int:
    """`check`: self-test the installed runtime; on a crash, install the next safer build and test again."""
    record = read_record()
    if not force and record and record.get("cpu_fingerprint") == cpu_fingerprint() and record["self_test"]["ok"]:
        print(f"Local model runtime: {record['variant']} build, self-tested on this CPU.")
        return 0
    model_path = _model_path()
    variants = build_variants()
    bad = crashed_builds()
    installed = _installed_variant(record, variants)
    for variant in variants:
        if variant.key in bad:
            continue
        if variant != installed:
            print(f"Installing the {variant.name} build of the local model runtime.", flush=True)
            install(build(variant))
        test = self_test(model_path)
        if test.ok:
            write_record(variant, test)
            print(
                f"Local model runtime: {variant.name} build, self-test passed on {cpu_model()} "
                f"({test.prompt_tokens}-token prompt evaluated in {test.eval_seconds:.1f} s; {test.seconds:.1f} s "
                "with loading the model).",
                flush=True,
            )
            return 0
        print("PROBLEM: " + test.crash_report(variant), file=sys.stderr, flush=True)
        if not (test.signal_name or test.returncode < 0):
            raise RuntimeBuildError(
                "the self-test failed without a crash (see above) — not a CPU problem a safer build would fix. "
                "Fix the cause shown, then run scripts/setup.sh again."
            )
        mark_crashed(variant)
        print(f"Repair: the {variant.name} build is marked as crashing on this CPU; trying a safer build.", flush=True)
        installed = None
    raise RuntimeBuildError(_all_crashed_message())


def _installed_variant(record: dict | None, variants: list[BuildVariant]) -> BuildVariant | None:
    """The variant the record names; None when nothing is recorded (whatever pip installed is replaced once)."""
    key = (record or {}).get("key")
    return next((variant for variant in variants if variant.key == key), None)


def _model_path() -> Path:
    from lessons.core.local_model import resolve_local_model

    return resolve_local_model().path


def main(argv: list[str] | None = None) -> int:
    """`python -m lessons.core.runtime_build wheel|check|variants` (check --force re-tests)."""
    args = argv if argv is not None else sys.argv[1:]
    command = args[0] if args else "variants"
    try:
        if command == "wheel":
            return command_wheel()
        if command == "check":
            return command_check(force="--force" in args)
        if command == "variants":
            bad = crashed_builds()
            for variant in build_variants():
                state = "crashed here" if variant.key in bad else ("built" if built_wheel(variant) else "not built")
                print(f"{variant.label}: {state}")
            return 0
    except RuntimeBuildError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    print("usage: python -m lessons.core.runtime_build wheel|check [--force]|variants", file=sys.stderr)
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
