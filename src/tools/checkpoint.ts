// The checkpoint tools: checkpoint_save, checkpoint_list, checkpoint_restore, checkpoint_delete.
import * as z from 'zod';
import type { CheckpointService } from '../services/checkpoint.js';
import { decodeCursor, encodeCursor, notOurCursor } from '../services/cursor.js';
import { jsonBytes } from '../store/json-text.js';
import { recordsPage } from './bounds.js';
import { READ_DEFAULT_BYTES, counter, cursor, idempotencyKey, isoTime, threadArg } from './common.js';
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

/** A checkpoint's saved thread state: the thread document that export writes. */
const savedState = z.object({
  format: z.number(),
  kind: z.literal('thread'),
  thread: z.string(),
  run: z.string(),
  /** each saved record by its storage key: `{v: value, ver: version, at, by, exp?}` */
  records: z.record(z.string(), z.unknown()),
});

/** Registers the checkpoint family: checkpoint_save, checkpoint_list, checkpoint_restore, checkpoint_delete. */
export function registerCheckpointTools(host: ToolHost, checkpoints: CheckpointService): void {
  defineTool(
    host,
    'checkpoint_save',
    () => ({
      title: 'Save a checkpoint',
      description: 'Save thread state (for {tool:checkpoint_restore}). Returns id, size.',
      input: z.object({ label: z.string().optional(), idempotencyKey }).strict(),
      output: info,
      // destructive: keeping the newest N may delete the oldest checkpoint
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    }),
    (args, _extra, call) => checkpoints.save(args, call),
  );
  defineTool(
    host,
    'checkpoint_list',
    () => ({
      title: 'List checkpoints',
      description: 'Checkpoints, newest first (checkpointId: one, big values previewed). Returns them, nextCursor.',
      input: z
        .object({
          thread: threadArg,
          limit: z.number().int().min(1).max(1000).optional(),
          cursor,
          checkpointId: checkpointId.optional(),
        })
        .strict(),
      output: z.object({ checkpoints: z.array(info), nextCursor: z.string().optional(), state: savedState.optional() }),
      annotations: { readOnlyHint: true },
    }),
    async ({ checkpointId: id, cursor: from, ...args }) => {
      if (id === undefined) return checkpoints.list({ ...args, cursor: from });
      const { checkpoint, state } = await checkpoints.get({ checkpointId: id });
      // one checkpoint's records come in pages: nextCursor, given back with the same checkpointId, goes on
      const listing = { label: id, id: `checkpoint:${id}` };
      const after = from === undefined ? undefined : decodeCursor(from, listing, '');
      if (after !== undefined && !Object.hasOwn(state.records, after)) throw notOurCursor();
      const frame = { checkpoints: [checkpoint], state: { ...state, records: {} } };
      const page = recordsPage(state.records, {
        budget: READ_DEFAULT_BYTES,
        used: jsonBytes(frame),
        after,
        cursorOf: (key) => encodeCursor(listing, '', key),
      });
      const more = page.last === undefined ? {} : { nextCursor: encodeCursor(listing, '', page.last) };
      return { ...frame, state: { ...state, records: page.records }, ...more };
    },
  );
  defineTool(
    host,
    'checkpoint_restore',
    () => ({
      title: 'Restore a checkpoint',
      description: 'Restore a thread as saved (atomic). Returns records.',
      input: z
        .object({ checkpointId, ifRevision: z.number().int().min(0).optional().describe('Fail if changed since'), idempotencyKey })
        .strict(),
      output: z.object({ checkpointId: z.string(), thread: z.string(), run: z.string(), records: counter, budgetsKept: z.boolean() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    }),
    (args, _extra, call) => checkpoints.restore(args, call),
  );
  defineTool(
    host,
    'checkpoint_delete',
    () => ({
      title: 'Delete a checkpoint',
      description: 'Delete a checkpoint. Returns deleted.',
      input: z.object({ checkpointId, idempotencyKey }).strict(),
      output: z.object({ deleted: z.boolean() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    }),
    (args, _extra, call) => checkpoints.delete(args, call),
  );
}
