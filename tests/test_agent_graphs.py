"""lessons.agents.graphs.compile_graph: a LangGraph graph from a table of nodes and a table of edges."""

from typing import TypedDict

import pytest
from langgraph.graph import END, START

from lessons.agents.graphs import compile_graph


class Count(TypedDict, total=False):
    n: int
    path: list[str]


def step(name):
    def run(state: Count) -> dict:
        return {"n": state.get("n", 0) + 1, "path": [*state.get("path", []), name]}

    return run


def test_plain_edges_and_a_route_wire_the_graph():
    graph = compile_graph(
        Count,
        nodes={"start": step("start"), "again": step("again"), "done": step("done")},
        edges={
            START: "start",
            "start": (lambda s: "done" if s["n"] >= 3 else "again", ["again", "done"]),
            "again": "start",
            "done": END,
        },
    )
    assert graph.invoke({})["path"] == ["start", "again", "start", "done"]


def test_an_edge_to_a_node_that_is_not_there_fails_when_compiled():
    with pytest.raises(ValueError, match="nowhere"):
        compile_graph(Count, nodes={"start": step("start")}, edges={START: "start", "start": "nowhere"})
