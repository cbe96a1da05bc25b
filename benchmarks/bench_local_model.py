"""Local chat model speed: prompt and generation tokens/s through the server vs llama.cpp in-process.

Run on an otherwise idle machine: another busy process on a 2-core machine changes everything.
`--builds` compares the runtime builds `lessons.core.runtime_build` can install on this CPU (and llama.cpp's
default `-march=native` build, which the course never installs), each compiled once into the wheel cache and
measured in-process from its own folder; a build that crashes is recorded with its signal.
`--name NAME` writes the default measurement to NAME.json instead of local_model.json (another machine's figures).
`--wait-policy` instead compares OpenMP's default wait policy with PASSIVE for the server, with 0, 1
and 2 busy cores beside it (stop the course's own server first: `python -m lessons.core.local_server_cli stop`).
`--grammar` measures structured calls (forced tool calls with the course's own schemas, as the server makes them)
in-process, with llama-cpp-python's stock sampler and with the course's grammar-first check
(`lessons.core.llama_server.GrammarFirstCheck`), taking turns: seconds per call, seconds spent sampling, and whether
both produced the same arguments.
"""

import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from benchmarks.common import save
from lessons.core.local_model import resolve_local_model
from lessons.core.settings import get_settings

LONG_PROMPT = "Summarise in one word. " + " ".join(
    f"Atlas Server {i} replicates shard {i % 5} and compacts its segments every night." for i in range(60)
)
GEN_PROMPT = "Write a 400-word story about a lighthouse keeper who learns to use a search engine."
GEN_TOKENS = 128


def measure(complete) -> dict:
    """complete(prompt, max_tokens) -> (prompt_tokens, completion_tokens); returns tokens/s."""
    complete("warm up", 4)
    run = f"Run {time.time_ns()}. "  # a first word no earlier run had: a running server's prompt cache cannot serve it
    start = time.perf_counter()
    prompt_tokens, _ = complete(run + LONG_PROMPT, 1)
    prompt_s = time.perf_counter() - start
    start = time.perf_counter()
    short_prompt_tokens, generated = complete(run + GEN_PROMPT, GEN_TOKENS)
    gen_s = time.perf_counter() - start - short_prompt_tokens / (prompt_tokens / prompt_s)
    return {
        "prompt_tokens": prompt_tokens,
        "prompt_tok_per_s": round(prompt_tokens / prompt_s, 1),
        "generated_tokens": generated,
        "generation_tok_per_s": round(generated / gen_s, 1),
    }


def via_server() -> dict:
    from lessons.core.models import get_chat_model

    llm = get_chat_model(cache=False)

    def complete(prompt, max_tokens):
        usage = llm.invoke(prompt, max_tokens=max_tokens).usage_metadata
        return usage["input_tokens"], usage["output_tokens"]

    return measure(complete)


def in_process() -> dict:
    from llama_cpp import Llama

    settings = get_settings()
    llm = Llama(
        str(resolve_local_model().path), n_threads=settings.threads, n_ctx=settings.n_ctx, verbose=False, seed=42
    )

    def complete(prompt, max_tokens):
        usage = llm.create_chat_completion([{"role": "user", "content": prompt}], max_tokens=max_tokens, temperature=0)[
            "usage"
        ]
        return usage["prompt_tokens"], usage["completion_tokens"]

    try:
        return measure(complete)
    finally:
        llm.close()  # frees the model's memory before the next measurement


def wait_policies(busy_cores: int = 0) -> dict:
    """A fresh server per OpenMP wait policy (the default, PASSIVE), `busy_cores` busy loops beside it:
    prompt tokens/s over three different ~1,100-token prompts and generated tokens/s over 96 tokens."""
    from lessons.core.local_server import HOST, free_port, served_models, server_command

    model = resolve_local_model()
    port = free_port()
    url = f"http://{HOST}:{port}"

    def post(prompt: str, max_tokens: int) -> tuple[dict, float]:
        body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": max_tokens, "temperature": 0}
        request = urllib.request.Request(
            f"{url}/v1/chat/completions", json.dumps(body).encode(), {"Content-Type": "application/json"}
        )
        start = time.perf_counter()
        with urllib.request.urlopen(request, timeout=600) as response:
            return json.load(response)["usage"], time.perf_counter() - start

    results = {}
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy_cores)]
    try:
        for policy in ("default", "PASSIVE"):
            env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
            if policy != "default":
                env["OMP_WAIT_POLICY"] = policy
            command = server_command(model.path, model.alias, port)  # the course's own server, as it starts it
            server = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            try:
                for _ in range(120):
                    if served_models(url) is not None:
                        break
                    time.sleep(1)
                post("warm up", 4)
                rates = []
                for i in range(3):  # a different first word each time: no prefix of an earlier prompt is reused
                    usage, seconds = post(f"Variant {i}. " + LONG_PROMPT, 1)
                    rates.append(round(usage["prompt_tokens"] / seconds, 1))
                usage, seconds = post(GEN_PROMPT, 96)
                results[policy] = {
                    "prompt_tok_per_s": rates,
                    "generation_tok_per_s_incl_prompt": round(usage["completion_tokens"] / seconds, 1),
                }
            finally:
                server.terminate()
                server.wait()
    finally:
        for process in busy:
            process.kill()
    return results


def builds(repeat: int = 3) -> list[dict]:
    """Each runtime build for this CPU, plus llama.cpp's native default for comparison: tokens/s in-process.

    The builds take turns, `repeat` rounds, and each keeps its best run: on a machine where something else runs
    now and then, the best of interleaved runs is the fairest comparison a 2-core machine allows.
    """
    from lessons.core import runtime_build as rb

    # "native": llama.cpp's default (-march=native), the build that crashed on an AMX VM; never installed by the course
    variants = [*rb.build_variants(), rb.BuildVariant("native", ())]
    targets = {}
    for variant in variants:
        wheel = rb.build(variant)
        targets[variant] = rb.cache_root() / "bench" / variant.key
        if not (targets[variant] / "llama_cpp").is_dir():
            subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                            str(targets[variant]), str(wheel)], check=True)  # fmt: skip
    runs: dict = {variant: [] for variant in variants}
    for _ in range(repeat):
        for variant in variants:
            code = (
                f"import sys, json; sys.path.insert(0, {str(targets[variant])!r}); "
                "from benchmarks.bench_local_model import in_process; print('RESULT', json.dumps(in_process()))"
            )
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False,
                                  cwd=Path(__file__).resolve().parent.parent)  # fmt: skip
            if done.returncode != 0:
                runs[variant].append({"crashed": done.returncode, "tail": done.stderr[-400:]})
            else:
                runs[variant].append(json.loads(done.stdout.split("RESULT ", 1)[1]))
            print(variant.name, runs[variant][-1], flush=True)
    rows = []
    for variant in variants:
        ok = [run for run in runs[variant] if "crashed" not in run]
        row = {"build": variant.name, "cmake_args": list(variant.cmake_args), "runs": runs[variant]}
        if ok:
            row["prompt_tok_per_s"] = max(run["prompt_tok_per_s"] for run in ok)
            row["generation_tok_per_s"] = max(run["generation_tok_per_s"] for run in ok)
        rows.append(row)
    return rows


GRAMMAR_CASES = (  # (schema's module, schema, the user message), each a structured call the course makes
    ("lessons.agents.grading", "GradeDocuments",
     ("Question: Which port does Atlas Server listen on?\nPassage: Atlas Server listens on port 7420 by default; set "
     "ATLAS_PORT to change it.\nDoes the passage help answer the question?")),
    ("lessons.agents.answerability", "Evidence",
     ("Question: When did the Lisbon office open?\nPassages:\n[1] The Lisbon office opened in October 2025 with nine "
     "engineers; it hosts the support team.\n[2] The Osaka office hosts the data team.\nQuote the sentence that answers.")),
    ("lessons.agents.three_agents", "Verification",
     ("Question: What is the default port?\nContext: Atlas Server listens on port 7420 by default.\nDraft: The default "
     "port is 7420.\nIs every claim of the draft supported by the context?")),
)  # fmt: skip


def grammar_sampling(rounds: int = 3) -> list[dict]:
    """Structured calls with the stock sampler and with the grammar-first check, best of `rounds` each."""
    import importlib

    from langchain_core.utils.function_calling import convert_to_openai_tool
    from llama_cpp import Llama

    from lessons.core import llama_server

    llama_server.patch_llama()
    settings = get_settings()
    llm = Llama(str(resolve_local_model().path), n_threads=settings.threads, n_ctx=settings.n_ctx, verbose=False)
    sampling = {"s": 0.0}
    sample = Llama.sample

    def timed_sample(self, *args, **kwargs):
        start = time.perf_counter()
        try:
            return sample(self, *args, **kwargs)
        finally:
            sampling["s"] += time.perf_counter() - start

    Llama.sample = timed_sample
    patched_init = Llama._init_sampler
    rows = []
    try:
        for module, name, message in GRAMMAR_CASES:
            tool = convert_to_openai_tool(getattr(importlib.import_module(module), name))
            choice = {"type": "function", "function": {"name": tool["function"]["name"]}}
            row = {"schema": name}
            for _ in range(rounds):
                for label, init in (
                    ("stock", llama_server.ORIGINALS["_init_sampler"]),
                    ("grammar_first", patched_init),
                ):
                    Llama._init_sampler = init
                    llm.reset()
                    sampling["s"] = 0.0
                    start = time.perf_counter()
                    out = llm.create_chat_completion(
                        [{"role": "user", "content": message}], tools=[tool], tool_choice=choice, temperature=0,
                        max_tokens=256,
                    )  # fmt: skip
                    seconds = time.perf_counter() - start
                    best = row.get(label)
                    if best is None or seconds < best["seconds"]:
                        row[label] = {
                            "seconds": round(seconds, 2),
                            "sampling_s": round(sampling["s"], 3),
                            "generated_tokens": out["usage"]["completion_tokens"],
                            "arguments": out["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"],
                        }
            row["same_arguments"] = row["stock"]["arguments"] == row["grammar_first"]["arguments"]
            row["sampling_ms_per_token"] = {
                label: round(1000 * row[label]["sampling_s"] / max(1, row[label]["generated_tokens"]), 2)
                for label in ("stock", "grammar_first")
            }
            print(name, row["sampling_ms_per_token"], "same" if row["same_arguments"] else "DIFFERENT", flush=True)
            rows.append(row)
    finally:
        Llama.sample, Llama._init_sampler = sample, patched_init
        llm.close()
    return rows


def main():
    if "--grammar" in sys.argv:
        from lessons.core import runtime_build as rb

        save(
            "local_model_grammar",
            {"cpu": rb.cpu_model(), "threads": get_settings().threads, "calls": grammar_sampling()},
        )
        return
    if "--builds" in sys.argv:
        from lessons.core import runtime_build as rb

        rows = builds()
        save("local_model_builds", {"cpu": rb.cpu_model(), "threads": get_settings().threads, "builds": rows})
        return
    if "--wait-policy" in sys.argv:  # the measurement behind lessons.core.local_server's wait policy
        policies = {f"{n} busy cores": wait_policies(busy_cores=n) for n in (0, 1, 2)}
        print(json.dumps(policies, indent=1))
        save("local_model_wait_policy", {"threads": get_settings().threads, "policies": policies})
        return
    server = via_server()
    print("server", server)
    local = in_process()
    print("in-process", local)
    save(
        sys.argv[sys.argv.index("--name") + 1] if "--name" in sys.argv else "local_model",  # another machine's file
        {
            "model": resolve_local_model().alias,
            "threads": get_settings().threads,
            "server": server,
            "in_process": local,
            "ratio_server_to_in_process": {
                "prompt": round(server["prompt_tok_per_s"] / local["prompt_tok_per_s"], 3),
                "generation": round(server["generation_tok_per_s"] / local["generation_tok_per_s"], 3),
            },
        },
    )


if __name__ == "__main__":
    main()
