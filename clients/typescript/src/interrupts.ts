/**
 * Interrupt / resume for stateless services: an agent without an `ask`
 * stops with `result.stopReason === 'interrupt'`; these helpers ask
 * `strands serve` about each interrupt and build the `interruptResponse`
 * blocks to resume with.
 *
 * Each request is keyed `${sessionId}:${interrupt.id}`: a second process
 * that restores the same session (the SDK's `SessionManager` with
 * `FileStorage`, say) after a restart finds the same pending interrupts,
 * asks with the same keys, and so waits on the same requests instead of
 * asking the humans twice.
 *
 * Only types of the SDK are used (structurally): this module loads without
 * `@strands-agents/sdk` installed.
 */

import type { Approval, Client } from './client.js';
import { decide, type AskSettings, type ToolCall } from './call.js';
import type { Json } from './digest.js';
import { HITL_NAME, parsePrompt } from './hitl.js';
import { StrandsHitlError } from './errors.js';

/** What the SDK's `Interrupt` carries that matters here. */
export interface InterruptLike {
  readonly id: string;
  readonly name: string;
  readonly reason?: unknown;
}

/** A block to resume with: `agent.invoke([...blocks])`. */
export interface InterruptResponseBlock {
  interruptResponse: { interruptId: string; response: Json };
}

export interface AnswerOptions extends Omit<AskSettings, 'onDecided'> {
  /**
   * A stable id of the conversation (the SDK `SessionManager`'s
   * `sessionId`): with the interrupt's id, the idempotency key.
   */
  sessionId: string;
  /** Answer `'t'` to `HumanInTheLoop` interrupts the approver trusted (set `enableTrust` on it too). */
  enableTrust?: boolean;
  /**
   * The response for a decided request. Default: for the SDK's
   * `HumanInTheLoop` interrupts `'y'`, `'n'` or `'t'`; for any other
   * interrupt (your own hook's or tool's) an object `{approved, decision,
   * status, decidedBy, via, reason, values, trusted}`.
   */
  toResponse?: (approval: Approval, interrupt: InterruptLike) => Json;
  /** Called with each decision and the interrupt it answers (e.g. to log it or pick an exit code). */
  onDecided?: (approval: Approval, interrupt: InterruptLike) => void;
  signal?: AbortSignal;
}

/**
 * The call an interrupt is about: the SDK's `HumanInTheLoop` prompt read
 * back; a reason object with a `tool` (and `arguments` or `input`); else
 * the interrupt's name with its reason as input.
 */
export function callOf(interrupt: InterruptLike): ToolCall {
  const r = interrupt.reason;
  if (interrupt.name === HITL_NAME && typeof r === 'string') return parsePrompt(r);
  if (r && typeof r === 'object' && !Array.isArray(r) && typeof (r as { tool?: unknown }).tool === 'string') {
    const o = r as { tool: string; arguments?: Json; input?: Json };
    return { tool: o.tool, input: o.arguments ?? o.input ?? null };
  }
  return { tool: interrupt.name, input: (r ?? null) as Json };
}

/** The default response (see {@link AnswerOptions.toResponse}). */
export function defaultResponse(approval: Approval, interrupt: InterruptLike, enableTrust = false): Json {
  if (interrupt.name === HITL_NAME) {
    if (!approval.approved) return 'n';
    return enableTrust && approval.trusted ? 't' : 'y';
  }
  return {
    approved: approval.approved,
    decision: approval.decision,
    status: approval.status,
    decidedBy: approval.decidedBy,
    via: approval.via,
    reason: approval.reason,
    values: approval.values,
    trusted: approval.trusted,
  };
}

/**
 * Asks about every interrupt at once (each keyed `${sessionId}:${id}`),
 * waits for every decision, and returns the blocks to resume with. Any
 * error (the server, a mismatched action, a failed request) throws: no
 * block is made up.
 */
export async function answerInterrupts(
  interrupts: readonly InterruptLike[],
  client: Client,
  options: AnswerOptions,
): Promise<InterruptResponseBlock[]> {
  if (!options?.sessionId) {
    throw new StrandsHitlError('answerInterrupts needs a sessionId (the SessionManager\'s): it keys the requests so a restart does not ask twice');
  }
  const trustOk = Boolean(options.enableTrust);
  return Promise.all(
    interrupts.map(async (interrupt) => {
      const call = callOf(interrupt);
      const hitl = interrupt.name === HITL_NAME;
      const { onDecided: _, ...rest } = options;
      const settings: AskSettings = hitl || options.title !== undefined ? rest : { ...rest, title: `Approve ${interrupt.name}?` };
      const approval = await decide(
        client,
        call,
        settings,
        `${options.sessionId}:${interrupt.id}`,
        hitl && trustOk,
        options.signal,
      );
      options.onDecided?.(approval, interrupt);
      const response = options.toResponse
        ? options.toResponse(approval, interrupt)
        : defaultResponse(approval, interrupt, trustOk);
      return { interruptResponse: { interruptId: interrupt.id, response } };
    }),
  );
}

/** The SDK `Agent` as these helpers use it. */
export interface AgentLike<R extends ResultLike> {
  invoke(args: string | InterruptResponseBlock[]): Promise<R>;
  initialize?(): Promise<void>;
  takeSnapshot?(options: { include: ['interrupts'] }): { data: Record<string, unknown> };
}

/** What an agent's result carries that matters here. */
export interface ResultLike {
  readonly stopReason: string;
  readonly interrupts?: readonly InterruptLike[] | undefined;
}

/**
 * The interrupts a restored agent is still paused at (none when it is not
 * paused): after a restart, what to answer before it can go on.
 */
export async function pendingInterrupts(agent: AgentLike<ResultLike>): Promise<InterruptLike[]> {
  if (!agent.takeSnapshot) return [];
  await agent.initialize?.();
  const state = agent.takeSnapshot({ include: ['interrupts'] }).data.interrupts as
    | { activated?: boolean; interrupts?: Record<string, { id: string; name: string; reason?: unknown; response?: unknown }> }
    | null
    | undefined;
  if (!state?.activated || !state.interrupts) return [];
  return Object.values(state.interrupts)
    .filter((i) => i.response === undefined)
    .map((i) => ({ id: i.id, name: i.name, reason: i.reason }));
}

/**
 * Runs `agent` until it is no longer interrupted, asking `strands serve`
 * at every interrupt. A restored agent still paused (after a restart) is
 * answered and resumed first; `input` is sent only when nothing is
 * pending. At most `maxRounds` (default 50) rounds of interrupts.
 */
export async function runWithApprovals<R extends ResultLike>(
  agent: AgentLike<R>,
  input: string,
  client: Client,
  options: AnswerOptions & { maxRounds?: number },
): Promise<R> {
  const pending = await pendingInterrupts(agent as AgentLike<ResultLike>);
  let result = await agent.invoke(pending.length ? await answerInterrupts(pending, client, options) : input);
  const max = options.maxRounds ?? 50;
  for (let round = 1; result.stopReason === 'interrupt'; round++) {
    if (round > max) throw new StrandsHitlError(`the agent was still interrupted after ${max} rounds of approvals`);
    result = await agent.invoke(await answerInterrupts(result.interrupts ?? [], client, options));
  }
  return result;
}
