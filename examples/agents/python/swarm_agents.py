#!/usr/bin/env python3
"""A Swarm whose node pauses for people: the ``planner`` hands off to the
``cleaner``, whose ``delete_rows`` asks first.

The cleaner's ``ApprovalHandler(wait=False)`` interrupts the Swarm (status
``INTERRUPTED``, the node's interrupt in ``result.interrupts``);
``strands_hitl.strands.run`` asks the service and resumes the Swarm with the
answer — the same code as for one agent. With a session manager
(``Swarm(session_manager=…)``) it resumes after a restart too, as
restartable_agent.py does for one agent.

    STRANDS_SERVER=… STRANDS_TOKEN=… APPROVERS=alice python swarm_agents.py SESSION_ID

Exit 0 when the tool ran, 1 when not, 3 when nobody could be asked.
"""

from __future__ import annotations

import os
import sys

from _env import asking, async_client, main, model
from _tools import RAN, delete_rows
from strands import Agent
from strands.multiagent import Swarm

from strands_hitl.strands import ApprovalHandler, run


def work() -> int:
    planner = Agent(
        name="planner",
        model=model(),
        system_prompt="You are the PLANNER. Hand the work to the cleaner.",
        callback_handler=None,
    )
    cleaner = Agent(
        name="cleaner",
        model=model(),
        tools=[delete_rows],
        system_prompt="You are the CLEANER. You delete old rows.",
        callback_handler=None,
        interventions=[ApprovalHandler(wait=False, **asking())],
    )
    swarm = Swarm([planner, cleaner], entry_point=planner, max_handoffs=4)
    result = run(swarm, os.environ.get("PROMPT", "Clean up old events."), async_client(), session_id=sys.argv[1])
    print(f"swarm {result.status.value}: {[n.node_id for n in result.node_history]}")
    return 0 if RAN else 1


if __name__ == "__main__":
    main(work)
