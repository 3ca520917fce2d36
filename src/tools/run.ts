// The run tools: whoami, run_start, run_end.
import * as z from 'zod';
import { END_STATES, type RunService } from '../services/run.js';
import { STATES } from '../services/lifecycle.js';
import { counter, idempotencyKey } from './common.js';
import { defineTool, type ToolHost } from './define.js';

/** Registers the run family: whoami, run_start, run_end. */
export function registerRunTools(host: ToolHost, runs: RunService): void {
  defineTool(
    host,
    'whoami',
    {
      title: 'Who am I',
      description: 'This connection\'s identity: namespace, agent, thread, run, parent, store.',
      input: z.object({}).strict(),
      output: z.object({
        namespace: z.string().nullable(),
        agent: z.string().nullable(),
        agentType: z.string().nullable(),
        thread: z.string(),
        run: z.string(),
        parentThread: z.string().nullable(),
        delegateLevel: counter,
        store: z.string(),
      }),
      annotations: { readOnlyHint: true },
    },
    async () => runs.whoami(),
  );
  defineTool(
    host,
    'run_start',
    {
      title: 'Start a new run',
      description: 'New run (optionally of another thread): run scope, scratchpad, answer start empty; thread state stays.',
      input: z
        .object({
          thread: z.string().optional().describe('Thread to switch to'),
          parentThread: z.string().optional().describe('The delegating thread'),
          agentType: z.string().optional().describe('New agent type'),
          idempotencyKey,
        })
        .strict(),
      output: z.object({ thread: z.string(), run: z.string(), resumed: z.boolean() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    },
    (args, _extra, call) => runs.start(args, call),
  );
  defineTool(
    host,
    'run_end',
    {
      title: 'End the run',
      description: 'End this run (finished, error or stopped). It also saves a checkpoint ({tool:checkpoint_list}).',
      input: z.object({ status: z.enum(END_STATES).describe('How it ended'), reason: z.string().optional().describe('Why'), idempotencyKey }).strict(),
      output: z.object({ thread: z.string(), run: z.string(), state: z.enum(STATES), checkpointId: z.string().optional() }),
      // destructive: its checkpoint may prune the oldest one
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    },
    (args, _extra, call) => runs.end(args, call),
  );
}
