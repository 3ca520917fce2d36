// The state_changes tool: follow the board by revision instead of polling.
import * as z from 'zod';
import { CHANGES_DEFAULT_LIMIT, CHANGES_MAX_LIMIT, type ChangesService } from '../services/changes.js';
import { WATCH_MAX_MS } from '../services/kv.js';
import { defineTool, withProgress, type ToolHost } from './define.js';

/** Registers `state_changes` (part of the kv family). */
export function registerChangesTools(host: ToolHost, changes: ChangesService): void {
  defineTool(
    host,
    'state_changes',
    {
      title: 'Follow changes',
      description: `What changed after a revision, oldest first: call without afterRevision to get a starting revision, then pass each returned revision back. waitMs blocks until something changes. REVISION_COMPACTED: re-read with state_snapshot and follow from its revision.`,
      input: z
        .object({
          afterRevision: z.number().int().min(0).optional().describe('Return changes after this revision.'),
          scope: z.string().optional().describe('Only this scope ("plan" for plans).'),
          prefix: z.string().optional().describe('Only keys starting with this.'),
          limit: z.number().int().min(1).max(CHANGES_MAX_LIMIT).optional().describe(`Default ${CHANGES_DEFAULT_LIMIT}.`),
          waitMs: z.number().int().min(0).max(WATCH_MAX_MS).optional().describe('Wait up to this long for a change.'),
        })
        .strict(),
      output: z.object({
        changes: z.array(
          z.object({ scope: z.string(), key: z.string(), version: z.number().int(), revision: z.number().int(), deleted: z.boolean() }),
        ),
        revision: z.number().int().describe('pass back as afterRevision'),
      }),
      annotations: { readOnlyHint: true },
    },
    (args, extra) =>
      withProgress(extra, host.progressIntervalMs, 'waiting for changes', () => changes.changes(args, extra.signal)),
  );
}
