import * as z from 'zod';
import type { CheckpointService } from '../services/checkpoints.js';
import { idempotencyKey, isoTime, threadArg } from './common.js';
import { defineTool, type ToolHost } from './define.js';

const checkpointId = z.string().describe('An id from checkpoint_save or checkpoint_list (cp-…).');
const info = z.object({
  checkpointId: z.string(),
  thread: z.string(),
  run: z.string(),
  label: z.string().optional(),
  createdAt: isoTime,
  revision: z.number().int().describe('the thread\'s revision when saved'),
  records: z.number().int(),
  bytes: z.number().int(),
});

/** Registers the checkpoint family: checkpoint_save, checkpoint_list, checkpoint_restore, checkpoint_delete. */
export function registerCheckpointTools(host: ToolHost, checkpoints: CheckpointService): void {
  defineTool(
    host,
    'checkpoint_save',
    {
      title: 'Save a checkpoint',
      description:
        'Save this thread\'s whole state (thread and run keys, plans, scratchpad, final answer, budgets, lifecycle, history) so you can come back to it. The newest checkpoints per thread are kept (20 by default).',
      input: z.object({ label: z.string().optional(), idempotencyKey }).strict(),
      output: info,
      // destructive: keeping the newest N may delete the oldest checkpoint
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    },
    (args) => checkpoints.save(args),
  );
  defineTool(
    host,
    'checkpoint_list',
    {
      title: 'List checkpoints',
      description: 'List a thread\'s checkpoints (default this thread), newest first, with label, time, size and revision.',
      input: z.object({ thread: threadArg }).strict(),
      output: z.object({ checkpoints: z.array(info) }),
      annotations: { readOnlyHint: true },
    },
    (args) => checkpoints.list(args),
  );
  defineTool(
    host,
    'checkpoint_restore',
    {
      title: 'Restore a checkpoint',
      description:
        'Put the checkpoint\'s thread back exactly as saved, atomically; no other thread or scope is touched. Pass ifRevision (the revision you last saw) to fail with VERSION_CONFLICT instead of overwriting writes made since. CHECKPOINT_CORRUPT means it cannot be used and nothing changed.',
      input: z.object({ checkpointId, ifRevision: z.number().int().optional(), idempotencyKey }).strict(),
      output: z.object({ checkpointId: z.string(), thread: z.string(), run: z.string(), records: z.number().int() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    (args) => checkpoints.restore(args),
  );
  defineTool(
    host,
    'checkpoint_delete',
    {
      title: 'Delete a checkpoint',
      description: 'Delete a checkpoint. NOT_FOUND if there is no such checkpoint.',
      input: z.object({ checkpointId, idempotencyKey }).strict(),
      output: z.object({ deleted: z.boolean() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    },
    (args) => checkpoints.delete(args),
  );
}
