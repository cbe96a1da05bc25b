"""The deep-research tools as a tool-calling agent: the pattern of LangChain 1.x's own docs, with a cap in state.

Introduced in notebook 07 (deep-research agent). LangChain's docs build an agent as a loop: the model
is given tools (`bind_tools`), answers with *tool calls*, a `ToolNode` runs them and appends their
results as `ToolMessage`s, and the loop ends when the model replies without a call
(`langchain.agents.create_agent` packages the same loop). Here the two tools are the sub-agent's
own, `search_chunks` (the hybrid retriever, neighbour expansion and the reranker) and `read_page`.

- `research_tools(search, pages)`: the two tools; their results quote document text as `<document>`
  blocks (`lessons.core.prompt_safety.as_data`) and the system prompt carries `DATA_RULE`.
- `probe_tool_calling(model, tools, question)`: one call, tools offered — does the model emit a tool
  call or write it as text? The local 1.5B model writes text; that is why the course's offline path
  decides with forced typed choices (`lessons.agents.deep_research.ResearchDecision`).
- `build_tool_agent(model, tools, max_steps)`: a LangGraph graph, `agent` ⇄ `tools`; the tool-call
  counter lives in the state and is advanced by the tools step, which runs at most the calls left;
  at the cap the model is asked without tools and its reply ends the loop — it ends by construction.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any, TypedDict

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, SystemMessage, ToolMessage
from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool
from langgraph.graph import END, START
from langgraph.graph.message import add_messages
from langgraph.prebuilt import ToolNode

from lessons.agents.deep_research import Observation, PageStore, read_page, where
from lessons.agents.graphs import compile_graph
from lessons.core.prompt_safety import DATA_RULE, as_data

DEFAULT_MAX_STEPS = 3

SYSTEM_PROMPT = (
    """You research questions in the documents of the company Tidewell Analytics with two tools:
search_chunks(query) finds passages, read_page(source_id, page_index) reads the whole page a passage comes from.
Call a tool whenever the results so far do not answer every part of the question; when they do, answer in the
question's language in one to three sentences and name the sources (file and page) you used. """
    + DATA_RULE
)

CAP_NOTE = (
    "No tool calls are left. Answer the question now from the tool results above, in one to three "
    "sentences, and name the sources you used; if they do not answer it, say so."
)
BUDGET_USED = "not run: the tool-call budget of this question is used up"


def render_observation(observation: Observation) -> str:
    """A tool's result as the model reads it: the call, then each piece of evidence as a `<document>` block.

    Introduced in notebook 07 (deep-research agent). An error is returned as text the model can act on.
    """
    if observation.error:
        return f"{observation.header}\nERROR: {observation.error}"
    if not observation.evidence:
        return f"{observation.header}\nnothing found"
    blocks = [as_data(d.page_content, number=n, source=where(d)) for n, d in enumerate(observation.evidence, 1)]
    return observation.header + "\n" + "\n".join(blocks)


def research_tools(search: Any, pages: PageStore, page_chars: int = 1500) -> list[BaseTool]:
    """`search_chunks` and `read_page` as LangChain tools over the sub-agent's search and pages.

    Introduced in notebook 07 (deep-research agent). `search` is a `lessons.agents.deep_research.ChunkSearch`
    (or any callable query → `Observation`).
    """

    def search_chunks(query: str) -> str:
        """Search the company's documents; returns the best passages, each with its source file and page."""
        return render_observation(search(query))

    def read_whole_page(source_id: str, page_index: int) -> str:
        """Read the whole page of a source file, e.g. source_id "pricing.pdf", page_index 2 (as a search result shows)."""
        return render_observation(read_page(pages, source_id, page_index, page_chars))

    return [
        StructuredTool.from_function(search_chunks, name="search_chunks"),
        StructuredTool.from_function(read_whole_page, name="read_page"),
    ]


@dataclass(frozen=True)
class ToolProbe:
    """What one call with tools offered returned: tool calls, or text. Introduced in notebook 07 (deep-research agent)."""

    emits_tool_calls: bool
    tool_calls: list[dict[str, Any]]
    text: str


def probe_tool_calling(model: BaseChatModel, tools: Sequence[BaseTool], question: str) -> ToolProbe:
    """One call of `model` with `tools` offered (the model may call one or reply): did it emit a tool call?

    Introduced in notebook 07 (deep-research agent).
    """
    reply = model.bind_tools(list(tools)).invoke([SystemMessage(SYSTEM_PROMPT), HumanMessage(question)])
    calls = [{"name": c["name"], "args": c["args"]} for c in getattr(reply, "tool_calls", []) or []]
    return ToolProbe(bool(calls), calls, str(reply.content))


class ToolAgentState(TypedDict, total=False):
    """The tool-calling agent's state (notebook 07): the messages, and the tool calls run so far."""

    messages: Annotated[list[AnyMessage], add_messages]
    tool_calls: int
    at_cap: bool


def build_tool_agent(model: BaseChatModel, tools: Sequence[BaseTool], max_steps: int = DEFAULT_MAX_STEPS):
    """The tool-calling loop as a compiled LangGraph graph; invoke it with `{"messages": [("user", question)]}`.

    Introduced in notebook 07 (deep-research agent). `agent` calls the model with the tools bound;
    a reply with tool calls goes to `tools` (LangGraph's `ToolNode`), which runs at most the calls
    left (`max_steps` minus the counter in state; any further call gets a "not run" result) and
    advances the counter; a reply without tool calls ends the loop. At the cap the model is asked
    without tools, and any call it still writes is dropped: the loop ends by construction.
    """
    if max_steps < 1:
        raise ValueError(f"max_steps must be at least 1, got {max_steps}")
    with_tools = model.bind_tools(list(tools))
    tool_node = ToolNode(list(tools))

    def agent_step(state: ToolAgentState) -> dict[str, Any]:
        messages = [SystemMessage(SYSTEM_PROMPT), *state["messages"]]
        if state.get("tool_calls", 0) < max_steps:
            return {"messages": [with_tools.invoke(messages)]}
        reply = model.invoke([*messages, HumanMessage(CAP_NOTE)])
        return {"messages": [AIMessage(str(reply.content), id=reply.id)], "at_cap": True}

    def tools_step(state: ToolAgentState, config: RunnableConfig) -> dict[str, Any]:
        last = state["messages"][-1]
        left = max_steps - state.get("tool_calls", 0)
        allowed, refused = last.tool_calls[:left], last.tool_calls[left:]
        results = tool_node.invoke({"messages": [AIMessage("", tool_calls=allowed, id=last.id)]}, config)["messages"]
        results += [ToolMessage(BUDGET_USED, tool_call_id=c["id"], name=c["name"], status="error") for c in refused]
        return {"messages": results, "tool_calls": state.get("tool_calls", 0) + len(allowed)}

    def route(state: ToolAgentState) -> str:
        last = state["messages"][-1]
        return "tools" if isinstance(last, AIMessage) and last.tool_calls else END

    return compile_graph(
        ToolAgentState,
        nodes={"agent": agent_step, "tools": tools_step},
        edges={START: "agent", "agent": (route, ["tools", END]), "tools": "agent"},
    )


@dataclass(frozen=True)
class ToolAgentRun:
    """One question through the tool-calling agent. Introduced in notebook 07 (deep-research agent)."""

    question: str
    answer: str
    tool_calls: int
    model_calls: int
    at_cap: bool
    messages: list[AnyMessage]


def run_tool_agent(graph: Any, question: str, max_steps: int = DEFAULT_MAX_STEPS) -> ToolAgentRun:
    """Invoke a `build_tool_agent` graph on one question. Introduced in notebook 07 (deep-research agent)."""
    state = graph.invoke(
        {"messages": [HumanMessage(question)], "tool_calls": 0}, config={"recursion_limit": 2 * max_steps + 5}
    )
    messages = list(state["messages"])
    return ToolAgentRun(
        question,
        str(messages[-1].content),
        state.get("tool_calls", 0),
        sum(isinstance(m, AIMessage) for m in messages),
        bool(state.get("at_cap")),
        messages,
    )


def message_rows(messages: Sequence[AnyMessage], width: int = 160) -> list[dict[str, str]]:
    """The agent's conversation as table rows (who, tool calls, text). Introduced in notebook 07 (deep-research agent)."""
    rows = []
    for message in messages:
        calls = "; ".join(
            f"{c['name']}({json.dumps(c['args'], ensure_ascii=False)})"
            for c in getattr(message, "tool_calls", []) or []
        )
        who = f"tool {message.name}" if isinstance(message, ToolMessage) else message.type
        rows.append({"message": who, "tool calls": calls, "text": " ".join(str(message.content).split())[:width]})
    return rows


def scripted_researcher(planned_calls: Sequence[tuple[str, dict[str, Any]]], closing_text: str):
    """A `ScriptedChatModel` that plays a tool-calling model: while tools are offered it makes the next of
    `planned_calls` (one per turn, in order), and replies `closing_text` when they run out or when it is
    asked without tools (at the cap). Introduced in notebook 07 (deep-research agent): it shows the loop
    working offline — its calls are scripted, the tools' results are real.
    """
    from lessons.core.fakes import ScriptedChatModel

    planned = list(planned_calls)

    def turn(messages: list[AnyMessage], tool_names: list[str]) -> Any:
        done = sum(isinstance(m, ToolMessage) for m in messages)
        if not tool_names or done >= len(planned):
            return closing_text
        name, args = planned[done]
        if name not in tool_names:
            raise ValueError(
                f"scripted call {done + 1} names the tool {name!r}: the agent offers {', '.join(tool_names)}"
            )
        return AIMessage("", tool_calls=[{"name": name, "args": dict(args), "id": f"scripted-{done + 1}"}])

    return ScriptedChatModel(default=turn)
