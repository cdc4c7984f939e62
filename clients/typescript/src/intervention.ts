/**
 * An intervention handler for the Strands Agents TypeScript SDK that asks
 * `strands serve` before tool calls and hands the human's answer back to
 * the model:
 *
 * ```ts
 * import { StrandsApproval } from 'strands-hitl/intervention'
 * new Agent({ tools, interventions: [new StrandsApproval({ approvers: ['alice'] })] })
 * ```
 *
 * Unlike `HumanInTheLoop` with an `ask` (which only sees a prompt), it
 * sees the tool's name, input and `toolUseId`, so:
 * - the request is keyed `${sessionId}:${toolUseId}` (the agent's
 *   `sessionId`: the `SessionManager`'s when there is one), and bound to the
 *   call by its digest;
 * - a rejection reaches the model as the tool's result —
 *   `DENIED: rejected by alice: change freeze until Monday` — and the same
 *   call (same tool, same input) proposed again in the session is denied
 *   without asking again;
 * - with `enableTrust`, an approver's "trust" is recorded in the agent's
 *   state (`strands-hitl:trustedTools`) and the tool runs without asking
 *   for the rest of the session (never for `!tool` entries of `allowedTools`).
 *
 * Any error while asking throws (`onError: 'throw'`), and the SDK aborts
 * the run: the call never runs unapproved.
 *
 * This module imports `@strands-agents/sdk` (an optional peer dependency);
 * the package's main entry does not.
 */

import { InterventionActions, InterventionHandler, type BeforeToolCallEvent } from '@strands-agents/sdk';
import { actionDigest, normalize } from './digest.js';
import { clientOf, decide, type AskSettings, type ToolCall } from './call.js';
import { rejectionMessage, type Client } from './client.js';

type Proceed = ReturnType<typeof InterventionActions.proceed>;
type Deny = ReturnType<typeof InterventionActions.deny>;

/** Where trusted tools are kept in the agent's state. */
export const TRUSTED_TOOLS_KEY = 'strands-hitl:trustedTools';
/** Where rejected calls (by digest) are kept in the agent's state. */
export const REJECTED_CALLS_KEY = 'strands-hitl:rejectedCalls';

export interface StrandsApprovalOptions extends AskSettings {
  /** The handler's name (one per agent); default `strands-hitl:approval`. */
  name?: string;
  /**
   * Tools that run without asking, as `HumanInTheLoop`'s: `'*'` for all,
   * `'!name'` for one that always asks and may never be trusted. Default:
   * every tool asks.
   */
  allowedTools?: string[];
  /** Offer "trust" (servers that support it) and remember trusted tools in the agent's state. */
  enableTrust?: boolean;
  /** The id that, with the `toolUseId`, keys each request; default the agent's `sessionId`. */
  sessionId?: string | ((event: BeforeToolCallEvent) => string);
}

/** Asks `strands serve` before every tool call that needs a human. */
export class StrandsApproval extends InterventionHandler {
  readonly name: string;
  override readonly onError = 'throw' as const;
  private readonly client: Client;
  private readonly options: StrandsApprovalOptions;
  private readonly allowed: Set<string>;

  constructor(options: StrandsApprovalOptions = {}) {
    super();
    this.name = options.name ?? 'strands-hitl:approval';
    this.client = clientOf(options);
    this.options = options;
    this.allowed = new Set(options.allowedTools ?? []);
  }

  /** Whether `tool` runs without asking (see `allowedTools`, trust). */
  private runsFreely(event: BeforeToolCallEvent, tool: string): boolean {
    if (this.allowed.has(`!${tool}`)) return false;
    const trusted = (event.agent.appState.get(TRUSTED_TOOLS_KEY) as string[] | undefined) ?? [];
    return trusted.includes(tool) || this.allowed.has('*') || this.allowed.has(tool);
  }

  override async beforeToolCall(event: BeforeToolCallEvent): Promise<Proceed | Deny> {
    const { name: tool, toolUseId } = event.toolUse;
    if (this.runsFreely(event, tool)) return InterventionActions.proceed({ reason: 'allowed without asking' });
    const call: ToolCall = { tool, input: normalize(event.toolUse.input) };
    const digest = await actionDigest({ tool, arguments: call.input });
    const rejected = (event.agent.appState.get(REJECTED_CALLS_KEY) as Record<string, string> | undefined) ?? {};
    const before = rejected[digest];
    if (before) return InterventionActions.deny(`${before} (this exact call was rejected before; it was not asked again)`);

    const sid = this.options.sessionId;
    const session = typeof sid === 'function' ? sid(event) : sid ?? event.agent.sessionId;
    const trust = Boolean(this.options.enableTrust) && !this.allowed.has(`!${tool}`);
    let approval;
    try {
      approval = await decide(this.client, call, this.options, `${session}:${toolUseId}`, trust);
    } catch (e) {
      // @strands-agents/sdk 1.19.0 rejects `invoke` when a handler throws but
      // goes on draining its loop, and runs the tool unless the event is
      // cancelled: cancel it first, then throw.
      event.cancel = `DENIED: could not ask for approval: ${e instanceof Error ? e.message : String(e)}`;
      throw e;
    }
    if (approval.approved) {
      if (trust && approval.trusted) {
        const trusted = (event.agent.appState.get(TRUSTED_TOOLS_KEY) as string[] | undefined) ?? [];
        if (!trusted.includes(tool)) event.agent.appState.set(TRUSTED_TOOLS_KEY, [...trusted, tool]);
      }
      return InterventionActions.proceed({ reason: `approved by ${approval.decidedBy ?? 'an approver'}` });
    }
    const message = rejectionMessage(approval);
    event.agent.appState.set(REJECTED_CALLS_KEY, { ...rejected, [digest]: message });
    return InterventionActions.deny(message);
  }
}
