/**
 * A tool call as an approval request: the title and body a human reads, the
 * `details` a server policy decides by (the input's top-level values as
 * strings), and the `action` the approval is bound to. Shared by the
 * `HumanInTheLoop` `ask`, the intervention handler and the interrupt helpers,
 * so the three ask the same way.
 */

import { checkAction, Client, type Approval, type RequestOptions } from './client.js';
import { normalize, type Json } from './digest.js';
import { RequestFailed, StrandsHitlError } from './errors.js';

/** A tool call an agent is about to make. */
export interface ToolCall {
  /** The tool's name. */
  tool: string;
  /** Its input, as the model gave it. */
  input: Json;
  /** Why it asks, when the SDK's classifier said (`HumanInTheLoop` with a classifier). */
  reason?: string;
}

/**
 * How to ask: who answers, where, for how long; shared by every helper
 * that asks about tool calls. `server` and `token` default to
 * `STRANDS_SERVER` and `STRANDS_TOKEN`; or pass a `client`.
 */
export interface AskSettings {
  server?: string;
  token?: string;
  /** A client to ask with (instead of `server`/`token`). */
  client?: Client;
  fetch?: typeof globalThis.fetch;
  approvers?: string[];
  policy?: string;
  quorum?: number;
  requireReason?: boolean;
  timeoutMinutes?: number;
  onTimeout?: 'reject' | 'approve';
  reminderMinutes?: number;
  escalationMinutes?: number;
  escalateTo?: string[];
  notify?: string[];
  /** Labels added to every request (the tool's name is added as `tool`). */
  labels?: Record<string, string>;
  /** More fields shown with every request; they win over the input's. */
  details?: Record<string, string>;
  /** The title (default "Allow the agent to run TOOL?"). */
  title?: string | ((call: ToolCall) => string);
  /** The body, markdown (default: what the agent wants to run, its input as JSON). */
  body?: string | ((call: ToolCall) => string);
  /** A flat JSON schema the approver fills in (servers that support forms). */
  form?: Record<string, unknown>;
  /** Give up waiting after this long (an error: the run stops); default: the server's timeout decides. */
  waitTimeoutMs?: number;
  /** Called once a request is made (or found by its key): e.g. log its id. */
  onAsked?: (approval: Approval, call: ToolCall) => void;
  /** Called with each decision (checked against the call), e.g. to log it. */
  onDecided?: (approval: Approval, call: ToolCall) => void;
}

/** The environment, where there is one. */
function env(name: string): string | undefined {
  const p = (globalThis as { process?: { env?: Record<string, string | undefined> } }).process;
  return p?.env?.[name];
}

/** The client `settings` name (or make one from them, or from the environment). */
export function clientOf(settings: AskSettings): Client {
  if (settings.client) return settings.client;
  const server = settings.server ?? env('STRANDS_SERVER');
  const token = settings.token ?? env('STRANDS_TOKEN');
  if (!server) throw new StrandsHitlError('no strands server: pass `server` or set STRANDS_SERVER (e.g. http://127.0.0.1:3000)');
  if (!token) throw new StrandsHitlError('no token: pass `token` or set STRANDS_TOKEN (an operator token)');
  return new Client({ server, token, ...(settings.fetch ? { fetch: settings.fetch } : {}) });
}

/** The input's top-level values as strings (strings as they are, the rest as JSON). */
export function detailsOf(input: Json): Record<string, string> {
  if (input === null || typeof input !== 'object' || Array.isArray(input)) {
    return input === null ? {} : { input: JSON.stringify(input) };
  }
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(input)) out[k] = typeof v === 'string' ? v : JSON.stringify(v);
  return out;
}

/** The server's limit on a body, less room for the words around the input. */
const MAX_INPUT_CHARS = 12 * 1024;

function defaultBody(call: ToolCall): string {
  let input = JSON.stringify(call.input, null, 2) ?? 'null';
  if (input.length > MAX_INPUT_CHARS) input = `${input.slice(0, MAX_INPUT_CHARS)}\n… (cut; the fields and the digest hold all of it)`;
  const why = call.reason ? `\n\nWhy it asks: ${call.reason}` : '';
  return `The agent wants to call \`${call.tool}\` with:\n\n\`\`\`json\n${input}\n\`\`\`${why}`;
}

/** The approval request for `call` under `settings`, with idempotency `key`. */
export function requestFor(call: ToolCall, settings: AskSettings, key: string, trust: boolean): RequestOptions {
  const title =
    typeof settings.title === 'function' ? settings.title(call) : settings.title ?? `Allow the agent to run ${call.tool}?`;
  const body = typeof settings.body === 'function' ? settings.body(call) : settings.body ?? defaultBody(call);
  const opts: RequestOptions = {
    title: title.length > 200 ? `${title.slice(0, 199)}…` : title,
    body,
    details: { ...detailsOf(call.input), ...settings.details },
    labels: { ...settings.labels, tool: call.tool },
    action: { tool: call.tool, arguments: normalize(call.input) },
    key,
  };
  const copy = [
    'approvers',
    'policy',
    'quorum',
    'requireReason',
    'timeoutMinutes',
    'onTimeout',
    'reminderMinutes',
    'escalationMinutes',
    'escalateTo',
    'notify',
    'form',
  ] as const;
  for (const k of copy) if (settings[k] !== undefined) Object.assign(opts, { [k]: settings[k] });
  if (trust) opts.trust = true;
  return opts;
}

/**
 * Asks about `call` and waits for the decision: the request (made, or
 * found by its `key`), `onAsked`, the wait, the action check. A request
 * that failed on the server throws; a rejection is returned.
 */
export async function decide(
  client: Client,
  call: ToolCall,
  settings: AskSettings,
  key: string,
  trust: boolean,
  signal?: AbortSignal,
): Promise<Approval> {
  const req = requestFor(call, settings, key, trust);
  const asked = await client.request(req, signal);
  settings.onAsked?.(asked, call);
  const decided =
    asked.status === 'pending'
      ? await client.wait(asked.id, {
          ...(settings.waitTimeoutMs === undefined ? {} : { timeoutMs: settings.waitTimeoutMs }),
          ...(signal ? { signal } : {}),
        })
      : asked;
  await checkAction(decided, req.action!);
  if (decided.status === 'failed') throw new RequestFailed(decided.id, decided.reason ?? undefined);
  settings.onDecided?.(decided, call);
  return decided;
}
