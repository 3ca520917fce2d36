// The checkpoint tools: checkpoint_save, checkpoint_list, checkpoint_restore, checkpoint_delete.
import * as z from 'zod';
import type { CheckpointService } from '../services/checkpoint.js';
import { counter, cursor, idempotencyKey, isoTime, threadArg } from './common.js';
import { defineTool, type ToolHost } from './define.js';

const checkpointId = z.string();
const info = z.object({
  checkpointId: z.string(),
  thread: z.string(),
  run: z.string(),
  label: z.string().optional(),
  createdAt: isoTime,
  revision: counter,
  records: counter,
  bytes: counter,
});

/** Registers the checkpoint family: checkpoint_save, checkpoint_list, checkpoint_restore, checkpoint_delete. */
export function registerCheckpointTools(host: ToolHost, checkpoints: CheckpointService): void {
  defineTool(
    host,
    'checkpoint_save',
    {
      title: 'Save a checkpoint',
      description: "Save this thread's state for {tool:checkpoint_restore}. Returns its id, size.",
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
      description: "List a thread's checkpoints, newest first. Returns them, nextCursor.",
      input: z.object({ thread: threadArg, cursor, limit: z.number().int().min(1).max(100).optional().describe('Default 20') }).strict(),
      output: z.object({ checkpoints: z.array(info), nextCursor: z.string().optional() }),
      annotations: { readOnlyHint: true },
    },
    (args) => checkpoints.list(args),
  );
  defineTool(
    host,
    'checkpoint_restore',
    {
      title: 'Restore a checkpoint',
      description: "Put a thread back as a checkpoint saved it, atomically. Returns records restored.",
      input: z
        .object({ checkpointId, ifRevision: z.number().int().min(0).optional().describe('Fail if changed since'), idempotencyKey })
        .strict(),
      output: z.object({ checkpointId: z.string(), thread: z.string(), run: z.string(), records: counter }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    (args) => checkpoints.restore(args),
  );
  defineTool(
    host,
    'checkpoint_delete',
    {
      title: 'Delete a checkpoint',
      description: "Delete a checkpoint. Returns deleted.",
      input: z.object({ checkpointId, idempotencyKey }).strict(),
      output: z.object({ deleted: z.boolean() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    },
    (args) => checkpoints.delete(args),
  );
}
