// The kv tools: state_get, state_set, state_delete, state_list, state_snapshot, state_update, state_batch, watch.
import * as z from 'zod';
import { UPDATE_OPS } from '../store/ops.js';
import type { BatchItemResult } from '../services/kv-batch.js';
import { LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT, SNAPSHOT_DEFAULT_BYTES, SNAPSHOT_MAX_BYTES, type KvService } from '../services/kv.js';
import { jsonBytes } from '../store/json-text.js';
import {
  READ_DEFAULT_BYTES,
  UPDATE_ECHO_BYTES,
  bounded,
  counter,
  cursor,
  idempotencyKey,
  ifVersion,
  isoTime,
  json,
  jsonValue,
  maxBytes,
  scope,
  waitMs,
} from './common.js';
import { boundValue, cutToFit, cutUtf8, valuesWithin, waitOf } from './bounds.js';
import { defineTool, withProgress, type ToolHost } from './define.js';

// Shared argument schemas of the kv family. Semantic checks (key length, scope names) happen in the service so
// that they fail with the right error codes; the schemas carry types, bounds and a word of documentation.
const key = z.string();
const value = json(jsonValue);
const ttlSeconds = z.number().min(0.001).optional();
const prefix = z.string().optional();
const write = { readOnlyHint: false, destructiveHint: true } as const;

/** Registers the kv family: state_get, state_set, state_delete, state_list, state_snapshot, state_update, state_batch, watch. */
export function registerKvTools(host: ToolHost, kv: KvService): void {
  defineTool(
    host,
    'state_get',
    () => ({
      title: 'Read a key',
      description: 'Read a key; to wait for a change: {tool:watch}. Returns value, version (for ifVersion), a preview over maxBytes.',
      input: z.object({ key, scope, maxBytes }).strict(),
      output: z.object({
        found: z.boolean(),
        value: value.optional(),
        version: counter.optional(),
        updatedAt: isoTime.optional(),
        updatedBy: z.string().optional(),
        ...bounded,
      }),
      annotations: { readOnlyHint: true },
    }),
    async (args) => {
      const got = await kv.get(args);
      return got.found ? { ...got, ...boundValue(got.value!, args.maxBytes) } : got;
    },
  );

  defineTool(
    host,
    'state_set',
    () => ({
      title: 'Write a key',
      description: 'Write a key (ifVersion: if unchanged). Counters, lists, merges: {tool:state_update}. Returns version, revision.',
      input: z.object({ key, value, scope, ifVersion, ttlSeconds, idempotencyKey }).strict(),
      output: z.object({ version: counter, revision: counter }),
      annotations: { ...write, idempotentHint: false },
    }),
    (args, _extra, call) => kv.set(args, call),
  );

  defineTool(
    host,
    'state_delete',
    () => ({
      title: 'Delete a key',
      description: 'Delete a key. Returns deleted (false: absent), revision.',
      input: z.object({ key, scope, ifVersion, idempotencyKey }).strict(),
      output: z.object({ deleted: z.boolean(), revision: counter }),
      annotations: { ...write, idempotentHint: true },
    }),
    (args, _extra, call) => kv.delete(args, call),
  );

  defineTool(
    host,
    'state_list',
    () => ({
      title: 'List keys',
      description: 'List keys (values: {tool:state_snapshot}). Returns key, version, bytes each; nextCursor.',
      input: z
        .object({
          scope,
          prefix,
          cursor,
          limit: z.number().int().min(1).max(LIST_MAX_LIMIT).optional().describe(`Default ${LIST_DEFAULT_LIMIT}`),
        })
        .strict(),
      output: z.object({
        keys: z.array(z.object({ key: z.string(), version: counter, updatedAt: isoTime, bytes: counter })),
        nextCursor: z.string().optional(),
      }),
      annotations: { readOnlyHint: true },
    }),
    (args) => kv.list({ ...args, maxBytes: READ_DEFAULT_BYTES }),
  );

  defineTool(
    host,
    'state_snapshot',
    () => ({
      title: 'Read many keys at once',
      description: 'Many values, one consistent read, maxBytes a page. Returns entries, revision, nextCursor, skipped.',
      input: z
        .object({
          scope,
          prefix,
          maxBytes: z.number().int().min(64).max(SNAPSHOT_MAX_BYTES).optional().describe(`Default ${SNAPSHOT_DEFAULT_BYTES}`),
          cursor,
        })
        .strict(),
      output: z.object({
        entries: z.record(z.string(), value),
        revision: counter,
        truncated: z.boolean(),
        nextCursor: z.string().optional(),
        skipped: z.array(z.object({ key: z.string(), bytes: counter })).optional(),
      }),
      annotations: { readOnlyHint: true },
    }),
    (args) => kv.snapshot(args),
  );

  defineTool(
    host,
    'state_update',
    () => ({
      title: 'Atomically update a key',
      description: 'Atomic increment, append, merge (null drops), add_to_set; absent: empty. Returns value, version.',
      input: z
        .object({
          key,
          op: z.enum(UPDATE_OPS),
          value,
          scope,
          ifVersion,
          ttlSeconds,
          idempotencyKey,
        })
        .strict(),
      output: z.object({ value, version: counter, revision: counter, ...bounded }),
      annotations: { ...write, idempotentHint: false },
    }),
    async (args, _extra, call) => {
      const updated = await kv.update(args, call);
      return { ...updated, ...boundValue(updated.value, UPDATE_ECHO_BYTES) };
    },
  );

  defineTool(
    host,
    'state_batch',
    () => ({
      title: 'Apply several writes together',
      description: 'Up to 100 sets, deletes, updates, all or none (atomic:false: each alone). Returns results, revision.',
      input: z
        .object({
          ops: z.array(
            // Described as a whole: each field means what it means in the single-key tools.
            z
              .object({
                op: z.enum(['set', 'delete', ...UPDATE_OPS]),
                key: z.string(),
                value: json(jsonValue).optional(),
                scope: z.string().optional(),
                ifVersion: z.number().int().min(0).optional(),
                ttlSeconds: z.number().min(0.001).optional(),
              })
              .strict(),
          ),
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
    }),
    async (args, _extra, call) => {
      const result = await kv.batch(args, call);
      for (const slot of result.results) if (slot.error) slot.error.message = host.render(slot.error.message);
      return { ...result, results: resultsWithin(valuesWithin(result.results)) };
    },
  );

  defineTool(
    host,
    'watch',
    () => ({
      title: 'Wait for a key to change',
      description:
        'Wait for a key to exist or change after afterVersion (scope plan: plan id), waitMs, ≤50 s without progress token. Returns value, version, timedOut.',
      input: z
        .object({
          key,
          scope,
          afterVersion: z.number().int().min(0).optional().describe('Last version seen'),
          waitMs,
          maxBytes,
        })
        .strict(),
      output: z.object({ found: z.boolean(), value: value.optional(), version: counter.optional(), ...bounded, timedOut: z.boolean() }),
      annotations: { readOnlyHint: true },
    }),
    async (args, extra) => {
      const seen = await withProgress(extra, host.progressIntervalMs, `waiting for "${args.key}"`, () =>
        kv.watch({ ...args, waitMs: waitOf(extra, args.waitMs) }, extra.signal),
      );
      return seen.found ? { ...seen, ...boundValue(seen.value!, args.maxBytes) } : seen;
    },
  );
}

/** A batch reply's JSON besides its results, at most: `{"results":[],"revision":N}`. */
const BATCH_ENVELOPE_BYTES = jsonBytes({ results: [], revision: Number.MAX_SAFE_INTEGER });

/**
 * A batch's results within one read's size, each in the place of its operation: when long keys or many failures
 * would take the reply over, the longest keys and error messages are cut short (ending in "…"), and a value or a
 * conflict's current value larger than their common room is left out (read it with state_get).
 */
function resultsWithin(results: BatchItemResult[]): BatchItemResult[] {
  // the envelope's `[]` are the list's own: counted once
  return cutToFit(results, READ_DEFAULT_BYTES - BATCH_ENVELOPE_BYTES + 2, (result, room) => {
    const { key, value, error, ...rest } = result;
    const cut: BatchItemResult = { key: cutUtf8(key, room), ...rest };
    if (value !== undefined && jsonBytes(value) <= room) cut.value = value;
    if (error) {
      const { current, ...details } = error.details ?? {};
      const kept = current !== undefined && jsonBytes(current) <= room ? { ...details, current } : details;
      cut.error = {
        code: error.code,
        message: cutUtf8(error.message, room),
        ...(error.details ? { details: kept } : {}),
      };
    }
    return cut;
  });
}
