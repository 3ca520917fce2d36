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
  allowed: z.array(state).describe('states you may go to next'),
});

/** Registers the lifecycle family: agent_state_get, agent_state_set. */
export function registerLifecycleTools(host: ToolHost, lifecycle: LifecycleService): void {
  defineTool(
    host,
    'agent_state_get',
    {
      title: 'Read the lifecycle state',
      description: 'Read this run\'s lifecycle state (or another thread\'s latest) and the states allowed next.',
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
      description:
        'Move this run to another state: loading→running; running→paused|awaiting_user_input|finished|error|stopped; paused→running|stopped; awaiting_user_input→running|stopped; error→running|stopped. INVALID_TRANSITION lists the allowed targets. After finished, this run\'s state can no longer change (RUN_FINISHED) until run_start.',
      input: z.object({ state, reason: z.string().optional(), idempotencyKey }).strict(),
      output: view.extend({ previous: state }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    },
    (args) => lifecycle.set(args),
  );
}
