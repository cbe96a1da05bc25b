"""The course's schema grammars keep raw control characters out of JSON strings (lessons.core.llama_server)."""

import json

import pytest

from lessons.core import llama_server

llama_grammar = pytest.importorskip("llama_cpp.llama_grammar")


def string_rule() -> str:
    gbnf = llama_grammar.json_schema_to_gbnf(json.dumps({"type": "object", "properties": {"q": {"type": "string"}}}))
    return next(line for line in gbnf.splitlines() if line.startswith("char ::="))


def test_a_schema_string_admits_no_raw_newline_after_the_patch(monkeypatch):
    # The package's converter lets any character but '"' and '\' into a string: a small model that ends a quote with
    # '”' then writes newlines inside the string until max_tokens (seen on a Chinese question in the benchmark).
    monkeypatch.setitem(llama_grammar.PRIMITIVE_RULES, "char", llama_grammar.PRIMITIVE_RULES["char"])  # restored after
    llama_server.patch_grammar()
    rule = string_rule()
    assert r"\x00-\x1F" in rule and r"\x7F" in rule, rule
    # the same exclusion as the package's own JSON grammar (and llama.cpp's converter)
    assert r'[^"\\\x7F\x00-\x1F]' in llama_grammar.JSON_GBNF and r'[^"\\\x7F\x00-\x1F]' in rule
    llama_grammar.LlamaGrammar.from_string(
        llama_grammar.json_schema_to_gbnf(json.dumps({"type": "string"})), verbose=False
    )  # llama.cpp parses it
