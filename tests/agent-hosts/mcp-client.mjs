// An MCP client on the official TypeScript SDK (@modelcontextprotocol/sdk,
// pinned in package.json), for the tests of the MCP server inside
// `strands serve`: it is what an agent host built on that SDK does, run as
// a process over a real socket, so the tests check the server against the
// SDK itself rather than against their own idea of the protocol.
// mcp_client.py is the same client on the Python SDK; both take the same
// arguments and print the same lines.
//
//   node mcp-client.mjs --url URL [--token T] [--call NAME [--args JSON]]
//                       [--cancel-after-ms N] [--timeout-ms N] [--mode M]
//
// The token may come from STRANDS_TOKEN instead; it is sent as
// `Authorization: Bearer T`. `--mode` is the Python client's (how it
// negotiates the protocol version); this one always does the initialize
// handshake and ignores it. One JSON object per line on stdout:
//   {"event":"connected","server":NAME,"protocol":VERSION} after connecting
//   {"event":"tools","names":[...]}                       after tools/list
//   {"event":"progress","progress":P,"total":T,"message":M} per notification
//   {"event":"cancelled"}                                  the call was aborted
//   {"event":"result","isError":B,"content":[...],"structuredContent":S}
//   {"event":"error","code":C,"message":M}                 a JSON-RPC error
// Exit 0 unless connecting (or listing the tools) failed: then 1, the cause
// on stderr.

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

function parseArgs(argv) {
  const out = {};
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    if (!flag.startsWith("--") || i + 1 >= argv.length) {
      throw new Error(`unexpected argument ${flag} (each flag takes a value)`);
    }
    out[flag.slice(2)] = argv[++i];
  }
  return out;
}

function emit(obj) {
  process.stdout.write(JSON.stringify(obj) + "\n");
}

async function main() {
  let args;
  try {
    args = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`${e.message}\n`);
    return 2;
  }
  if (!args.url) {
    process.stderr.write("--url is required\n");
    return 2;
  }
  const token = args.token ?? process.env.STRANDS_TOKEN ?? "";
  const headers = token ? { Authorization: "Bearer " + token } : {};
  const transport = new StreamableHTTPClientTransport(new URL(args.url), {
    requestInit: { headers },
  });
  const client = new Client({ name: "strands-tests-ts", version: "0.0.0" });
  try {
    await client.connect(transport);
    emit({ event: "connected", server: client.getServerVersion()?.name ?? null, protocol: transport.protocolVersion ?? null });
    const listed = await client.listTools();
    emit({ event: "tools", names: listed.tools.map((t) => t.name) });
  } catch (e) {
    process.stderr.write(`connecting to ${args.url} failed: ${e?.stack ?? e}\n`);
    return 1;
  }

  if (args.call) {
    let callArgs = {};
    try {
      callArgs = args.args ? JSON.parse(args.args) : {};
    } catch (e) {
      process.stderr.write(`--args is not JSON: ${e.message}\n`);
      await client.close();
      return 2;
    }
    const abort = new AbortController();
    let timer;
    if (args["cancel-after-ms"]) {
      timer = setTimeout(() => abort.abort("cancelled by the test"), Number(args["cancel-after-ms"]));
    }
    try {
      const result = await client.callTool({ name: args.call, arguments: callArgs }, undefined, {
        onprogress: (p) =>
          emit({ event: "progress", progress: p.progress, total: p.total ?? null, message: p.message ?? null }),
        signal: abort.signal,
        timeout: Number(args["timeout-ms"] ?? 600000),
        resetTimeoutOnProgress: true,
      });
      emit({
        event: "result",
        isError: result.isError ?? false,
        content: result.content ?? [],
        structuredContent: result.structuredContent ?? null,
      });
    } catch (e) {
      if (abort.signal.aborted) {
        emit({ event: "cancelled" });
      } else {
        emit({ event: "error", code: typeof e?.code === "number" ? e.code : null, message: String(e?.message ?? e) });
      }
    } finally {
      clearTimeout(timer);
    }
  }
  await client.close().catch(() => {});
  return 0;
}

process.exitCode = await main();
