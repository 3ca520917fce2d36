// The state_changes tool: follow the board by revision instead of polling.
import * as z from 'zod';
import { CHANGES_DEFAULT_LIMIT, CHANGES_ENVELOPE_BYTES, CHANGES_MAX_LIMIT, type Change, type ChangesService } from '../services/changes.js';
import { cutToFit, cutUtf8, waitOf } from './bounds.js';
import { READ_DEFAULT_BYTES, waitMs } from './common.js';
import { defineTool, withProgress, type ToolHost } from './define.js';

/** Registers `state_changes` (part of the kv family). */
export function registerChangesTools(host: ToolHost, changes: ChangesService): void {
  defineTool(
    host,
    'state_changes',
    () => ({
      title: 'Follow changes',
      description:
        'Every change after afterRevision; one key: {tool:watch}. Waits waitMs, ≤50 s without progress token. Returns changes, revision.',
      input: z
        .object({
          afterRevision: z.number().int().min(0).optional(),
          scope: z.string().optional().describe('Default all; plan: plans'),
          prefix: z.string().optional(),
          limit: z.number().int().min(1).max(CHANGES_MAX_LIMIT).optional().describe(`Default ${CHANGES_DEFAULT_LIMIT}`),
          waitMs,
        })
        .strict(),
      output: z.object({
        changes: z.array(
          z.object({ scope: z.string(), key: z.string(), version: z.number().int(), revision: z.number().int(), deleted: z.boolean() }),
        ),
        revision: z.number().int().describe('pass back as afterRevision'),
        timedOut: z.boolean().optional(),
      }),
      annotations: { readOnlyHint: true },
    }),
    async (args, extra) => {
      const page = await withProgress(extra, host.progressIntervalMs, 'waiting for changes', () =>
        changes.changes(
          { ...args, waitMs: args.afterRevision === undefined ? 0 : waitOf(extra, args.waitMs), maxBytes: READ_DEFAULT_BYTES },
          extra.signal,
        ),
      );
      // A page ends at a revision boundary within the bound; a revision alone over it comes whole (never split, so
      // nothing is skipped), its longest keys cut short. (The envelope's `[]` are the list's own: counted once.)
      return { ...page, changes: cutToFit(page.changes, READ_DEFAULT_BYTES - CHANGES_ENVELOPE_BYTES + 2, cutKey) };
    },
  );
}

/** A change with its key cut to `room` bytes (ending in "…") when longer. */
const cutKey = (change: Change, room: number): Change => ({ ...change, key: cutUtf8(change.key, room) });
