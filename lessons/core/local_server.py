"""One local OpenAI-compatible llama.cpp server, shared by every notebook and test session.

Introduced in notebook 00 (setup). `ensure_server()` starts llama-cpp-python's server (through
`lessons.core.llama_server`) on 127.0.0.1 the first time a chat model is needed, waits until it answers, and records it in a small
JSON state file; every later kernel or test process finds it there and reuses it. `stop_server()`
(or `python -m lessons.core.local_server_cli stop`) ends it. `AGENTIC_RAG_SERVER_URL` points the course at a
server someone else runs (a workshop's shared machine) instead.

The server runs with OpenMP's own wait policy (it inherits your environment): the faster choice on an idle
machine, where a notebook's chat-model calls run while its kernel waits. On a machine busy with other work, export
`OMP_WAIT_POLICY=PASSIVE` before the server starts (`python -m lessons.core.local_server_cli stop` first: a running
server keeps its policy); `benchmarks/bench_local_model.py --wait-policy` measures both on your machine.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path

from lessons.core import runtime_build
from lessons.core.i18n import t
from lessons.core.local_model import resolve_local_model
from lessons.core.settings import get_settings

HOST = "127.0.0.1"


class ServerError(RuntimeError):
    """The local model server could not be started or reached; the message says why and what to do."""


@dataclass(frozen=True)
class ServerInfo:
    url: str  # base URL without /v1
    alias: str  # the model name the server answers to
    pid: int | None  # None for an external server
    model_path: str | None = None
    log_path: str | None = None

    @property
    def api_base(self) -> str:
        return self.url + "/v1"


def _state_dir() -> Path:
    path = get_settings().cache_dir / "llm-server"
    path.mkdir(parents=True, exist_ok=True)
    return path


def server_log_path() -> Path:
    """Where the local server started by this course writes its log (the llama.cpp timings of every call)."""
    return _state_dir() / "server.log"


def _state_file() -> Path:
    return _state_dir() / "state.json"


def _read_state() -> ServerInfo | None:
    try:
        return ServerInfo(**json.loads(_state_file().read_text()))
    except (OSError, ValueError, TypeError):
        return None


def _pid_alive(pid: int | None) -> bool:
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    # A zombie child still "exists": check its state where /proc is available.
    with contextlib.suppress(OSError):
        return Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0] != "Z"
    return True


def served_models(url: str, timeout: float = 2.0) -> list[str] | None:
    """Model ids the OpenAI-compatible server at `url` answers to, or None when it does not answer."""
    try:
        with urllib.request.urlopen(f"{url}/v1/models", timeout=timeout) as response:
            payload = json.load(response)
    except (OSError, ValueError):
        return None
    return [entry.get("id", "") for entry in payload.get("data", [])]


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((HOST, 0))
        return sock.getsockname()[1]


def port_in_use(port: int) -> bool:
    """True when something listens on the port (a socket of a closed server lingering in TIME_WAIT does not count)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((HOST, port))
        except OSError:
            return True
    return False


def server_command(model_path: Path, alias: str, port: int) -> list[str]:
    """The command line that starts llama.cpp's OpenAI-compatible server, with the course's two changes
    (`lessons.core.llama_server`: logits of the last prompt token only, a prompt-prefix cache across calls)."""
    settings = get_settings()
    return [
        # faulthandler: a crash in llama.cpp (a signal) leaves "Fatal Python error: <signal>" in the log (crash_report)
        sys.executable, "-X", "faulthandler", "-m", "lessons.core.llama_server",
        "--model", str(model_path),
        "--model_alias", alias,
        "--host", HOST,
        "--port", str(port),
        "--n_threads", str(settings.threads),
        "--n_ctx", str(settings.n_ctx),
    ] + ([  # keep model states to reuse prompt prefixes across calls of different kinds (lessons.core.llama_server)
        "--cache", "true", "--cache_type", "ram", "--cache_size", str(settings.prompt_cache_mb << 20),
    ] if settings.prompt_cache_mb else [])  # fmt: skip


def _check_runtime_installed() -> None:
    try:
        import llama_cpp.server  # noqa: F401
    except ImportError as error:
        raise ServerError(
            t(
                "the local model runtime is not installed ({error}). Run scripts/setup.sh (or `make course`): it "
                "compiles llama-cpp-python for this CPU (3-7 minutes on 2 cores, once) and checks that it runs; "
                "or set DEEPSEEK_API_KEY in .env to use DeepSeek instead.",
                error=error,
            )
        ) from None


@contextlib.contextmanager
def _lock():
    with open(_state_dir() / "lock", "w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def ensure_server(timeout: float = 180.0) -> ServerInfo:
    """Return a healthy local server, starting one if none is running (safe across processes)."""
    settings = get_settings()
    if settings.server_url:
        models = served_models(settings.server_url, timeout=10)
        if models is None:
            raise ServerError(
                t(
                    "AGENTIC_RAG_SERVER_URL={url} does not answer at /v1/models — "
                    "check the address, or unset it to start a local server.",
                    url=settings.server_url,
                )
            )
        return ServerInfo(url=settings.server_url, alias=models[0] if models else "local", pid=None)

    model = resolve_local_model()
    with _lock():
        _register_client()
        state = _read_state()
        if state and _pid_alive(state.pid):
            if state.alias == model.alias and _answers_within(state, BUSY_GRACE_SECONDS):
                return state
            _terminate(state.pid)  # another model, or hung for the whole grace period: replace it
        return _start(model.path, model.alias, timeout)


BUSY_GRACE_SECONDS = 120.0  # how long a running server may take to answer /v1/models before it counts as hung


def _answers_within(state: ServerInfo, grace: float) -> bool:
    """Whether the running server is fit to use: it answers /v1/models, or its process is working.

    A server busy with another process's long prompt on two cores can take minutes to answer: llama.cpp's server
    answers /v1/models only between completions. Replacing it then killed that process's request mid-way ("could
    not reach the local model server"), and waiting for a gap held the shared lock, so every other kernel — even
    one whose answers were all in the LLM cache — waited behind it for minutes. A server whose process keeps using
    CPU is working for someone: it is used at once, and this process's requests queue at the server like the
    others'. Only a server silent *and idle* for the whole grace period, or one whose process has died, is replaced.
    """
    deadline = time.monotonic() + grace
    cpu, probe = _cpu_seconds(state.pid), PROBE_SECONDS  # a short first probe, then longer ones for a slow idle server
    while True:
        if served_models(state.url, timeout=min(probe, max(1.0, deadline - time.monotonic()))) is not None:
            return True
        probe = 10.0
        if not _pid_alive(state.pid):
            return False
        now_cpu = _cpu_seconds(state.pid)
        if now_cpu is not None and cpu is not None and now_cpu > cpu + 0.5:
            return True  # working, not hung: its answer to this process comes in its turn
        cpu = now_cpu
        if time.monotonic() >= deadline:
            return False
        time.sleep(1.0)


PROBE_SECONDS = 3.0  # how long the first /v1/models probe waits before the server's CPU time is read


def _cpu_seconds(pid: int | None) -> float | None:
    """CPU seconds the process has used so far, or None when it cannot be read."""
    try:
        import psutil
    except ImportError:  # no psutil: fall back to the plain grace period
        return None
    try:
        times = psutil.Process(pid).cpu_times()
    except psutil.Error:  # no such process, no permission: fall back to the plain grace period
        return None
    return times.user + times.system


def _clients_dir() -> Path:
    path = _state_dir() / "clients"
    path.mkdir(exist_ok=True)
    return path


def _register_client() -> None:
    """Record this process as a user of the shared server (a kernel, a test session, a script)."""
    (_clients_dir() / str(os.getpid())).touch()


def other_clients() -> list[int]:
    """Live processes other than this one that use the shared server; stale records are removed."""
    alive = []
    for record in _clients_dir().iterdir():
        pid = int(record.name) if record.name.isdigit() else 0
        if pid == os.getpid():
            continue
        if _pid_alive(pid):
            alive.append(pid)
        else:
            record.unlink(missing_ok=True)
    return alive


def _start(model_path: Path, alias: str, timeout: float) -> ServerInfo:
    _check_runtime_installed()
    if mismatch := runtime_build.runtime_mismatch():
        raise ServerError(mismatch)
    port = _choose_port()
    log_path = server_log_path()
    with open(log_path, "w") as log:
        process = subprocess.Popen(
            server_command(model_path, alias, port),
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            # the environment is inherited: OpenMP's default wait policy unless you set one (module docstring)
            start_new_session=True,  # outlives the kernel that started it; shared by later sessions
        )
    info = ServerInfo(f"http://{HOST}:{port}", alias, process.pid, str(model_path), str(log_path))
    _wait_healthy(process, info, log_path, timeout)
    _state_file().write_text(json.dumps(asdict(info), indent=2))
    (_state_dir() / "last_port").write_text(str(port))
    return info


def _choose_port() -> int:
    """AGENTIC_RAG_PORT if set; else the port the last server used, when free (so open clients reconnect)."""
    port = get_settings().port
    if port is None:
        last = _last_port()
        return last if last and not port_in_use(last) else free_port()
    if port_in_use(port):
        raise ServerError(
            t(
                "port {port} (AGENTIC_RAG_PORT) is already in use on {host} — stop what uses it "
                "(`lsof -i :{port}`), pick another port, or unset AGENTIC_RAG_PORT to let the course choose a free one.",
                port=port,
                host=HOST,
            )
        )
    return port


def _last_port() -> int | None:
    try:
        return int((_state_dir() / "last_port").read_text())
    except (OSError, ValueError):
        return None


def _wait_healthy(process: subprocess.Popen, info: ServerInfo, log_path: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        code = process.poll()
        if code is not None and code < 0:
            raise ServerError(_crash_message(process.pid, _signal_name(-code), log_path))
        if code is not None:
            raise ServerError(
                t(
                    "the local model server exited with code {code} while starting. Last lines of {log}:\n"
                    "{tail}\nFix the cause above (not enough memory? a broken GGUF in AGENTIC_RAG_GGUF?) "
                    "and run again.",
                    code=code,
                    log=log_path,
                    tail=_tail(log_path),
                )
            )
        if served_models(info.url, timeout=1.0) is not None:
            return
        time.sleep(0.25)
    _terminate(process.pid)
    raise ServerError(
        t(
            "the local model server did not become healthy within {seconds} s (pid {pid}, {url}); "
            "it was stopped. Last lines of {log}:\n{tail}\n"
            "On a busy or slow machine, try again; to see the error yourself run: "
            "python -m lessons.core.local_server_cli start",
            seconds=f"{timeout:.0f}",
            pid=process.pid,
            url=info.url,
            log=log_path,
            tail=_tail(log_path),
        )
    )


def _terminate(pid: int | None, grace: float = 10.0) -> None:
    if not _pid_alive(pid):
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline and _pid_alive(pid):
        with contextlib.suppress(ChildProcessError):
            os.waitpid(pid, os.WNOHANG)
        time.sleep(0.1)
    if _pid_alive(pid):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


FATAL_LINE = "Fatal Python error: "


def _signal_name(number: int) -> str:
    try:
        return f"{signal.Signals(number).name} ({signal.strsignal(number)})"
    except ValueError:
        return f"signal {number}"


def crash_report() -> str | None:
    """Why the course's local server is gone, when it is: a crash named from its log, or a plain stop; else None.

    The server runs under Python's faulthandler, so a crash inside llama.cpp (an illegal instruction, a general
    protection fault) writes "Fatal Python error: Segmentation fault" and a traceback to its log before it dies.
    """
    if get_settings().server_url:
        return None
    state = _read_state()
    if state is None or _pid_alive(state.pid):
        return None
    log_path = Path(state.log_path) if state.log_path else server_log_path()
    fatal = [line for line in _tail(log_path, 200).splitlines() if line.startswith(FATAL_LINE)]
    if fatal:
        return _crash_message(state.pid, fatal[-1][len(FATAL_LINE) :].strip(), log_path)
    return t(
        "the local model server (pid {pid}) has stopped without a crash in its log — killed by another program "
        "or by the system (out of memory? see `dmesg`). The next call starts a new one; "
        "last lines of {log}:\n{tail}",
        pid=state.pid,
        log=log_path,
        tail=_tail(log_path, 5),
    )


def _crash_message(pid: int | None, what: str, log_path: Path) -> str:
    return t(
        "the local model server (pid {pid}) crashed: {what}. This is llama.cpp failing on this CPU, not your code.\n"
        "  CPU: {cpu}\n  {build}\n"
        "  last lines of {log}:\n{tail}\n"
        "Fix: run `python -m lessons.core.runtime_build check --force` (or scripts/setup.sh): it self-tests the "
        "runtime and installs a safer build when this one crashes; then run the cell again.",
        pid=pid,
        what=what,
        cpu=runtime_build.cpu_model(),
        build=runtime_build.describe_installed(),
        log=log_path,
        tail=_tail(log_path, 8),
    )


def stop_server() -> bool:
    """Stop the shared local server, whoever uses it; True when one was stopped."""
    with _lock():
        state = _read_state()
        _state_file().unlink(missing_ok=True)
        for record in _clients_dir().iterdir():
            record.unlink(missing_ok=True)
        if state is None or not _pid_alive(state.pid):
            return False
        _terminate(state.pid)
        return True


def release_server() -> bool:
    """This process is done with the server: stop it unless another live process still uses it."""
    (_clients_dir() / str(os.getpid())).unlink(missing_ok=True)
    if other_clients():
        return False
    return stop_server()


def server_status() -> str:
    """One line: whether a local server is running, where, and which model."""
    settings = get_settings()
    if settings.server_url:
        models = served_models(settings.server_url)
        if models:
            return t("external server {url}: up, models {models}", url=settings.server_url, models=", ".join(models))
        return t("external server {url}: DOWN", url=settings.server_url)
    state = _read_state()
    if state is None or not _pid_alive(state.pid):
        return t("no local server running")
    health = t("healthy") if served_models(state.url) is not None else t("NOT answering")
    return t("local server pid {pid} at {url}, model {model}: {health}", pid=state.pid, url=state.url,
             model=state.alias, health=health)  # fmt: skip
