// The lifecycle tools: agent_state_get, agent_state_set.
import * as z from 'zod';
import { STATES, type LifecycleService } from '../services/lifecycle.js';
import { idempotencyKey, isoTime, threadArg } from './common.js';
import { cutJsonText } from './bounds.js';
import { defineTool, type ToolHost } from './define.js';

const state = z.enum(STATES);
// Results name states as plain strings: the argument schema lists them once.
const view = z.object({
  thread: z.string(),
  run: z.string(),
  state: z.string(),
  reason: z.string().optional(),
  updatedAt: isoTime.optional(),
  allowed: z.array(z.string()),
});

/** How much of a state's reason a reply carries: a longer one is cut, ending in "…". */
const REASON_BYTES = 2048;

const reasonWithin = <R extends { reason?: string }>(view: R): R =>
  view.reason === undefined ? view : { ...view, reason: cutJsonText(view.reason, REASON_BYTES) };

/** Registers the lifecycle family: agent_state_get, agent_state_set. */
export function registerLifecycleTools(host: ToolHost, lifecycle: LifecycleService): void {
  defineTool(
    host,
    'agent_state_get',
    () => ({
      title: 'Read the lifecycle state',
      description: "A thread's lifecycle state ({tool:whoami} shows yours). Returns state, reason, allowed next.",
      input: z.object({ thread: threadArg }).strict(),
      output: view,
      annotations: { readOnlyHint: true },
    }),
    async (args) => reasonWithin(await lifecycle.get(args)),
  );
  defineTool(
    host,
    'agent_state_set',
    () => ({
      title: 'Change the lifecycle state',
      description: "Move this run's lifecycle state. Returns state, previous; INVALID_TRANSITION: see allowed.",
      input: z.object({ state, reason: z.string().optional(), idempotencyKey }).strict(),
      output: view.extend({ previous: z.string() }),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false },
    }),
    async (args, _extra, call) => reasonWithin(await lifecycle.set(args, call)),
  );
}
