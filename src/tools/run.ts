// The run tools: whoami, run_start, run_end.
import * as z from 'zod';
import type { BudgetService } from '../services/budget.js';
import { END_STATES, type RunService } from '../services/run.js';
import type { LifecycleService } from '../services/lifecycle.js';
import type { MessageService } from '../services/messages.js';
import { counter, idempotencyKey } from './common.js';
import { defineTool, type ToolHost } from './define.js';

/** Registers the run family: whoami (with the thread's budgets and lifecycle state), run_start, run_end. */
export function registerRunTools(
  host: ToolHost,
  runs: RunService,
  budget: BudgetService,
  lifecycle: LifecycleService,
  messages: MessageService,
): void {
  defineTool(
    host,
    'whoami',
    () => ({
      title: 'Who am I',
      description: 'Your identity, lifecycle state, budgets, unread messages. Call it first. Returns them.',
      input: z.object({}).strict(),
      output: z.object({
        namespace: z.string().nullable(),
        agent: z.string().nullable(),
        agentType: z.string().nullable(),
        thread: z.string(),
        run: z.string(),
        parentThread: z.string().nullable(),
        delegateLevel: counter,
        state: z.string(),
        budgets: z.array(z.object({ name: z.string(), current: counter, max: counter, remaining: counter, reached: z.boolean() })),
        unread: counter,
      }),
      annotations: { readOnlyHint: true },
    }),
    async () => {
      const [me, { state }, { budgets }, unread] = await Promise.all([runs.whoami(), lifecycle.get(), budget.status(), messages.unread()]);
      return { ...me, state, budgets, unread };
    },
  );
  defineTool(
    host,
    'run_start',
    () => ({
      title: 'Start a new run',
      description: 'New run, or enter a thread (made your child); run scope, notes, answer reset. Returns thread, run.',
      input: z
        .object({
          thread: z.string().optional(),
          parentThread: z.string().optional(),
          agentType: z.string().optional(),
          idempotencyKey,
        })
        .strict(),
      output: z.object({ thread: z.string(), run: z.string(), resumed: z.boolean() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    }),
    (args, _extra, call) => runs.start(args, call),
  );
  defineTool(
    host,
    'run_end',
    () => ({
      title: 'End the run',
      description: 'End the run (after {tool:final_answer_set}); runs {tool:checkpoint_save}. Returns state, checkpointId.',
      input: z.object({ status: z.enum(END_STATES), reason: z.string().optional(), idempotencyKey }).strict(),
      output: z.object({ thread: z.string(), run: z.string(), state: z.string(), checkpointId: z.string().optional() }),
      // destructive: its checkpoint may prune the oldest one
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    }),
    (args, _extra, call) => runs.end(args, call),
  );
}
