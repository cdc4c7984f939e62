#!/usr/bin/env python3
"""A stateless worker: the agent pauses at an interrupt, and any process —
this one, or another after a crash or a deploy — answers and resumes it.

``ApprovalHandler(wait=False)`` pauses the agent before ``delete_rows`` with
an interrupt (nothing waits inside the tool call). The agent's state,
interrupt included, is kept by the SDK's ``FileSessionManager``.
``strands_hitl.strands.run`` asks the service for every interrupt — keyed on
the session and the interrupt, so asking again (after a restart) waits on
the same request — and resumes the agent with the answers
(``interruptResponse``). The tool runs once, in whichever process resumes.

    python restartable_agent.py SESSION_ID      # starts, or resumes SESSION_ID

Kill it while it waits and run it again with the same SESSION_ID: the second
process finds the pending interrupt, waits on the request already made and
resumes — one request, one tool run. ``SESSIONS_DIR`` holds the sessions
(default ./sessions). Exit 0 when the tool ran, 1 when not, 3 when nobody
could be asked.
"""

from __future__ import annotations

import os
import sys

from _env import asking, async_client, main, model
from _tools import RAN, delete_rows
from strands import Agent
from strands.session.file_session_manager import FileSessionManager

from strands_hitl.strands import ApprovalHandler, pending_interrupts, run


def work() -> int:
    session_id = sys.argv[1]
    agent = Agent(
        model=model(),
        tools=[delete_rows],
        system_prompt="You are the CLEANUP agent.",
        callback_handler=None,
        session_manager=FileSessionManager(
            session_id=session_id, storage_dir=os.environ.get("SESSIONS_DIR", "sessions")
        ),
        interventions=[ApprovalHandler(wait=False, **asking())],
    )
    pending = pending_interrupts(agent)
    if pending:
        print(f"resuming {session_id}: {len(pending)} interrupt(s) pending", file=sys.stderr, flush=True)
    prompt = None if pending else os.environ.get("PROMPT", "Clean up events older than 90 days.")
    result = run(agent, prompt, async_client(), session_id=session_id)
    print(result)
    return 0 if RAN else 1


if __name__ == "__main__":
    main(work)
