import * as z from 'zod';
import { UPDATE_OPS } from '../store/ops.js';
import {
  BATCH_MAX_OPS,
  LIST_DEFAULT_LIMIT,
  LIST_MAX_LIMIT,
  SNAPSHOT_DEFAULT_BYTES,
  SNAPSHOT_MAX_BYTES,
  WATCH_DEFAULT_MS,
  WATCH_MAX_MS,
  type KvService,
} from '../services/kv.js';
import { idempotencyKey, ifVersion, isoTime, json, jsonValue } from './common.js';
import { defineTool, withProgress, type ToolHost } from './define.js';
import { SCOPE_FORMS } from '../context.js';

// Shared argument schemas of the kv family. Semantic checks (key length, scope names, ranges) happen in the
// service so that they fail with SPEC error codes; the schemas give types and documentation.
const key = z.string().describe('The key: 1-512 characters, no control characters.');
const scope = z
  .string()
  .optional()
  .describe(`Where the key lives (default "global"): ${SCOPE_FORMS}.`);
const value = jsonValue;
const ttlSeconds = z.number().optional().describe('Expire the key this many seconds after the write.');
const updatedAt = isoTime.describe('ISO 8601 time of the last write');

/** Registers the kv family: state_get, state_set, state_delete, state_list, state_snapshot, state_update, state_batch, watch. */
export function registerKvTools(host: ToolHost, kv: KvService): void {
  defineTool(
    host,
    'state_get',
    {
      title: 'Read a key',
      description:
        'Read one key of shared state. Returns found:false (not an error) when the key does not exist. Use the returned version as ifVersion when you write it back.',
      input: z.object({ key, scope }).strict(),
      output: z.object({
        found: z.boolean(),
        value: json(value).optional(),
        version: z.number().int().optional(),
        updatedAt: updatedAt.optional(),
        updatedBy: z.string().optional().describe('agent that wrote it last'),
      }),
      annotations: { readOnlyHint: true },
    },
    (args) => kv.get(args),
  );

  defineTool(
    host,
    'state_set',
    {
      title: 'Write a key',
      description:
        'Write a JSON value under a key, replacing what was there. Pass ifVersion to write only if nobody changed it since you read it; on VERSION_CONFLICT read again and retry. Values are limited in size (VALUE_TOO_LARGE).',
      input: z.object({ key, value: json(value), scope, ifVersion, ttlSeconds, idempotencyKey }).strict(),
      output: z.object({
        version: z.number().int().describe('the key\'s new version'),
        revision: z.number().int().describe('the store revision after this write'),
      }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    },
    (args) => kv.set(args),
  );

  defineTool(
    host,
    'state_delete',
    {
      title: 'Delete a key',
      description: 'Delete a key. deleted:false means it did not exist. ifVersion makes the delete conditional.',
      input: z.object({ key, scope, ifVersion, idempotencyKey }).strict(),
      output: z.object({ deleted: z.boolean(), revision: z.number().int() }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true },
    },
    (args) => kv.delete(args),
  );

  defineTool(
    host,
    'state_list',
    {
      title: 'List keys',
      description: `List the keys of a scope in key order, ${LIST_DEFAULT_LIMIT} per page by default (at most ${LIST_MAX_LIMIT}), without values. Pass nextCursor back as cursor for the next page; no nextCursor means the end.`,
      input: z
        .object({
          scope,
          prefix: z.string().optional().describe('Only keys starting with this text (exact, case-sensitive).'),
          cursor: z.string().optional().describe('nextCursor from the previous page.'),
          limit: z.number().int().optional().describe(`Page size, 1-${LIST_MAX_LIMIT}.`),
        })
        .strict(),
      output: z.object({
        keys: z.array(z.object({ key: z.string(), version: z.number().int(), updatedAt })),
        nextCursor: z.string().optional(),
      }),
      annotations: { readOnlyHint: true },
    },
    (args) => kv.list(args),
  );

  defineTool(
    host,
    'state_snapshot',
    {
      title: 'Read many keys at once',
      description: `Read the values of many keys (a scope, or the keys starting with prefix) in one consistent read, bounded by maxBytes (default ${SNAPSHOT_DEFAULT_BYTES}) so it never floods your context. truncated:true means more keys exist: narrow the prefix or use state_list.`,
      input: z
        .object({
          scope,
          prefix: z.string().optional().describe('Only keys starting with this text.'),
          maxBytes: z.number().int().optional().describe(`Upper bound of the JSON size of entries, up to ${SNAPSHOT_MAX_BYTES}.`),
        })
        .strict(),
      output: z.object({
        entries: z.record(z.string(), json(value)),
        revision: z.number().int(),
        truncated: z.boolean(),
      }),
      annotations: { readOnlyHint: true },
    },
    (args) => kv.snapshot(args),
  );

  defineTool(
    host,
    'state_update',
    {
      title: 'Atomically update a key',
      description:
        'Change a key in one atomic step, safe when many agents write at once: increment (add a number), append (add one element to an array, or text to a string), merge (JSON merge patch into an object; null removes a field), add_to_set (add to an array unless already present). A missing key starts from 0, [] or {}.',
      input: z
        .object({
          key,
          op: z.enum(UPDATE_OPS).describe('increment | append | merge | add_to_set'),
          value: json(value).describe('The operand: a number for increment, an object for merge, any JSON otherwise.'),
          scope,
          ifVersion,
          ttlSeconds,
          idempotencyKey,
        })
        .strict(),
      output: z.object({
        value: json(value).describe('the value after the update'),
        version: z.number().int(),
        revision: z.number().int(),
      }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    },
    (args) => kv.update(args),
  );

  defineTool(
    host,
    'state_batch',
    {
      title: 'Apply several writes together',
      description: `Apply up to ${BATCH_MAX_OPS} sets, deletes and updates in one call. atomic (default true): all or none — if any fails (for example its ifVersion is stale), nothing is applied and the error names the operation. atomic:false applies each on its own and reports each result.`,
      input: z
        .object({
          ops: z
            .array(
              z
                .object({
                  op: z.enum(['set', 'delete', ...UPDATE_OPS]),
                  key,
                  value: json(value).optional().describe('Required for every op but delete.'),
                  scope,
                  ifVersion,
                  ttlSeconds,
                })
                .strict(),
            )
            .describe('The operations, applied in order.'),
          atomic: z.boolean().optional().describe('All or none (default true).'),
          idempotencyKey,
        })
        .strict(),
      output: z.object({
        results: z.array(
          z.object({
            key: z.string(),
            ok: z.boolean(),
            version: z.number().int().optional(),
            value: json(value).optional(),
            deleted: z.boolean().optional(),
            error: z
              .object({ code: z.string(), message: z.string(), details: z.record(z.string(), z.unknown()).optional() })
              .optional(),
          }),
        ),
        revision: z.number().int(),
      }),
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: false },
    },
    (args) => kv.batch(args),
  );

  defineTool(
    host,
    'watch',
    {
      title: 'Wait for a key to change',
      description: `Block until a key changes, instead of polling. Without afterVersion: returns at once if the key exists, else waits until it is set. With afterVersion (the version you last saw): waits until the key is written again or deleted (found:false). Gives up after timeoutMs (default ${WATCH_DEFAULT_MS}, max ${WATCH_MAX_MS}) with timedOut:true — then call watch again. Keep timeoutMs under your client's request timeout. To wait on a plan, pass its planId as key and scope "plan".`,
      input: z
        .object({
          key,
          scope,
          afterVersion: z.number().int().optional().describe('Wait for a version greater than this one.'),
          timeoutMs: z.number().int().optional().describe(`How long to wait, 0-${WATCH_MAX_MS} ms.`),
        })
        .strict(),
      output: z.object({
        found: z.boolean(),
        value: json(value).optional(),
        version: z.number().int().optional(),
        timedOut: z.boolean(),
      }),
      annotations: { readOnlyHint: true },
    },
    (args, extra) => withProgress(extra, host.progressIntervalMs, `waiting for "${args.key}"`, () => kv.watch(args, extra.signal)),
  );
}
