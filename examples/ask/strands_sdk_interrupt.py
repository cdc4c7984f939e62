#!/usr/bin/env python3
"""A small agent whose tool hook stops for a human, asks `strands serve`, and
resumes with the answer — the Strands Agents SDK's interrupt pattern, with the
standard library only (no pip install).

The hook runs before every tool call. For a dangerous tool it raises
`Interrupt`; the agent loop catches it, asks the approvers over HTTP
(`POST /api/v1/approvals`, then `GET /api/v1/approvals/{id}?wait=60` until
decided), and resumes: approved, the tool runs; rejected, the model is told
why and the tool does not run. The idempotency key makes a restarted agent
wait on the same request instead of asking twice.

    STRANDS_SERVER=http://127.0.0.1:3000 STRANDS_TOKEN=stk_… \\
    APPROVERS=alice python3 examples/ask/strands_sdk_interrupt.py

Exit 0 when the tool ran, 1 when a human rejected it, 4 when it timed out.
The model is a stub (`stub_model`): swap in a real one; the hook and the
loop stay the same.
"""

import json
import os
import sys
import urllib.error
import urllib.request

SERVER = os.environ.get("STRANDS_SERVER", "http://127.0.0.1:3000").rstrip("/")
TOKEN = os.environ.get("STRANDS_TOKEN", "")
APPROVERS = [a for a in os.environ.get("APPROVERS", "alice").split(",") if a]
KEY = os.environ.get("STRANDS_ASK_KEY", "py-agent-cleanup-1")
DANGEROUS = {"delete_rows"}


class Interrupt(Exception):
    """Raised by a hook: the run stops here until a human answers."""

    def __init__(self, name, reason):
        super().__init__(reason)
        self.name = name
        self.reason = reason


def api(method, path, body=None):
    req = urllib.request.Request(
        f"{SERVER}/api/v1{path}",
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"},
    )
    with urllib.request.urlopen(req, timeout=90) as r:
        return json.load(r)


def ask_human(interrupt):
    """Asks strands; returns the request once decided."""
    made = api("POST", "/approvals", {
        "title": f"Let the agent run {interrupt.reason['tool']}?",
        "body": "The cleanup agent wants to call a tool that deletes data.",
        "details": {k: str(v) for k, v in interrupt.reason["arguments"].items()},
        "approvers": APPROVERS,
        "require_reason": False,
        "key": KEY,
        "labels": {"agent": "cleanup"},
    })
    print(f"asked: request {made['id']}", file=sys.stderr, flush=True)
    view = made
    while view["status"] == "pending":
        try:
            view = api("GET", f"/approvals/{made['id']}?wait=60")
        except (urllib.error.URLError, TimeoutError) as e:  # wait again on the same request
            print(f"{e}; waiting again", file=sys.stderr)
    return view


def delete_rows(table, older_than_days):
    return f"deleted 3 rows from {table} older than {older_than_days} days"


TOOLS = {"delete_rows": delete_rows}


def before_tool_call(name, arguments):
    """The hook: a dangerous tool needs a human's yes."""
    if name in DANGEROUS:
        raise Interrupt("approval", {"tool": name, "arguments": arguments})


def stub_model(messages):
    """Stands in for the model: asks for the tool once, then sums up."""
    if not any(m["role"] == "tool" for m in messages):
        return {"tool": "delete_rows", "arguments": {"table": "events", "older_than_days": 90}}
    return {"text": "Done: " + messages[-1]["content"]}


def run_agent(prompt):
    messages = [{"role": "user", "content": prompt}]
    while True:
        turn = stub_model(messages)
        if "text" in turn:
            return turn["text"], 0
        name, args = turn["tool"], turn["arguments"]
        code = 0
        try:
            before_tool_call(name, args)
            result = TOOLS[name](**args)
        except Interrupt as interrupt:
            answer = ask_human(interrupt)  # the run resumes with the human's answer
            if answer["decision"] == "approved":
                print(f"approved by {answer['decided_by']}", file=sys.stderr)
                result = TOOLS[name](**args)
            else:
                code = 4 if answer["status"] == "timed_out" else 1
                why = answer.get("reason") or "no reason given"
                return f"not run: {answer['status']} by {answer.get('decided_by')}: {why}", code
        messages.append({"role": "tool", "content": result})


if __name__ == "__main__":
    text, code = run_agent("Clean up old events.")
    print(text)
    sys.exit(code)
