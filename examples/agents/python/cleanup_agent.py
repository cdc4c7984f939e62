#!/usr/bin/env python3
"""A Strands agent with a dangerous tool, approved by people.

``ApprovalHandler`` asks the strands service before every call of
``delete_rows``: the call (tool + arguments) is the request's action, bound
by its digest; the approvers answer in Slack, Teams, the web inbox or by
mail; approved, the tool runs; rejected, the model reads why
(``DENIED: rejected by alice: change freeze until Monday``) and the tool
does not run. ``list_tables`` is harmless and runs without asking.

    STRANDS_SERVER=http://127.0.0.1:3000 STRANDS_TOKEN=stk_… APPROVERS=alice \\
    NOTIFY=slack:#ops OPENAI_API_KEY=… python cleanup_agent.py

Exit 0 when the tool ran, 1 when it was not approved, 3 when nobody could
be asked. ``ENABLE_TRUST=1``: the approver may trust ``delete_rows`` for the
rest of the session. ``SESSION_ID`` keys the requests (default: a new one).
"""

from __future__ import annotations

import os

from _env import asking, async_client, main, model
from _tools import RAN, delete_rows
from strands import Agent, tool

from strands_hitl.strands import ApprovalHandler


@tool
def list_tables() -> str:
    """List the tables."""
    return "events, users"


def run() -> int:
    agent = Agent(
        model=model(),
        tools=[delete_rows, list_tables],
        system_prompt="You are the CLEANUP agent. You keep the database small.",
        callback_handler=None,
        interventions=[
            ApprovalHandler(
                client=async_client(),
                allowed_tools=["list_tables"],
                enable_trust=os.environ.get("ENABLE_TRUST") == "1",
                session_id=os.environ.get("SESSION_ID"),
                **asking(),
            )
        ],
    )
    result = agent(os.environ.get("PROMPT", "Clean up events older than 90 days."))
    print(result)
    return 0 if RAN else 1


if __name__ == "__main__":
    main(run)
