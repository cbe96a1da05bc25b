"""The prompt-prefix benchmark replays the local server's RAM prompt cache and reorders prompts
(benchmarks/bench_prompt_prefix.py). Its replay matched the server's log call for call on the captured runs; these
tests pin the rules it replays, on token lists, without the model."""

from benchmarks import bench_prompt_prefix as bench
from benchmarks.bench_prompt_prefix import call_kind, documents_block, replay, shared_first

DOCS = '<document number="1" source="a.md">\nPort 7420.\n</document>\n\n<document number="2" source="b.md">\nx\n</document>'


def request(text: str, tool: str | None = "Verdict") -> dict:
    body = {"messages": [{"role": "user", "content": text}]}
    if tool:
        body["tools"] = [{"type": "function", "function": {"name": tool, "parameters": {}}}]
        body["tool_choice"] = {"type": "function", "function": {"name": tool}}
    return body


def test_a_prompt_evaluates_what_follows_the_prefix_it_shares_with_the_previous_call():
    assert replay([[1, 2, 3, 4], [1, 2, 3, 9, 9]]) == [4, 2]


def test_a_repeated_prompt_evaluates_its_last_token_again():
    assert replay([[1, 2, 3], [1, 2, 3]]) == [3, 1]


def test_the_saved_state_sharing_the_longest_prefix_is_restored_not_only_the_previous_one():
    # A, then B (another kind), then A's prompt extended: A's state comes back from the RAM cache
    assert replay([[1, 2, 3, 4], [7, 8, 9], [1, 2, 3, 4, 5]]) == [4, 3, 1]


def test_the_least_recently_used_state_leaves_when_the_cache_is_full(monkeypatch):
    monkeypatch.setattr(bench, "CACHE_BYTES", 9 * bench.STATE_BYTES_PER_TOKEN)  # room for two 4-token states
    assert replay([[1, 2, 3, 4], [5, 6, 7, 8], [9, 9, 9, 9], [1, 2, 3, 4, 5]]) == [4, 4, 4, 5]


def test_shared_first_puts_the_documents_in_a_system_message_ahead_of_the_call_s_own_text():
    before = request(f"Check it.\n\nQuestion: q\n\nContext:\n{DOCS}\n\nDraft answer: d")
    after = shared_first(before)
    system, user = after["messages"]
    assert system["role"] == "system" and system["content"].endswith(DOCS)
    assert user["content"] == "Check it.\n\nQuestion: q\n\nContext:\n(the documents above)\n\nDraft answer: d"
    assert after["tools"] == before["tools"]


def test_shared_first_in_the_user_message_starts_it_with_the_documents():
    after = shared_first(request(f"Check it.\n\n{DOCS}"), where="user")
    assert [m["role"] for m in after["messages"]] == ["user"]
    assert after["messages"][0]["content"] == f"{DOCS}\n\nCheck it.\n\n(the documents above)"


def test_a_call_without_documents_is_left_as_it_is():
    plain = request("Rewrite the question.")
    assert documents_block(plain) is None and shared_first(plain) is plain


def test_call_kinds_are_the_forced_tool_else_a_probability_read_else_the_first_words():
    assert call_kind(request("x", tool="Evidence")) == "Evidence"
    assert call_kind({**request("Is it relevant? yes or no", tool=None), "logprobs": True}) == "P(yes) read"
    assert call_kind(request("Rewrite the question for search", tool=None)) == "Rewrite the question for"
