// Compile-only (npm run typecheck): the package's helpers fit the real
// @strands-agents/sdk 1.19.0 types — the one-line ask, the intervention
// handler, interrupt blocks and the resume loop.

import { Agent, FileStorage, SessionManager } from '@strands-agents/sdk';
import { HumanInTheLoop } from '@strands-agents/sdk/vended-interventions/hitl';
import { Client, answerInterrupts, ask, pendingInterrupts, runWithApprovals } from '../src/index.js';
import { StrandsApproval } from '../src/intervention.js';

export async function typesFit(): Promise<string> {
  const client = new Client({ server: 'http://127.0.0.1:3000', token: 'stk_x' });
  const agent = new Agent({
    interventions: [
      new HumanInTheLoop({ ask: ask({ client, approvers: ['alice'], enableTrust: true }), enableTrust: true }),
      new StrandsApproval({ client, policy: 'prod-changes' }),
    ],
    sessionManager: new SessionManager({ sessionId: 's', storage: { snapshot: new FileStorage('/tmp/s') } }),
  });
  const result = await agent.invoke('go');
  if (result.stopReason === 'interrupt') {
    const blocks = await answerInterrupts(result.interrupts ?? [], client, { sessionId: 's', approvers: ['alice'] });
    await agent.invoke(blocks);
  }
  const pending = await pendingInterrupts(agent);
  const done = await runWithApprovals(agent, 'go', client, { sessionId: 's', approvers: ['alice'] });
  return `${pending.length} ${done.stopReason} ${done.lastMessage.role}`;
}
