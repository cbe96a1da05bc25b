"""Local chat model speed: prompt and generation tokens/s through the server vs llama.cpp in-process.

Run on an otherwise idle machine: another busy process on a 2-core machine changes everything.
"""

import sys
import time
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


def main():
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
