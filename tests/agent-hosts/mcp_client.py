"""An MCP client on the official Python SDK (`mcp`, pinned in
clients/python/requirements-test.txt and installed by clients/setup.sh), for
the tests of the MCP server inside `strands serve`: what an agent host built
on that SDK does, run as a process over a real socket, so the server is
checked against the SDK itself. mcp-client.mjs is the same client on the
TypeScript SDK; both take the same arguments and print the same lines.

    python mcp_client.py --url URL [--token T] [--call NAME [--args JSON]]
                         [--cancel-after-ms N] [--timeout-ms N] [--mode M]
    python mcp_client.py --stdio COMMAND [ARG ...] -- [same options]

`--stdio` starts COMMAND as a stdio server instead (its environment is this
process's: `strands mcp` reads STRANDS_SERVER and STRANDS_TOKEN from it).

The token may come from STRANDS_TOKEN instead; it goes as
`Authorization: Bearer T` on every request. `--mode` is the SDK's: `auto`
(the default: probe `server/discover` at 2026-07-28, fall back to the
initialize handshake), `legacy` (initialize only) or a modern version. One
JSON object per line on stdout:

    {"event":"connected","server":NAME,"protocol":VERSION}   after connecting
    {"event":"tools","names":[...]}                          after tools/list
    {"event":"progress","progress":P,"total":T,"message":M}  per notification
    {"event":"cancelled"}                                    the call was given up
    {"event":"result","isError":B,"content":[...],"structuredContent":S}
    {"event":"error","code":C,"message":M}                   a JSON-RPC error

Exit 0 unless connecting (or listing the tools) failed: then 1, the cause on
stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from typing import Any

import anyio
import httpx2
from mcp.client import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj, separators=(",", ":")) + "\n")
    sys.stdout.flush()


def parse_args() -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--url")
    p.add_argument("--stdio", nargs="+", help="a command serving MCP on stdio")
    p.add_argument("--token", default=os.environ.get("STRANDS_TOKEN", ""))
    p.add_argument("--call")
    p.add_argument("--args", default="{}")
    p.add_argument("--cancel-after-ms", type=int)
    p.add_argument("--timeout-ms", type=int, default=600_000)
    p.add_argument("--mode", default="auto")
    return p.parse_args()


async def main() -> int:
    a = parse_args()
    try:
        call_args = json.loads(a.args)
    except json.JSONDecodeError as e:
        print(f"--args is not JSON: {e}", file=sys.stderr)
        return 2
    if a.stdio:
        params = StdioServerParameters(command=a.stdio[0], args=a.stdio[1:], env=dict(os.environ))
        return await session(a, Client(stdio_client(params), mode=a.mode), call_args, " ".join(a.stdio))
    if not a.url:
        print("--url or --stdio is needed", file=sys.stderr)
        return 2
    headers = {"Authorization": "Bearer " + a.token} if a.token else {}
    timeout = httpx2.Timeout(30.0, read=a.timeout_ms / 1000)
    async with httpx2.AsyncClient(headers=headers, timeout=timeout, follow_redirects=True) as http:
        return await session(a, Client(streamable_http_client(a.url, http_client=http), mode=a.mode), call_args, a.url)


async def session(a: argparse.Namespace, client: Client, call_args: dict[str, Any], where: str) -> int:
    try:
        await client.__aenter__()
    except Exception:
        print(f"connecting to {where} failed:\n{traceback.format_exc()}", file=sys.stderr)
        return 1
    try:
        info = client.server_info
        emit({"event": "connected", "server": info.name if info else None, "protocol": client.protocol_version})
        try:
            listed = await client.list_tools()
        except Exception:
            print(f"listing the tools of {where} failed:\n{traceback.format_exc()}", file=sys.stderr)
            return 1
        emit({"event": "tools", "names": [t.name for t in listed.tools]})
        if a.call:
            await call(client, a.call, call_args, a.cancel_after_ms, a.timeout_ms)
    finally:
        await client.__aexit__(None, None, None)
    return 0


async def call(client: Client, name: str, args: dict[str, Any], cancel_after_ms: int | None, timeout_ms: int) -> None:
    async def progress(progress: float, total: float | None, message: str | None) -> None:
        emit({"event": "progress", "progress": progress, "total": total, "message": message})

    limit = cancel_after_ms / 1000 if cancel_after_ms is not None else None
    with anyio.move_on_after(limit) as scope:
        try:
            result = await client.call_tool(
                name, args, read_timeout_seconds=timeout_ms / 1000, progress_callback=progress
            )
        except MCPError as e:
            emit({"event": "error", "code": e.error.code, "message": e.error.message})
            return
        emit(
            {
                "event": "result",
                "isError": bool(result.is_error),
                "content": [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in result.content],
                "structuredContent": result.structured_content,
            }
        )
    if scope.cancelled_caught:
        emit({"event": "cancelled"})


if __name__ == "__main__":
    sys.exit(anyio.run(main))
