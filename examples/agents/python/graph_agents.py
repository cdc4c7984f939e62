#!/usr/bin/env python3
"""A Graph whose node pauses for people through the SDK's own
``HumanInTheLoop`` (no ``ask``: it interrupts), answered through strands.

``cleaner`` → ``reporter``. The cleaner's ``delete_rows`` needs a yes: the
Graph stops ``INTERRUPTED`` with the node's interrupt, and
``strands_hitl.strands.run`` asks the approvers named here, answers the
interrupt as ``HumanInTheLoop`` reads it (``"y"``, ``"n"``) and resumes the
Graph, which goes on to the reporter. (A rejection reaches the cleaner as
``CONFIRMATION_FAILED``: the SDK's ``HumanInTheLoop`` keeps no reason; see
``ApprovalHandler`` for that.)

    STRANDS_SERVER=… STRANDS_TOKEN=… APPROVERS=alice python graph_agents.py SESSION_ID

Exit 0 when the tool ran, 1 when not, 3 when nobody could be asked.
"""

from __future__ import annotations

import os
import sys

from _env import asking, async_client, main, model
from _tools import RAN, delete_rows
from strands import Agent
from strands.multiagent import GraphBuilder
from strands.vended_interventions.hitl import HumanInTheLoop

from strands_hitl.strands import run


def work() -> int:
    cleaner = Agent(
        name="cleaner",
        model=model(),
        tools=[delete_rows],
        system_prompt="You are the CLEANER. You delete old rows.",
        callback_handler=None,
        interventions=[HumanInTheLoop()],
    )
    reporter = Agent(
        name="reporter",
        model=model(),
        system_prompt="You are the REPORTER. Say what was cleaned.",
        callback_handler=None,
    )
    builder = GraphBuilder()
    builder.add_node(cleaner, "cleaner")
    builder.add_node(reporter, "reporter")
    builder.add_edge("cleaner", "reporter")
    builder.set_entry_point("cleaner")
    builder.set_max_node_executions(4)
    graph = builder.build()
    prompt = os.environ.get("PROMPT", "Clean up old events.")
    result = run(graph, prompt, async_client(), session_id=sys.argv[1], **asking())
    print(f"graph {result.status.value}: {[n.node_id for n in result.execution_order]}")
    return 0 if RAN else 1


if __name__ == "__main__":
    main(work)
