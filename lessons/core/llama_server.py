"""The course's local model server: llama-cpp-python's OpenAI-compatible server with two changes that keep every
answer the same and save prompt time.

`lessons.core.local_server` starts it as `python -m lessons.core.llama_server <llama_cpp.server arguments>`; the
arguments are llama_cpp.server's own (`--help`). Three changes, in fact:

1. **Logits for the last token of each batch only.** The server computes the 151,936 vocabulary logits of *every*
   prompt token and copies them out (its `logits_all` default, which log-probabilities need), though only the last
   position is ever read: the next token is sampled there, and `logprobs` of a completion start there (notebook
   02's P(yes) probe reads the first generated token's). `eval` below asks llama.cpp for the last position's logits
   alone and stores that row where the server reads it. The prompt's other rows are never read (nor returned,
   unless a request asks `echo` with `logprobs`, which the course never does), so a prompt is evaluated faster.
2. **A prompt-prefix cache across call kinds** (`--cache true`, llama_cpp.server's own RAM cache, which keeps the
   model state after each call and restores the one whose tokens share the longest prefix with the next prompt).
   Without it the server reuses only the previous call's prefix, and the course's calls interleave: a grader, an
   answer writer, a verifier, each with its own system prompt and tool schema. Stock, each cached state also holds a
   copy of the logit rows (a vocabulary's worth of floats per prompt token with `logits_all`); `save_state` /
   `load_state` below keep the model's own state (its KV cache) and leave the rows out, which point 1 makes safe: a
   restored state always evaluates at least its last token again before sampling (`_requires_eval`).

3. **The grammar checks the greedy choice first.** Every structured call is constrained by a grammar built from
   its JSON schema, and the stock sampler runs that grammar over all 151,936 candidate tokens before it picks one,
   for every generated token (`benchmarks/bench_local_model.py --grammar` measures it). At temperature 0 the pick is the
   highest logit among the tokens the grammar allows; when the highest logit overall is allowed (nearly always, on a
   model that follows the schema) that is the same token. `GrammarFirstCheck` does what llama.cpp's own `common`
   sampler does: it picks greedily without the grammar, asks the grammar about that one token, and runs the grammar
   over every candidate only when the token is refused. Same tokens, a fraction of the sampling time.

All three are patches on llama-cpp-python's `Llama` (0.3.x, pinned in requirements.lock); `tests/test_llama_server.py`
checks that answers and log-probabilities are the same with and without them.
"""

from __future__ import annotations

import ctypes
import sys

import numpy as np

# llama_cpp.Llama's own eval / save_state / load_state / _init_sampler, kept when patched (the tests compare with them)
ORIGINALS: dict[str, object] = {}


class GrammarFirstCheck:
    """A greedy sampler for a grammar-constrained generation that asks the grammar about the greedy token first.

    `chain` is llama-cpp-python's own sampler chain without the grammar (its penalties, then greedy); `grammar` a
    chain holding the grammar alone. Picks exactly the token the stock chain (penalties → grammar → greedy) picks.
    """

    def __init__(self, chain, grammar, n_vocab: int):
        import llama_cpp

        self.chain, self.grammar, self.n_vocab = chain, grammar, n_vocab
        self._data = (llama_cpp.llama_token_data * n_vocab)()
        self._view = np.ctypeslib.as_array(self._data)  # a structured view (id, logit, p) of the same memory
        self._view["id"] = np.arange(n_vocab, dtype=np.int32)
        self._one = (llama_cpp.llama_token_data * 1)()
        self.full_passes = 0  # how often the grammar had to run over every candidate (the tests read it)

    def sample(self, ctx, idx: int = -1) -> int:
        import llama_cpp

        logits = llama_cpp.llama_get_logits_ith(ctx.ctx, idx)
        self._view["logit"] = np.ctypeslib.as_array(logits, shape=(self.n_vocab,))
        self._view["p"] = 0.0
        candidates = llama_cpp.llama_token_data_array(self._data, self.n_vocab, -1, False)
        llama_cpp.llama_sampler_apply(self.chain.sampler, ctypes.byref(candidates))  # penalties, then greedy
        token = int(self._data[candidates.selected].id)
        self._one[0].id, self._one[0].logit, self._one[0].p = token, 1.0, 0.0
        single = llama_cpp.llama_token_data_array(self._one, 1, -1, False)
        llama_cpp.llama_sampler_apply(self.grammar.sampler, ctypes.byref(single))
        if single.data[0].logit == -np.inf:  # refused: the grammar over every (penalised) candidate, greedy again
            self.full_passes += 1
            llama_cpp.llama_sampler_apply(self.grammar.sampler, ctypes.byref(candidates))
            token = int(self._view["id"][int(np.argmax(self._view["logit"]))])
        llama_cpp.llama_sampler_accept(self.chain.sampler, token)
        llama_cpp.llama_sampler_accept(self.grammar.sampler, token)
        return token


# A JSON string holds no raw control character (a newline is written "\\n"). llama-cpp-python's schema-to-grammar
# converter lets any character but '"' and '\\' into a string, so a small model that closes a quote with "”" can go
# on writing newlines inside the string until max_tokens (1,024 tokens, three times over with the retries). llama.cpp's
# own converter and the package's JSON grammar exclude them; the course's grammars do too.
JSON_CHAR = r'[^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F])'


def patch_grammar() -> None:
    """Schema grammars keep raw control characters out of JSON strings, as llama.cpp's own converter does."""
    from llama_cpp import llama_grammar

    llama_grammar.PRIMITIVE_RULES["char"] = llama_grammar.BuiltinRule(JSON_CHAR, [])


def patch_llama() -> None:
    """Apply the changes to `llama_cpp.Llama` and its grammar converter (idempotent)."""
    import llama_cpp

    patch_grammar()

    llama = llama_cpp.Llama
    if getattr(llama, "_course_patched", False):
        return
    ORIGINALS.update(
        eval=llama.eval, save_state=llama.save_state, load_state=llama.load_state, _init_sampler=llama._init_sampler
    )
    original_eval, original_save, original_load = llama.eval, llama.save_state, llama.load_state
    original_init_sampler = llama._init_sampler

    def eval_last_logits(self, tokens) -> None:
        if not self._logits_all:
            return original_eval(self, tokens)
        self._ctx.kv_cache_seq_rm(-1, self.n_tokens, -1)
        for start in range(0, len(tokens), self.n_batch):
            batch = tokens[start : start + self.n_batch]
            n_past, n_tokens = self.n_tokens, len(batch)
            self._batch.set_batch(batch=batch, n_past=n_past, logits_all=False)  # logits of the last token only
            self._ctx.decode(self._batch)
            self.input_ids[n_past : n_past + n_tokens] = batch
            last = np.ctypeslib.as_array(self._ctx.get_logits(), shape=(self._n_vocab,))
            self.scores[n_past + n_tokens - 1, :] = last
            self.n_tokens += n_tokens
            self._requires_eval = False

    def save_state(self):
        rows = self.scores
        self.scores = rows[:0]  # the state without logit rows (module docstring, point 2)
        try:
            return original_save(self)
        finally:
            self.scores = rows

    def load_state(self, state) -> None:
        if len(state.scores):
            return original_load(self, state)
        rows = self.scores
        self.scores = rows[:0]
        try:
            original_load(self, state)
        finally:
            self.scores = rows

    def init_sampler(self, *args, **kwargs):
        grammar = kwargs.get("grammar")
        greedy = kwargs.get("temp", 0.80) == 0.0 and kwargs.get("logits_processor") is None
        if grammar is None or not greedy or args:
            return original_init_sampler(self, *args, **kwargs)
        from llama_cpp import _internals

        chain = original_init_sampler(self, **{**kwargs, "grammar": None})  # penalties, then greedy
        alone = _internals.LlamaSampler()
        alone.add_grammar(self._model, grammar)
        return GrammarFirstCheck(chain, alone, self._n_vocab)

    llama.eval, llama.save_state, llama.load_state = eval_last_logits, save_state, load_state
    llama._init_sampler = init_sampler
    llama._course_patched = True


def main(argv: list[str] | None = None) -> None:
    patch_llama()
    from llama_cpp.server.__main__ import main as serve

    sys.argv = [sys.argv[0], *(sys.argv[1:] if argv is None else argv)]
    serve()


if __name__ == "__main__":
    main()
