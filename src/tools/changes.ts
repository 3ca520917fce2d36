// The state_changes tool: follow the board by revision instead of polling.
import * as z from 'zod';
import { CHANGES_DEFAULT_LIMIT, CHANGES_MAX_LIMIT, type ChangesService } from '../services/changes.js';
import { WATCH_MAX_MS } from '../services/arguments.js';
import { defineTool, withProgress, type ToolHost } from './define.js';

/** Registers `state_changes` (part of the kv family). */
export function registerChangesTools(host: ToolHost, changes: ChangesService): void {
  defineTool(
    host,
    'state_changes',
    {
      title: 'Follow changes',
      description: `Changes after afterRevision, oldest first (without it: the current revision only); pass the returned revision back. REVISION_COMPACTED: start over from {tool:state_snapshot}.`,
      input: z
        .object({
          afterRevision: z.number().int().min(0).optional().describe('Last revision seen'),
          scope: z.string().optional().describe('Default all. "plan" for plans ({tool:plan_get}).'),
          prefix: z.string().optional().describe('Key prefix'),
          limit: z.number().int().min(1).max(CHANGES_MAX_LIMIT).optional().describe(`Default ${CHANGES_DEFAULT_LIMIT}`),
          waitMs: z.number().int().min(0).max(WATCH_MAX_MS).optional().describe('Wait this long for one'),
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
