import * as z from 'zod';
import { END_STATES, type RunService } from '../services/runs.js';
import { STATES } from '../services/lifecycle.js';
import { idempotencyKey } from './common.js';
import { defineTool, type ToolHost } from './define.js';

/** Registers the run family: whoami, run_start, run_end. */
export function registerRunTools(host: ToolHost, runs: RunService): void {
  defineTool(
    host,
    'whoami',
    {
      title: 'Who am I',
      description: 'This connection\'s identity: namespace, agent, agent type, thread, run, parent thread, delegation level, and the store.',
      input: z.object({}).strict(),
      output: z.object({
        namespace: z.string().nullable(),
        agent: z.string().nullable(),
        agentType: z.string().nullable(),
        thread: z.string(),
        run: z.string(),
        parentThread: z.string().nullable(),
        delegateLevel: z.number().int(),
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
      description:
        'Start a new run: new run id; the run scope, scratchpad and final answer start empty; thread state is kept. Give thread to switch to (or resume) another thread, parentThread when a parent delegated it, agentType to change type. resumed says whether the thread had runs before.',
      input: z
        .object({ thread: z.string().optional(), parentThread: z.string().optional(), agentType: z.string().optional(), idempotencyKey })
        .strict(),
      output: z.object({ thread: z.string(), run: z.string(), resumed: z.boolean() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    },
    (args) => runs.start(args),
  );
  defineTool(
    host,
    'run_end',
    {
      title: 'End the run',
      description: 'End this run as finished, error or stopped: records it in the lifecycle and history, and saves a checkpoint of the thread when checkpoints are enabled.',
      input: z.object({ status: z.enum(END_STATES), reason: z.string().optional(), idempotencyKey }).strict(),
      output: z.object({ thread: z.string(), run: z.string(), state: z.enum(STATES), checkpointId: z.string().optional() }),
      // destructive: its checkpoint may prune the oldest one
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    },
    (args) => runs.end(args),
  );
}
