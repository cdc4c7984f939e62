/**
 * The `ask` of the Strands SDK's vended `HumanInTheLoop` intervention, answered
 * by `strands serve`:
 *
 * ```ts
 * new HumanInTheLoop({ ask: ask({ approvers: ['alice'] }) })
 * ```
 *
 * The SDK (1.19.0) calls `ask` with one string only —
 * `Approve "delete_rows"?\n  Input: {"table":"events"}`, or
 * `Approve "delete_rows" — <classifier reason>?\n  Input: {…}` — so this
 * reads the tool's name and input back out of it, binds the request to
 * that call (`action`: the server's digest), shows the input's top-level
 * values as `details` (a policy decides by them) and answers what the SDK
 * accepts: `'y'`, `'n'`, or `'t'` (trust) when the approver trusted the tool
 * and trust is allowed. A server error throws, and the SDK then aborts the
 * run: it never becomes a yes.
 *
 * What it cannot do: hand the approver's reason to the model. The SDK
 * tells the model `CONFIRMATION_FAILED: <prompt>` whatever the reason; use
 * the intervention handler (`strands-hitl/intervention`) for that.
 */

import { newKey } from './client.js';
import { clientOf, decide, type AskSettings, type ToolCall } from './call.js';
import type { Json } from './digest.js';
import { UnreadablePrompt } from './errors.js';

/** The name of the SDK's `HumanInTheLoop` (its interrupts carry it). */
export const HITL_NAME = 'strands:human-in-the-loop';

const HEAD = 'Approve "';
const SEP = '?\n  Input: ';

/**
 * The tool call in a prompt of the SDK's `HumanInTheLoop` (1.19.0):
 * `Approve "NAME"[ — REASON]?\n  Input: JSON`. Throws {@link UnreadablePrompt}
 * for anything else (another SDK version, another intervention).
 */
export function parsePrompt(prompt: string): ToolCall {
  const bad = (why: string): UnreadablePrompt =>
    new UnreadablePrompt(
      `cannot read the HumanInTheLoop prompt (${why}); expected 'Approve "TOOL"?\\n  Input: JSON' as @strands-agents/sdk 1.19 sends it, got ${JSON.stringify(String(prompt).slice(0, 200))}`,
    );
  if (typeof prompt !== 'string' || !prompt.startsWith(HEAD)) throw bad('it does not start with Approve "');
  // The input is compact JSON (no raw newline), so the last separator is the one.
  const at = prompt.lastIndexOf(SEP);
  if (at < 0) throw bad('no "Input:" line');
  const head = prompt.slice(HEAD.length, at);
  const close = head.indexOf('"');
  if (close <= 0) throw bad('no tool name');
  const tool = head.slice(0, close);
  const rest = head.slice(close + 1);
  if (rest !== '' && !rest.startsWith(' — ')) throw bad('unexpected text after the tool name');
  const text = prompt.slice(at + SEP.length);
  let input: Json;
  if (text === 'undefined') {
    input = null;
  } else {
    try {
      input = JSON.parse(text) as Json;
    } catch {
      throw bad('its input is not JSON');
    }
  }
  return rest ? { tool, input, reason: rest.slice(3) } : { tool, input };
}

/** Options of {@link ask}: who answers and how (see {@link AskSettings}), and trust. */
export interface HitlAskOptions extends AskSettings {
  /**
   * Offer "trust" to the approver (the request's `trust`; servers that
   * support it) and answer `'t'` when they trust the tool. Set the same on
   * `HumanInTheLoop`, which only then accepts `'t'`.
   */
  enableTrust?: boolean;
  /**
   * The `allowedTools` given to `HumanInTheLoop`, when it has `!tool`
   * entries: such tools may never be trusted, so they are asked without
   * "trust" and a yes is `'y'`.
   */
  allowedTools?: string[];
}

/**
 * An `ask` for `new HumanInTheLoop({ ask })`: every call of a tool the
 * SDK stops asks `strands serve` (a fresh idempotency key per call, reused
 * when a POST is retried) and waits for the decision.
 */
export function ask(options: HitlAskOptions = {}): (prompt: string) => Promise<'y' | 'n' | 't'> {
  const client = clientOf(options);
  const never = new Set((options.allowedTools ?? []).filter((t) => t.startsWith('!')).map((t) => t.slice(1)));
  const failed = new Map<string, number>();
  return async (prompt: string) => {
    // @strands-agents/sdk 1.19.0 rejects `invoke` when `ask` throws, then,
    // draining its loop, calls `ask` again for the same call and runs the
    // tool if that throws too. So the call that failed is answered 'n'
    // once, right after: the tool never runs.
    const at = failed.get(prompt);
    if (at !== undefined) {
      failed.delete(prompt);
      if (Date.now() - at < REPLAY_WINDOW_MS) return 'n';
    }
    try {
      const call = parsePrompt(prompt);
      const trust = Boolean(options.enableTrust) && !never.has(call.tool);
      const decided = await decide(client, call, options, newKey(), trust);
      if (!decided.approved) return 'n';
      return trust && decided.trusted ? 't' : 'y';
    } catch (e) {
      failed.set(prompt, Date.now());
      throw e;
    }
  };
}

/** How soon after a failed `ask` the SDK's replay of the same call comes (it comes at once). */
const REPLAY_WINDOW_MS = 10_000;
