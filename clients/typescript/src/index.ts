/**
 * strands-hitl: the human on the other end of a Strands Agents (TypeScript)
 * run. Asks `strands serve` (Slack, Teams, the web inbox, email, the CLI)
 * and returns the human's answer:
 *
 * - {@link Client}: the approvals API (`request`, `get`, `wait`, `ask`);
 * - {@link ask}: the one-line `ask` of the SDK's `HumanInTheLoop`;
 * - {@link answerInterrupts}, {@link runWithApprovals}, {@link pendingInterrupts}:
 *   interrupt / resume, across restarts;
 * - `strands-hitl/intervention`: `StrandsApproval`, an intervention handler
 *   that hands the approver's reason back to the model.
 *
 * No runtime dependency: node's global `fetch` and WebCrypto.
 */

export {
  Client,
  checkAction,
  describeDecision,
  newKey,
  rejectionMessage,
  requestBody,
  toApproval,
  type Approval,
  type ApprovalStatus,
  type ClientOptions,
  type ReconnectOptions,
  type RequestOptions,
  type WaitOptions,
} from './client.js';
export { actionDigest, canonicalJson, type Action, type Json } from './digest.js';
export {
  ActionMismatch,
  Forbidden,
  InvalidRequest,
  NotFound,
  RequestFailed,
  ServerUnavailable,
  StrandsHitlError,
  Unauthorized,
  UnreadablePrompt,
  WaitTimedOut,
} from './errors.js';
export { clientOf, detailsOf, requestFor, type AskSettings, type ToolCall } from './call.js';
export { ask, parsePrompt, HITL_NAME, type HitlAskOptions } from './hitl.js';
export {
  answerInterrupts,
  callOf,
  defaultResponse,
  pendingInterrupts,
  runWithApprovals,
  type AgentLike,
  type AnswerOptions,
  type InterruptLike,
  type InterruptResponseBlock,
  type ResultLike,
} from './interrupts.js';
