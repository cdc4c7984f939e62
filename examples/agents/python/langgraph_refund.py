#!/usr/bin/env python3
"""A LangGraph graph that pauses for people: ``review`` calls ``interrupt()``,
``strands_hitl.langgraph.run`` asks the service and resumes the graph with
``Command(resume={interrupt_id: answer})``; ``pay`` runs only when approved.

The checkpointer (SQLite here) keeps the pause: kill the process while it
waits and run it again with the same thread id — the second process reads
the pending interrupt from the graph's state and waits on the request
already made (keyed on the thread and the interrupt). ``refund`` runs once.

    python langgraph_refund.py THREAD_ID [AMOUNT]

``CHECKPOINTS`` names the SQLite file (default ./checkpoints.sqlite).
Exit 0 when refunded, 1 when not, 3 when nobody could be asked.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from typing import Any, TypedDict

from _env import asking, client, main, record
from langgraph.checkpoint.sqlite import SqliteSaver
from langgraph.graph import END, START, StateGraph
from langgraph.types import interrupt

from strands_hitl.langgraph import run


class Refund(TypedDict, total=False):
    order: str
    amount: int
    outcome: str


def review(state: Refund) -> Refund:
    # The node re-runs from here on resume: nothing with side effects above.
    answer: dict[str, Any] = interrupt(
        {
            "title": f"Refund {state['amount']} EUR for order {state['order']}?",
            "details": {"order": state["order"], "amount": str(state["amount"])},
            "action": {"tool": "refund", "arguments": {"order": state["order"], "amount": state["amount"]}},
        }
    )
    if answer["approved"]:
        return {"outcome": f"approved by {answer['decided_by']}"}
    return {"outcome": f"{answer['status']}: {answer['reason'] or 'no reason given'}"}


def pay(state: Refund) -> Refund:
    if state["outcome"].startswith("approved"):
        record(f"refund {state['order']} {state['amount']}")
        return {"outcome": state["outcome"] + "; refunded"}
    return {}


def work() -> int:
    thread = sys.argv[1]
    builder = StateGraph(Refund)
    builder.add_node("review", review)
    builder.add_node("pay", pay)
    builder.add_edge(START, "review")
    builder.add_edge("review", "pay")
    builder.add_edge("pay", END)
    conn = sqlite3.connect(os.environ.get("CHECKPOINTS", "checkpoints.sqlite"), check_same_thread=False)
    graph = builder.compile(checkpointer=SqliteSaver(conn))
    config = {"configurable": {"thread_id": thread}}
    pending = graph.get_state(config).interrupts
    if pending:
        print(f"resuming {thread}: {len(pending)} interrupt(s) pending", file=sys.stderr, flush=True)
    start = None if pending else {"order": "A-1042", "amount": int(sys.argv[2]) if len(sys.argv) > 2 else 120}
    out = run(graph, start, config, client(), **asking())
    print(out["outcome"])
    return 0 if out["outcome"].endswith("refunded") else 1


if __name__ == "__main__":
    main(work)
