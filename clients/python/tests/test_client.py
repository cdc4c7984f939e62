"""Unit tests of the client's own rules: request bodies, the action digest,
timeouts, the SDK prompt it parses, and how answers and failures map to
results and errors. The service's side is httpx's MockTransport here; the
integration tests (tests/it/agent_sdks.rs) run the real service."""

from __future__ import annotations

import asyncio
import hashlib
import json
import unittest
from datetime import timedelta
from typing import Any

import httpx

import strands_hitl
from strands_hitl import (
    Action,
    ActionMismatch,
    AsyncClient,
    Client,
    InvalidRequest,
    Request,
    ServerUnavailable,
    Unauthorized,
    WaitTimedOut,
)
from strands_hitl._asking import Asking, parse_hitl_prompt, tool_call_request
from strands_hitl._model import timeout_minutes


def view(**over: Any) -> dict[str, Any]:
    v: dict[str, Any] = {
        "id": "r-1",
        "title": "t",
        "status": "pending",
        "decision": None,
        "decided_by": None,
        "decided_at": None,
        "via": None,
        "reason": None,
        "requested_by": "ci",
        "created_at": "2026-01-01T00:00:00Z",
        "labels": {},
        "action": None,
        "action_digest": None,
        "created": True,
        "links": {},
    }
    v.update(over)
    return v


class Service:
    """A scripted service: each handler gets the request, returns a response."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.seen: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.seen.append(request)
        a = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(a, Exception):
            raise a
        status, body = a
        return httpx.Response(status, json=body)


def client(service: Service, **kw: Any) -> Client:
    return Client("http://strands.test", "stk_x_y", transport=httpx.MockTransport(service), **kw)


class Requests(unittest.TestCase):
    def test_only_what_is_set_is_sent_and_timeouts_are_minutes(self) -> None:
        body = Request(title="  Deploy\n v1.2? ", approvers=["alice"], timeout="2h").to_json()
        self.assertEqual(
            body,
            {"title": "Deploy v1.2?", "approvers": ["alice"], "timeout_minutes": 120, "on_timeout": "reject"},
        )
        self.assertEqual(timeout_minutes(timedelta(seconds=61)), 2)
        self.assertEqual(timeout_minutes(15), 15)
        self.assertEqual(timeout_minutes("1d"), 1440)
        with self.assertRaises(ValueError):
            timeout_minutes("soon")

    def test_a_request_travels_through_json_unchanged(self) -> None:
        r = Request(
            title="Pay?",
            details={"amount": "20000"},
            policy="payments",
            timeout=30,
            on_timeout="approve",
            action=Action("pay", {"amount": 20000}),
            form={"properties": {"x": {"type": "string"}}},
            trust=True,
            key="k",
        )
        self.assertEqual(Request.from_json(r.to_json()).to_json(), r.to_json())

    def test_the_digest_is_sha256_of_sorted_compact_json(self) -> None:
        canonical = '{"arguments":{"a":1,"b":[true,null,"é"]},"tool":"t"}'
        self.assertEqual(
            strands_hitl.action_digest("t", {"b": [True, None, "é"], "a": 1}),
            hashlib.sha256(canonical.encode()).hexdigest(),
        )

    def test_a_tool_call_is_the_action_and_its_arguments_the_details(self) -> None:
        r = tool_call_request(Asking(approvers=["alice"]), "pay", {"amount": 20000, "to": {"iban": "X"}}, key="s:1")
        body = r.to_json()
        self.assertEqual(body["action"], {"tool": "pay", "arguments": {"amount": 20000, "to": {"iban": "X"}}})
        self.assertEqual(body["details"], {"amount": "20000", "to": '{"iban": "X"}', "tool": "pay"})
        self.assertEqual(body["key"], "s:1")

    def test_asking_needs_approvers_or_a_policy(self) -> None:
        with self.assertRaises(ValueError):
            Asking()
        with self.assertRaises(TypeError):
            Asking(approvers="alice")  # type: ignore[arg-type]


class Prompts(unittest.TestCase):
    def test_the_sdks_prompt_gives_the_tool_and_its_input(self) -> None:
        p = parse_hitl_prompt('Approve "delete_file"?\n  Input: {"path": "/tmp/x.txt"}')
        assert p is not None
        self.assertEqual((p.tool, p.input, p.why), ("delete_file", {"path": "/tmp/x.txt"}, None))
        p = parse_hitl_prompt('Approve "rm" \u2014 deletes data?\n  Input: {"p": 1}')
        assert p is not None
        self.assertEqual((p.tool, p.why), ("rm", "deletes data"))

    def test_another_shape_is_not_guessed(self) -> None:
        self.assertIsNone(parse_hitl_prompt("May I?"))
        self.assertIsNone(parse_hitl_prompt('Approve "x"?\n  Input: not json'))


class Answers(unittest.TestCase):
    def test_a_refusal_names_the_field(self) -> None:
        svc = Service(
            (422, {"error": {"code": "invalid_request", "field": "approvers", "message": "approvers: no group `x`"}})
        )
        with self.assertRaises(InvalidRequest) as e:
            client(svc).request(Request(title="t", approvers=["group:x"]))
        self.assertEqual(e.exception.field, "approvers")
        self.assertIn("approvers: no group `x`", str(e.exception))

    def test_a_refused_token_is_not_retried(self) -> None:
        svc = Service((401, {"error": {"code": "unauthorized", "message": "the token is not valid"}}))
        with self.assertRaises(Unauthorized) as e:
            client(svc).request(Request(title="t", approvers=["a"]))
        self.assertIn("refused the token", str(e.exception))
        self.assertEqual(len(svc.seen), 1)

    def test_a_retried_post_carries_the_same_key(self) -> None:
        svc = Service(httpx.ConnectError("refused"), (503, {}), (201, view()))
        got = client(svc).request(Request(title="t", approvers=["a"]))
        self.assertEqual(got.id, "r-1")
        keys = {json.loads(r.content)["key"] for r in svc.seen}
        self.assertEqual(len(svc.seen), 3)
        self.assertEqual(len(keys), 1, "one key for every try")

    def test_an_unreachable_service_gives_up_naming_it(self) -> None:
        svc = Service(httpx.ConnectError("Connection refused"))
        with self.assertRaises(ServerUnavailable) as e:
            client(svc, reconnect_for=0.3).get("r-1")
        self.assertIn("http://strands.test", str(e.exception))
        self.assertIn("Connection refused", str(e.exception))

    def test_waiting_reconnects_and_returns_the_decision(self) -> None:
        decided = view(status="rejected", decision="rejected", decided_by="alice", reason="freeze", via="slack")
        svc = Service((200, view()), httpx.ReadError("broken"), (200, view()), (200, decided))
        got = client(svc).wait("r-1")
        self.assertFalse(got.approved)
        self.assertEqual(got.describe(), "rejected by alice (via slack): freeze")
        self.assertTrue(all("wait=" in str(r.url) for r in svc.seen))

    def test_the_callers_own_wait_can_run_out(self) -> None:
        svc = Service((200, view()))
        with self.assertRaises(WaitTimedOut) as e:
            client(svc).wait("r-1", timeout=0.01)
        self.assertTrue(e.exception.approval.pending)

    def test_an_approval_of_another_call_is_refused(self) -> None:
        other = Action("delete_rows", {"table": "users"})
        svc = Service((200, view(action=other.to_json(), action_digest=other.digest, created=False)))
        with self.assertRaises(ActionMismatch):
            client(svc).request(
                Request(title="t", approvers=["a"], action=Action("delete_rows", {"table": "events"}), key="k")
            )

    def test_the_async_client_does_the_same(self) -> None:
        asked = Action("pay", {"amount": 5})
        decided = view(status="approved", decision="approved", decided_by="bob", action=asked.to_json(),
                       action_digest=asked.digest, values={"n": 1}, trusted=True)

        async def go() -> strands_hitl.Approval:
            c = AsyncClient("http://strands.test", "stk_x_y", transport=httpx.MockTransport(Service((201, decided))))
            try:
                return await c.ask(Request(title="t", approvers=["bob"], action=asked))
            finally:
                await c.aclose()

        got = asyncio.run(go())
        self.assertTrue(got.approved and got.trusted)
        self.assertEqual(got.values, {"n": 1})


if __name__ == "__main__":
    unittest.main()
