// The lifecycle tools: agent_state_get, agent_state_set.
import * as z from 'zod';
import { STATES, type LifecycleService } from '../services/lifecycle.js';
import { idempotencyKey, isoTime, threadArg } from './common.js';
import { defineTool, type ToolHost } from './define.js';

const state = z.enum(STATES);
const view = z.object({
  thread: z.string(),
  run: z.string(),
  state,
  reason: z.string().optional(),
  updatedAt: isoTime.optional(),
  allowed: z.array(state),
});

/** Registers the lifecycle family: agent_state_get, agent_state_set. */
export function registerLifecycleTools(host: ToolHost, lifecycle: LifecycleService): void {
  defineTool(
    host,
    'agent_state_get',
    {
      title: 'Read the lifecycle state',
      description: 'This run\'s lifecycle state (or another thread\'s), and the states allowed next.',
      input: z.object({ thread: threadArg }).strict(),
      output: view,
      annotations: { readOnlyHint: true },
    },
    (args) => lifecycle.get(args),
  );
  defineTool(
    host,
    'agent_state_set',
    {
      title: 'Change the lifecycle state',
      description: 'Move this run to another state; INVALID_TRANSITION lists the allowed ones.',
      input: z.object({ state: state.describe('The new state'), reason: z.string().optional().describe('Why'), idempotencyKey }).strict(),
      output: view.extend({ previous: state }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (args, _extra, call) => lifecycle.set(args, call),
  );
}
