"""How many prompt tokens the local server evaluates in notebooks 04, 05 and 07, and how many a "shared context first"
prompt order would (the retrieved documents ahead of each call's own instructions, so that the calls over the same
documents — answerability judge, research agent, verifier — share them as a prompt prefix).

    python benchmarks/bench_prompt_prefix.py capture 04 05 07   # run the notebooks, keep every chat request
    python benchmarks/bench_prompt_prefix.py analyse            # offline: evaluated today / reordered

`capture` runs the solutions/ notebooks at their default size in course order, one cache folder for all of them (as
`bench_notebooks.py` does), with its own local server and a logging proxy in front of it (AGENTIC_RAG_SERVER_URL points
the kernels at the proxy). Two records: every chat call's request body as the kernel built it, before LangChain's LLM
cache answers or not (prompt-prefix-calls-<notebook>.jsonl, through a sitecustomize hook on the kernels' PYTHONPATH),
and every request the server received with its reply, next to the server's log (prompt-prefix-requests-<run>.jsonl,
prompt-prefix-server-<run>.log). These are large and not committed. With AGENTIC_RAG_LLM_CACHE_FILE set to a copy of
an earlier cache, answers already known come from it (the calls are recorded all the same): a capture costs only the
calls nobody has made yet; the first Run All is rebuilt offline, where a request seen earlier in the run is one the
LLM cache answers.

`analyse` turns each request into the tokens the server evaluates (the model's own tokenizer, `Llama(vocab_only=
True)`, and the GGUF's chat template as the server applies it, tools included: the template writes the tool schemas
into the system turn, ahead of the user's message) and replays llama-cpp-python's RAM prompt cache (`--cache true
--cache_type ram`, `replay`). The replay is first checked against the server: the requests it received, replayed,
against the prompt tokens its log reports for each call. Then each notebook's first-Run-All calls (from an empty RAM
cache) are replayed as they are and reordered (`shared_first`): every call kind with documents, all but the judge
(its prompt is fixed: lessons/agents/answerability.py), each set of kinds, the documents at the head of the call's own
message instead, and one tools block for every call. Generated tokens are left out of the replayed states' sizes
(a few percent). Writes benchmarks/results/prompt-prefix.json: per notebook and per call kind (the tool a call is
forced to use; "P(yes) read" for one-token log-probability reads).
"""

from __future__ import annotations

import itertools
import json
import os
import re
import sys
import threading
from collections import OrderedDict, defaultdict
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from benchmarks.common import RESULTS

PROXY_PORT = int(os.environ.get("BENCH_PROXY_PORT", "8823"))


# ---------------------------------------------------------------- capture


def _proxy(upstream: str, out, lock: threading.Lock, notebook: list[str]) -> ThreadingHTTPServer:
    import httpx

    client = httpx.Client(base_url=upstream, timeout=None)
    counter = [0]

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _forward(self, method: str) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)) if method == "POST" else None
            headers = {k: v for k, v in self.headers.items() if k.lower() not in {"host", "content-length"}}
            reply = client.request(method, self.path, content=body, headers=headers)
            if method == "POST" and self.path.rstrip("/").endswith("chat/completions"):
                with lock:
                    counter[0] += 1
                    record = {"seq": counter[0], "notebook": notebook[0], "request": json.loads(body)}
                    try:
                        record["reply"] = reply.json()
                    except ValueError:
                        record["reply_text"] = reply.text
                    out.write(json.dumps(record, ensure_ascii=False) + "\n")
                    out.flush()
            self.send_response(reply.status_code)
            for key, value in reply.headers.items():
                if key.lower() not in {"content-length", "transfer-encoding", "content-encoding", "connection"}:
                    self.send_header(key, value)
            self.send_header("Content-Length", str(len(reply.content)))
            self.end_headers()
            self.wfile.write(reply.content)

        def do_GET(self):
            self._forward("GET")

        def do_POST(self):
            self._forward("POST")

    server = ThreadingHTTPServer(("127.0.0.1", PROXY_PORT), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


# Loaded by the notebooks' kernels (a sitecustomize module on their PYTHONPATH): every chat call's request body, as the
# OpenAI client would send it, before LangChain's LLM cache is asked, so answers the cache already holds count too.
_HOOK = """
import os
if os.environ.get("PROMPT_PREFIX_CALL_LOG"):
    import json, threading
    from langchain_core.language_models import chat_models as _cm
    _original, _lock = _cm.BaseChatModel._generate_with_cache, threading.Lock()
    def _logged(self, messages, stop=None, run_manager=None, **kwargs):
        try:
            record = {"request": self._get_request_payload(messages, stop=stop, **kwargs)}
            record["request"].pop("model", None)
        except Exception as error:
            record = {"error": repr(error)}
        with _lock, open(os.environ["PROMPT_PREFIX_CALL_LOG"], "a") as out:
            out.write(json.dumps(record, ensure_ascii=False, default=str) + "\\n")
        return _original(self, messages, stop=stop, run_manager=run_manager, **kwargs)
    _cm.BaseChatModel._generate_with_cache = _logged
"""


def capture(names: list[str]) -> None:
    import tempfile

    from benchmarks.bench_notebooks import select_notebooks, server_log_since, server_log_size, server_tokens
    from tools.notebook_runner import execute_notebook

    os.environ.setdefault("AGENTIC_RAG_CACHE_DIR", tempfile.mkdtemp(prefix="prompt-prefix-"))
    os.environ.pop("AGENTIC_RAG_SERVER_URL", None)
    hook = Path(tempfile.mkdtemp(prefix="prompt-prefix-hook-"))
    (hook / "sitecustomize.py").write_text(_HOOK)
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(hook), os.environ.get("PYTHONPATH")]))
    from lessons.core.local_server import ensure_server, server_log_path, stop_server

    info = ensure_server()
    lock, notebook = threading.Lock(), [""]
    rows = []
    run = "-".join(names)  # one capture's requests and server log, compared by `check_against_log`
    requests, server_log = RESULTS / f"prompt-prefix-requests-{run}.jsonl", RESULTS / f"prompt-prefix-server-{run}.log"
    with open(requests, "w") as out:
        proxy = _proxy(info.url, out, lock, notebook)
        os.environ["AGENTIC_RAG_SERVER_URL"] = f"http://127.0.0.1:{PROXY_PORT}"  # the server's base, without /v1
        try:
            for path in select_notebooks(names):
                notebook[0] = path.stem
                calls = RESULTS / f"prompt-prefix-calls-{path.stem}.jsonl"
                calls.unlink(missing_ok=True)
                os.environ["PROMPT_PREFIX_CALL_LOG"] = str(calls)
                with lock:
                    out.write(json.dumps({"notebook_start": path.stem}) + "\n")
                    out.flush()
                offset = server_log_size()
                done = execute_notebook(path, out_dir=Path(tempfile.mkdtemp(prefix="prompt-prefix-nb-")))
                row = {"notebook": path.stem, "passed": done.passed, "llm_calls": done.llm_calls,
                       "cached_calls": done.cached_calls, "error": done.error,
                       **server_tokens(server_log_since(offset)), "load_average": os.getloadavg()[0]}  # fmt: skip
                rows.append(row)
                print(json.dumps(row), flush=True)
        finally:
            proxy.shutdown()
            server_log.write_text(server_log_path().read_text(errors="replace"))
            os.environ.pop("AGENTIC_RAG_SERVER_URL", None)
            stop_server()
    (RESULTS / f"prompt-prefix-capture-{run}.json").write_text(json.dumps(rows, indent=2) + "\n")


# ---------------------------------------------------------------- analyse

STATE_BYTES_PER_TOKEN = (
    28_672  # a saved state of Qwen2.5-Coder-1.5B: 28 layers x K,V x 256 x f16 per token (server log)
)
CACHE_BYTES = 1 << 30  # the course's --cache_size (AGENTIC_RAG_PROMPT_CACHE_MB = 1024)
JUDGE = "Evidence"  # the answerability judge's tool (lessons/agents/answerability.py): its prompt is not to change
SHARED_LINE = "You answer questions about the documents below."  # the common system line of the reordered prompts
_BLOCK = re.compile(r"<document[ >].*</document>", re.DOTALL)


class Prompts:
    """Request bodies turned into the tokens the server evaluates: the GGUF's chat template (the server's
    `chat_template.default`, tools included) and the model's tokenizer."""

    def __init__(self):
        from llama_cpp import Llama
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        from lessons.core.local_model import resolve_local_model

        self.llama = Llama(str(resolve_local_model().path), vocab_only=True, verbose=False)
        eos = self.llama._model.token_get_text(self.llama.token_eos())
        bos = self.llama._model.token_get_text(self.llama.token_bos())
        self.format = Jinja2ChatFormatter(self.llama.metadata["tokenizer.chat_template"], eos, bos)

    def tokens(self, request: dict) -> list[int]:
        prompt = self.format(messages=request["messages"], tools=request.get("tools"),
                             tool_choice=request.get("tool_choice")).prompt  # fmt: skip
        return self.llama.tokenize(prompt.encode(), add_bos=False, special=True)


def call_kind(request: dict) -> str:
    """The tool a call is forced to use; `P(yes)` for a one-token log-probability read; else its first words."""
    choice = request.get("tool_choice")
    if isinstance(choice, dict):
        return choice.get("function", {}).get("name", "?")
    if request.get("logprobs"):
        return "P(yes) read"
    if request.get("tools"):
        return "tool loop"
    first = next((m.get("content") or "" for m in request["messages"] if m.get("role") in {"system", "user"}), "")
    return " ".join(str(first).split()[:4])


def documents_block(request: dict) -> str | None:
    """The retrieved documents of a call (its first to last `<document>` block), when its last user message has any."""
    for message in reversed(request["messages"]):
        if message.get("role") == "user" and isinstance(message.get("content"), str):
            found = _BLOCK.search(message["content"])
            return found.group(0) if found else None
    return None


def shared_first(request: dict, where: str = "system") -> dict:
    """The same call with its documents ahead of its own instructions. `where="system"`: a system message holding a
    common line and the documents, which the chat template writes before the tools, so calls of every kind over the
    same documents share them; `where="user"`: at the start of the call's own message (after the tools, so only calls
    of the same kind share them). The documents' old place keeps a one-line pointer. Calls without documents (or
    with a system message of their own) are unchanged."""
    block = documents_block(request)
    if block is None or any(m.get("role") == "system" for m in request["messages"]):
        return request
    messages = [{"role": "system", "content": f"{SHARED_LINE}\n\n{block}"}] if where == "system" else []
    for message in request["messages"]:
        if message.get("role") == "user" and isinstance(message.get("content"), str) and block in message["content"]:
            content = message["content"].replace(block, "(the documents above)")
            message = {**message, "content": content if where == "system" else f"{block}\n\n{content}"}
        messages.append(message)
    return {**request, "messages": messages}


def _common(a, b) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def replay(prompts: list[list[int]], generated: list[int] | None = None, capacity: float | None = None) -> list[int]:
    """Prompt tokens the server evaluates for each call, replaying llama-cpp-python's RAM prompt cache: the saved state
    sharing the longest prefix with the prompt is restored when it shares more than the live one, the live state's
    common prefix is kept (all but the last prompt token at most), the rest is evaluated; after the call its state
    (prompt + generated tokens) is saved, and the least recently used states leave past CACHE_BYTES."""
    cache: OrderedDict[tuple, int] = OrderedDict()
    live: tuple = ()
    evaluated = []
    for i, prompt in enumerate(prompts):
        if cache:
            best = max(cache, key=lambda key: _common(key, prompt))
            if _common(best, prompt) > 0:
                cache.move_to_end(best)
                if _common(best, prompt) > _common(live, prompt):
                    live = best
        keep = _common(live, prompt)
        if keep == len(prompt):
            keep -= 1
        evaluated.append(len(prompt) - keep)
        extra = generated[i] if generated else 0
        live = tuple(prompt) + (-1,) * extra  # generated tokens: never part of a later prompt's prefix here
        cache.pop(live, None)
        cache[live] = len(live) * STATE_BYTES_PER_TOKEN
        while sum(cache.values()) > (CACHE_BYTES if capacity is None else capacity) and cache:
            cache.popitem(last=False)
    return evaluated


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def check_against_log(prompts: Prompts, requests: Path) -> dict:
    """The replay against the server itself: the requests the server received in a capture run (in order), replayed,
    against the prompt tokens its log says it evaluated for each (`bench_notebooks.server_calls`)."""
    from benchmarks.bench_notebooks import server_calls

    received = [r for r in _records(requests) if "request" in r]
    log = requests.with_name(requests.name.replace("-requests-", "-server-")).with_suffix(".log")
    logged = [int(call["prompt"]) for call in server_calls(log.read_text(errors="replace"))]
    tokens = [prompts.tokens(r["request"]) for r in received]
    generated = [int((r.get("reply") or {}).get("usage", {}).get("completion_tokens", 0)) for r in received]
    replayed = replay(tokens, generated)
    n = min(len(replayed), len(logged))
    same = sum(1 for a, b in zip(replayed, logged) if a == b)
    return {"server calls": len(logged), "requests captured": len(received), "replayed": sum(replayed[:n]),
            "server log": sum(logged[:n]), "calls equal": same, "calls compared": n}  # fmt: skip


def analyse() -> dict:
    prompts = Prompts()
    report = {
        "check against the server log": {
            path.stem.removeprefix("prompt-prefix-requests-"): check_against_log(prompts, path)
            for path in sorted(RESULTS.glob("prompt-prefix-requests-*.jsonl"))
            if Path(str(path).replace("-requests-", "-server-")).with_suffix(".log").exists()  # not while capturing
        },
        "notebooks": {},
    }
    seen: set[str] = set()
    for path in sorted(RESULTS.glob("prompt-prefix-calls-*.jsonl")):
        notebook = path.stem.removeprefix("prompt-prefix-calls-")
        sent, repeats = [], 0
        for record in _records(path):
            if "request" not in record:  # a scripted model of the notebook (lessons.core.fakes): no server call
                continue
            key = json.dumps(record["request"], sort_keys=True)
            if key in seen:  # the LLM cache answers it in a first Run All: the server never sees it
                repeats += 1
                continue
            seen.add(key)
            sent.append(record["request"])
        with_documents = sorted({call_kind(r) for r in sent if documents_block(r) is not None})
        reordered = {  # which call kinds get their documents first
            "today": set(),
            "shared context first": set(with_documents),
            "shared context first, judge unchanged": set(with_documents) - {JUDGE},
            "documents first in each call's own message, judge unchanged": set(with_documents) - {JUDGE},
            "one tools block for all, documents first in each call's own message, judge unchanged": set(with_documents)
            - {JUDGE},
            **{  # every other set of kinds: which ones a change would have to reorder together
                "only " + " + ".join(kinds): set(kinds)
                for n in range(1, len(with_documents))
                for kinds in itertools.combinations(with_documents, n)
            },
        }
        rows: dict[str, dict] = defaultdict(lambda: defaultdict(int))
        totals = {}
        for name, kinds in reordered.items():
            where = "user" if "own message" in name else "system"
            requests = [shared_first(r, where) if call_kind(r) in kinds else r for r in sent]
            if name.startswith("one tools block"):  # every call but the judge's offers every schema, forced to its own
                every = list(
                    {
                        t["function"]["name"]: t for r in sent if call_kind(r) != JUDGE for t in r.get("tools") or []
                    }.values()
                )
                requests = [{**r, "tools": every} if r.get("tools") and call_kind(r) != JUDGE else r for r in requests]
            tokens = [prompts.tokens(r) for r in requests]
            evaluated = replay(tokens)
            totals[name] = sum(evaluated)
            if name == "today":  # whether a larger --cache_size would keep more prefixes
                totals["today, with no limit on the RAM cache"] = sum(replay(tokens, capacity=float("inf")))
            if name.startswith("only ") or "own message" in name:
                continue
            for request, prompt, count in zip(sent, tokens, evaluated):
                row = rows[call_kind(request)]
                row[name] += count
                if name == "today":
                    row["calls"] += 1
                    row["prompt tokens"] += len(prompt)
                    row["with documents"] += documents_block(request) is not None
        best = min((name for name in reordered if JUDGE not in reordered[name]), key=totals.get)
        report["notebooks"][notebook] = {
            "calls sent": len(sent), "answered by the LLM cache": repeats, "evaluated": totals,
            "best without the judge": {"reordered": best, "evaluated": totals[best], "saved": totals["today"] - totals[best]},
            "by call kind": {kind: dict(row) for kind, row in sorted(rows.items(), key=lambda kv: -kv[1]["today"])},
        }  # fmt: skip
    out = RESULTS / os.environ.get("BENCH_PROMPT_PREFIX_NAME", "prompt-prefix.json")
    out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n")
    print(json.dumps(report, indent=2, ensure_ascii=False))
    return report


def main(argv: list[str]) -> None:
    if argv and argv[0] == "capture":
        capture(argv[1:])
    elif argv[:1] == ["analyse"] or (not argv and any(RESULTS.glob("prompt-prefix-calls-*.jsonl"))):
        analyse()
    else:
        print(__doc__)  # nothing captured yet (`python -m benchmarks` runs every script without arguments)


if __name__ == "__main__":
    main(sys.argv[1:])
