// The kv tools: state_get, state_set, state_delete, state_list, state_snapshot, state_update, state_batch, watch.
import * as z from 'zod';
import { UPDATE_OPS } from '../store/ops.js';
import {
  BATCH_MAX_OPS,
  LIST_DEFAULT_LIMIT,
  LIST_MAX_LIMIT,
  SNAPSHOT_DEFAULT_BYTES,
  SNAPSHOT_MAX_BYTES,
  type KvService,
} from '../services/kv.js';
import { WATCH_DEFAULT_MS, WATCH_MAX_MS } from '../services/arguments.js';
import { counter, idempotencyKey, ifVersion, isoTime, json, jsonValue } from './common.js';
import { defineTool, withProgress, type ToolHost } from './define.js';
import { SCOPE_FORMS } from '../context.js';

// Shared argument schemas of the kv family. Semantic checks (key length, scope names) happen in the service so
// that they fail with the right error codes; the schemas carry types, bounds and a word of documentation.
const key = z.string().describe('1-512 chars');
const scope = z.string().optional().describe('Default global');
const value = json(jsonValue);
const ttlSeconds = z.number().positive().optional().describe('Seconds to live');
const prefix = z.string().optional().describe('Key prefix');
const write = { readOnlyHint: false, destructiveHint: true } as const;

/** Registers the kv family: state_get, state_set, state_delete, state_list, state_snapshot, state_update, state_batch, watch. */
export function registerKvTools(host: ToolHost, kv: KvService): void {
  defineTool(
    host,
    'state_get',
    {
      title: 'Read a key',
      description: 'Read a key; found:false if absent. Write it back with its version as ifVersion.',
      input: z.object({ key, scope: scope.describe(`Default global; or ${SCOPE_FORMS.replace('global, ', '')}`) }).strict(),
      output: z.object({ found: z.boolean(), value: value.optional(), version: counter.optional(), updatedAt: isoTime.optional(), updatedBy: z.string().optional() }),
      annotations: { readOnlyHint: true },
    },
    (args) => kv.get(args),
  );

  defineTool(
    host,
    'state_set',
    {
      title: 'Write a key',
      description: 'Write a value. ifVersion: only if unchanged since read, else VERSION_CONFLICT (read again, retry).',
      input: z.object({ key, value, scope, ifVersion, ttlSeconds, idempotencyKey }).strict(),
      output: z.object({ version: counter, revision: counter }),
      annotations: { ...write, idempotentHint: false },
    },
    (args, _extra, call) => kv.set(args, call),
  );

  defineTool(
    host,
    'state_delete',
    {
      title: 'Delete a key',
      description: 'Delete a key (deleted:false if absent).',
      input: z.object({ key, scope, ifVersion, idempotencyKey }).strict(),
      output: z.object({ deleted: z.boolean(), revision: counter }),
      annotations: { ...write, idempotentHint: true },
    },
    (args, _extra, call) => kv.delete(args, call),
  );

  defineTool(
    host,
    'state_list',
    {
      title: 'List keys',
      description: 'A scope\'s keys in order, with versions (no values); pass nextCursor back as cursor.',
      input: z
        .object({
          scope,
          prefix,
          cursor: z.string().optional().describe('nextCursor'),
          limit: z.number().int().min(1).max(LIST_MAX_LIMIT).optional().describe(`Default ${LIST_DEFAULT_LIMIT}`),
        })
        .strict(),
      output: z.object({ keys: z.array(z.object({ key: z.string(), version: counter, updatedAt: isoTime })), nextCursor: z.string().optional() }),
      annotations: { readOnlyHint: true },
    },
    (args) => kv.list(args),
  );

  defineTool(
    host,
    'state_snapshot',
    {
      title: 'Read many keys at once',
      description: 'Many values (scope or prefix) in one consistent read, at most maxBytes (truncated:true: narrow it).',
      input: z
        .object({ scope, prefix, maxBytes: z.number().int().min(2).max(SNAPSHOT_MAX_BYTES).optional().describe(`Default ${SNAPSHOT_DEFAULT_BYTES}`) })
        .strict(),
      output: z.object({ entries: z.record(z.string(), value), revision: counter, truncated: z.boolean() }),
      annotations: { readOnlyHint: true },
    },
    (args) => kv.snapshot(args),
  );

  defineTool(
    host,
    'state_update',
    {
      title: 'Atomically update a key',
      description: 'Atomic, safe with many writers: increment, append (array/string), merge (object; null deletes), add_to_set. Missing keys start empty.',
      input: z
        .object({
          key,
          op: z.enum(UPDATE_OPS).describe('The change'),
          value: value.describe('Operand'),
          scope,
          ifVersion,
          ttlSeconds,
          idempotencyKey,
        })
        .strict(),
      output: z.object({ value, version: counter, revision: counter }),
      annotations: { ...write, idempotentHint: false },
    },
    (args, _extra, call) => kv.update(args, call),
  );

  defineTool(
    host,
    'state_batch',
    {
      title: 'Apply several writes together',
      description: `Up to ${BATCH_MAX_OPS} sets, deletes, updates in order, all or none (atomic:false: each alone, errors per slot).`,
      input: z
        .object({
          ops: z
            .array(
              // Described as a whole: each field means what it means in the single-key tools.
              z
                .object({
                  op: z.enum(['set', 'delete', ...UPDATE_OPS]),
                  key: z.string(),
                  value: json(z.unknown()).optional(),
                  scope: z.string().optional(),
                  ifVersion: z.number().int().min(0).optional(),
                  ttlSeconds: z.number().positive().optional(),
                })
                .strict(),
            )
            .describe('{op, key, value (not for delete), scope, ifVersion, ttlSeconds}, in order'),
          atomic: z.boolean().optional().describe('Default true'),
          idempotencyKey,
        })
        .strict(),
      output: z.object({
        results: z.array(
          z.object({
            key: z.string(),
            ok: z.boolean(),
            version: counter.optional(),
            value: value.optional(),
            deleted: z.boolean().optional(),
            error: z.object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()).optional() }).optional(),
          }),
        ),
        revision: counter,
      }),
      annotations: { ...write, idempotentHint: false },
    },
    async (args, _extra, call) => {
      const result = await kv.batch(args, call);
      for (const slot of result.results) if (slot.error) slot.error.message = host.render(slot.error.message);
      return result;
    },
  );

  defineTool(
    host,
    'watch',
    {
      title: 'Wait for a key to change',
      description: 'Block until a key exists or, with afterVersion, its version differs: no polling. timedOut:true: call again.',
      input: z
        .object({
          key,
          scope: scope.describe('Default global. "plan" for a plan ({tool:plan_get}).'),
          afterVersion: z.number().int().min(0).optional().describe('Last version seen'),
          timeoutMs: z.number().int().min(0).max(WATCH_MAX_MS).optional().describe(`Default ${WATCH_DEFAULT_MS}`),
        })
        .strict(),
      output: z.object({ found: z.boolean(), value: value.optional(), version: counter.optional(), timedOut: z.boolean() }),
      annotations: { readOnlyHint: true },
    },
    (args, extra) => withProgress(extra, host.progressIntervalMs, `waiting for "${args.key}"`, () => kv.watch(args, extra.signal)),
  );
}
