"""Local chat model speed: prompt and generation tokens/s through the server vs llama.cpp in-process.

Run on an otherwise idle machine: another busy process on a 2-core machine changes everything.
`--builds` compares the runtime builds `lessons.core.runtime_build` can install on this CPU (and llama.cpp's
default `-march=native` build, which the course never installs), each compiled once into the wheel cache and
measured in-process from its own folder; a build that crashes is recorded with its signal.
`--wait-policy` instead compares OpenMP's default wait policy with PASSIVE for the server, with 0, 1
and 2 busy cores beside it (stop the course's own server first: `python -m lessons.core.local_server_cli stop`).
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
    start = time.perf_counter()
    prompt_tokens, _ = complete(LONG_PROMPT, 1)
    prompt_s = time.perf_counter() - start
    start = time.perf_counter()
    short_prompt_tokens, generated = complete(GEN_PROMPT, GEN_TOKENS)
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


def main():
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
        "local_model",
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
