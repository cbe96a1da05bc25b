"""The course's patches on llama-cpp-python's server (lessons.core.llama_server) keep every answer and log-probability,
keep cached states small, and let a prompt reuse the prefix of a call that was not the last one."""

import pytest

from lessons.core import llama_server
from lessons.core.local_model import resolve_local_model

pytestmark = pytest.mark.model

PREFIX = (
    "<|im_start|>system\nYou grade whether a passage answers a question. Reply with yes or no only.<|im_end|>\n"
    "<|im_start|>user\nPassage: Atlas Server listens on port 7420 by default; set ATLAS_PORT to change it.\n"
)
FIRST = PREFIX + "Question: Which port does Atlas Server listen on?<|im_end|>\n<|im_start|>assistant\n"
OTHER = "<|im_start|>user\nName a colour.<|im_end|>\n<|im_start|>assistant\n"
THIRD = PREFIX + "Question: How do I bake bread?<|im_end|>\n<|im_start|>assistant\n"


@pytest.fixture(scope="module")
def llm():
    llama_cpp = pytest.importorskip("llama_cpp")
    llama_server.patch_llama()
    model = llama_cpp.Llama(
        model_path=str(resolve_local_model().path), n_ctx=1024, n_threads=2, logits_all=True, verbose=False, seed=0
    )
    yield model
    model.set_cache(None)


@pytest.fixture
def stock(monkeypatch):
    """llama_cpp.Llama as shipped, for the length of one test."""
    import llama_cpp

    def use():
        for name, method in llama_server.ORIGINALS.items():
            monkeypatch.setattr(llama_cpp.Llama, name, method)

    return use


def complete(llm, prompt):
    llm.set_cache(None)
    llm.reset()
    out = llm.create_completion(prompt, max_tokens=6, temperature=0, logprobs=5)
    return out["choices"][0]["text"], out["choices"][0]["logprobs"]["top_logprobs"][0]


def test_answers_and_logprobs_are_those_of_the_stock_server(llm, stock):
    patched = complete(llm, FIRST)
    stock()
    shipped = complete(llm, FIRST)
    assert patched[0] == shipped[0] and patched[0].strip().lower().startswith("yes")
    assert patched[1].keys() == shipped[1].keys()
    for token, logprob in shipped[1].items():
        assert patched[1][token] == pytest.approx(logprob, abs=1e-3)


def test_a_cached_state_holds_no_logit_rows(llm, stock):
    llm.reset()
    llm.eval(llm.tokenize(FIRST.encode(), special=True))
    patched = llm.save_state()
    assert len(patched.scores) == 0 and patched.llama_state_size < 64_000 * patched.n_tokens
    stock()
    assert len(llm.save_state().scores) == patched.n_tokens  # what the stock server copies into every cached state


def test_a_prompt_reuses_the_prefix_of_an_earlier_call_and_answers_the_same(llm, monkeypatch):
    import llama_cpp

    expected = complete(llm, THIRD)[0]
    llm.reset()
    llm.set_cache(llama_cpp.LlamaRAMCache(capacity_bytes=256 << 20))
    loads = []
    load = llama_cpp.Llama.load_state
    monkeypatch.setattr(
        llama_cpp.Llama, "load_state", lambda self, state: loads.append(state.n_tokens) or load(self, state)
    )
    for prompt in (FIRST, OTHER):
        llm.create_completion(prompt, max_tokens=6, temperature=0)
    answer = llm.create_completion(THIRD, max_tokens=6, temperature=0)["choices"][0]["text"]
    assert answer == expected
    assert loads, "the third prompt did not restore the first call's state"
    assert llm.n_tokens > 0 and len(llm.tokenize(PREFIX.encode(), special=True)) <= loads[-1]


TOOL = {
    "type": "function",
    "function": {
        "name": "Grade",
        "description": "Whether the passage answers the question.",
        "parameters": {
            "type": "object",
            "properties": {"relevant": {"type": "string", "enum": ["yes", "no"]}, "quote": {"type": "string"}},
            "required": ["relevant", "quote"],
        },
    },
}


def structured(llm, **kwargs):
    llm.set_cache(None)
    llm.reset()
    out = llm.create_chat_completion(
        [{"role": "user", "content": FIRST.split("<|im_start|>user\n")[1].split("<|im_end|>")[0]}],
        tools=[TOOL],
        tool_choice={"type": "function", "function": {"name": "Grade"}},
        temperature=0,
        max_tokens=64,
        **kwargs,
    )
    return out["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"]


def test_a_grammar_call_checks_the_greedy_token_first_and_answers_as_the_stock_sampler(llm, stock):
    patched = structured(llm)
    assert isinstance(llm._sampler, llama_server.GrammarFirstCheck), "the grammar ran over every candidate token"
    stock()
    assert structured(llm) == patched and '"relevant": "yes"' in patched


def test_a_token_the_grammar_refuses_is_replaced_by_the_best_token_it_allows(llm, stock):
    from llama_cpp.llama_grammar import LlamaGrammar

    def forced():  # the model's own next words are "Yes" or "The"; the grammar allows neither
        grammar = LlamaGrammar.from_string('root ::= "Port " ("7420" | "8080" | "none") "."', verbose=False)
        llm.set_cache(None)
        llm.reset()
        return llm.create_completion(FIRST, max_tokens=8, temperature=0, grammar=grammar)["choices"][0]["text"]

    patched = forced()
    assert llm._sampler.full_passes > 0, "the greedy token was never refused: the fallback is not exercised"
    stock()
    assert forced() == patched == "Port 7420."
