"""The course's agent graphs are wired the same way: a table of nodes and a table of edges.

Notebook 04's grading loop, notebook 05's three agents and notebook 07's deep-research and tool-calling agents are
built with it. `compile_graph(State, nodes, edges)` is LangGraph's `StateGraph`
with every `add_node`, `add_edge` and `add_conditional_edges` call read from the two tables, so a graph's shape
reads in one place:

    compile_graph(LoopState,
                  nodes={"retrieve": retrieve, "grade": grade, "rewrite": rewrite, ...},
                  edges={START: "retrieve", "retrieve": "grade",
                         "grade": (route, ["generate", "rewrite", "not_in_kb"]),  # route(state) picks one
                         "rewrite": "retrieve", "generate": END, ...})
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from langgraph.graph import StateGraph

# where a node goes next: one node (or END), or (route, the nodes route may name) when route(state) decides
Edge = str | tuple[Callable[[Any], str], Sequence[str]]


def compile_graph(state: type, nodes: Mapping[str, Callable[..., Any]], edges: Mapping[str, Edge]) -> Any:
    """The compiled `StateGraph(state)`: `nodes` maps a name to its step, `edges` a node (or START) to its `Edge`.

    One edge per node, as every graph of the course has; LangGraph's own checks (e.g. an edge to an unknown node)
    run at `compile()`.
    """
    graph = StateGraph(state)
    for name, step in nodes.items():
        graph.add_node(name, step)
    for source, target in edges.items():
        if isinstance(target, str):
            graph.add_edge(source, target)
        else:
            route, targets = target
            graph.add_conditional_edges(source, route, list(targets))
    return graph.compile()
