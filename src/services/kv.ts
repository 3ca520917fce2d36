// The kv service: scoped, versioned key-value state — reads, writes, atomic updates, batches and watches.
import { BlackboardError, invalid, writing } from '../errors.js';
import { checkKey, idempotent, type CallOptions, resolveScope, writable, type ResolvedScope } from '../context.js';
import type { UpdateOp } from '../store/ops.js';
import type { Entry, StoreTx, VersionedStore } from '../store/versioned-store.js';
import type { Json } from '../store/types.js';
import { WATCH_DEFAULT_MS, checkIfVersion, checkOp, checkTimeout, ttl } from './arguments.js';
import { listPage, type ListedKey } from './kv-list.js';
import { snapshotPage } from './kv-snapshot.js';
import type { WriteGuard } from './run-guard.js';
import type { Session } from './session.js';
import { type BatchItemResult, type BatchOp, inOp, type PreparedOp, sameKeyConflict } from './kv-batch.js';

export const BATCH_MAX_OPS = 100;

export interface GetResult {
  found: boolean;
  value?: Json;
  version?: number;
  updatedAt?: string;
  updatedBy?: string;
}

/** The kv tool family: namespaced, scoped, versioned key-value state. No MCP types here. */
export class KvService {
  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    private readonly guard: WriteGuard = async () => {},
    /** `watch` with `scope: "plan"` watches the plan whose id is the key */
    private readonly planKey?: (planId: string) => string,
  ) {}

  private get who() {
    return this.session.identity;
  }

  private get keys() {
    return this.session.keys;
  }

  async get(args: { key: string; scope?: string }): Promise<GetResult> {
    await this.follow(args.scope);
    const scope = resolveScope(args.scope, this.who);
    const entry = await this.store.get(this.keys.data(scope.id, checkKey(args.key)));
    return describe(entry);
  }

  async set(
    args: {
      key: string;
      value: Json;
      scope?: string;
      ifVersion?: number;
      ttlSeconds?: number;
      idempotencyKey?: string;
    },
    call: CallOptions,
  ): Promise<{ version: number; revision: number }> {
    await this.follow(args.scope);
    const key = this.writeKey(args.key, args.scope);
    const ttlMs = ttl(args.ttlSeconds);
    checkIfVersion(args.ifVersion);
    const { result, revision } = await this.store.transact(
      async (tx) => {
        await this.guard(key.scope, tx);
        const entry = await writing('value', () =>
          tx.set(key.storage, args.value, { by: this.session.by, ifVersion: args.ifVersion, ttlMs }),
        );
        return { version: entry.version };
      },
      { ...idempotent(this.who, call, { ...args, scope: key.scope.label }), prefetch: [key.storage] },
    );
    return { version: result.version, revision };
  }

  async delete(
    args: {
      key: string;
      scope?: string;
      ifVersion?: number;
      idempotencyKey?: string;
    },
    call: CallOptions,
  ): Promise<{ deleted: boolean; revision: number }> {
    await this.follow(args.scope);
    const key = this.writeKey(args.key, args.scope);
    checkIfVersion(args.ifVersion);
    const { result, revision } = await this.store.transact(
      async (tx) => {
        await this.guard(key.scope, tx);
        return { deleted: await tx.delete(key.storage, { ifVersion: args.ifVersion }) };
      },
      { ...idempotent(this.who, call, { ...args, scope: key.scope.label }), prefetch: [key.storage] },
    );
    return { deleted: result.deleted, revision };
  }

  async update(
    args: {
      key: string;
      op: UpdateOp;
      value: Json;
      scope?: string;
      ifVersion?: number;
      ttlSeconds?: number;
      idempotencyKey?: string;
    },
    call: CallOptions,
  ): Promise<{ value: Json; version: number; revision: number }> {
    await this.follow(args.scope);
    const key = this.writeKey(args.key, args.scope);
    checkOp(args.op);
    checkIfVersion(args.ifVersion);
    const ttlMs = ttl(args.ttlSeconds);
    const { result, revision } = await this.store.transact(
      async (tx) => {
        await this.guard(key.scope, tx);
        const entry = await writing('value', () =>
          tx.update(key.storage, args.op, args.value, { by: this.session.by, ifVersion: args.ifVersion, ttlMs }),
        );
        return { value: entry.value, version: entry.version };
      },
      { ...idempotent(this.who, call, { ...args, scope: key.scope.label }), prefetch: [key.storage] },
    );
    return { ...result, revision };
  }

  /** Keys in order, `limit` a page (and, with `maxBytes`, within that much JSON), then `nextCursor`. */
  async list(args: { scope?: string; prefix?: string; cursor?: string; limit?: number; maxBytes?: number }): Promise<{
    keys: ListedKey[];
    nextCursor?: string;
  }> {
    await this.follow(args.scope);
    return listPage(this.store, this.keys, resolveScope(args.scope, this.who), args);
  }

  /**
   * Values of a scope (or prefix) in one consistent read, in key order, at most `maxBytes` of JSON per page, then
   * `nextCursor`. A value alone over `maxBytes` is listed in `skipped` with its size instead of stopping the listing.
   */
  async snapshot(args: { scope?: string; prefix?: string; maxBytes?: number; cursor?: string }): Promise<{
    entries: Record<string, Json>;
    revision: number;
    truncated: boolean;
    nextCursor?: string;
    skipped?: Array<{ key: string; bytes: number }>;
  }> {
    await this.follow(args.scope);
    return snapshotPage(this.store, this.keys, resolveScope(args.scope, this.who), args);
  }

  async batch(
    args: { ops: BatchOp[]; atomic?: boolean; idempotencyKey?: string },
    call: CallOptions,
  ): Promise<{
    results: BatchItemResult[];
    revision: number;
  }> {
    if (!Array.isArray(args.ops) || args.ops.length === 0 || args.ops.length > BATCH_MAX_OPS) {
      throw invalid(`ops must hold 1 to ${BATCH_MAX_OPS} operations.`, { path: 'ops' });
    }
    if (args.ops.some((op) => op?.scope === 'run')) await this.follow('run');
    const atomic = args.atomic ?? true;
    // An operation that cannot even be prepared (a bad key, a scope this caller may not write) fails the whole
    // atomic batch; in a non-atomic one it is reported in its own slot like any other failure.
    const prepared = args.ops.map((op, index): PreparedOp | { op: BatchOp; error: BlackboardError } => {
      try {
        return this.prepareBatchOp(op);
      } catch (error) {
        if (!(error instanceof BlackboardError)) throw error;
        if (!atomic) return { op, error: inOp(error, index) };
        throw new BlackboardError(error.code, `Operation #${index}: ${error.message} Nothing in the batch was applied.`, {
          index,
          ...inOp(error, index).details,
        });
      }
    });
    // a retry that spells out a default (atomic, scope global) is the same call
    const ops = args.ops.map((op, i) => {
      const ready = prepared[i];
      return 'error' in ready ? op : { ...op, scope: ready.resolved.label };
    });
    const idempotency = idempotent(this.who, call, { ...args, ops, atomic });
    if (atomic) {
      const { result, revision } = await this.store.transact(async (tx) => {
        const results: BatchItemResult[] = [];
        for (const [index, op] of (prepared as PreparedOp[]).entries()) {
          try {
            await this.guard(op.resolved, tx);
            results.push(await this.applyBatchOp(tx, op));
          } catch (error) {
            if (error instanceof BlackboardError && error.code === 'VERSION_CONFLICT') {
              // against a write of this same batch, the "current" version is one that will never be committed
              const earlier = (prepared as PreparedOp[]).findIndex((o, j) => j < index && o.storage === op.storage);
              if (earlier >= 0) throw sameKeyConflict(index, earlier, op);
            }
            if (error instanceof BlackboardError) {
              throw new BlackboardError(
                error.code,
                `Operation #${index} (${op.op} "${op.key}") failed, so nothing in the batch was applied: ${error.message}`,
                { index, ...inOp(error, index).details },
              );
            }
            throw error;
          }
        }
        return results;
      }, idempotency);
      return { results: result, revision };
    }
    const { result, revision } = await this.store.transact(async (outer) => {
      // Non-atomic: each operation stands alone; a failed one is reported in its slot and changes nothing.
      const results: BatchItemResult[] = [];
      for (const [index, op] of prepared.entries()) {
        if ('error' in op) {
          results.push({ key: op.op.key, ok: false, error: op.error.toJSON().error });
          continue;
        }
        try {
          results.push(
            await outer.savepoint(async () => {
              await this.guard(op.resolved, outer);
              return this.applyBatchOp(outer, op);
            }),
          );
        } catch (error) {
          if (!(error instanceof BlackboardError)) throw error;
          results.push({ key: op.key, ok: false, error: inOp(error, index).toJSON().error });
        }
      }
      return results;
    }, idempotency);
    return { results: result, revision };
  }

  async watch(
    args: { key: string; scope?: string; afterVersion?: number; waitMs?: number },
    signal?: AbortSignal,
  ): Promise<{ found: boolean; value?: Json; version?: number; timedOut: boolean }> {
    await this.follow(args.scope);
    const storage =
      args.scope === 'plan' && this.planKey
        ? this.planKey(args.key)
        : this.keys.data(resolveScope(args.scope, this.who).id, checkKey(args.key));
    const timeoutMs = checkTimeout(args.waitMs, WATCH_DEFAULT_MS, 'waitMs');
    if (args.afterVersion !== undefined) checkIfVersion(args.afterVersion, 'afterVersion');
    const { entry, timedOut } = await this.store.waitUntil(storage, changedSince(args.afterVersion), {
      timeoutMs,
      signal,
    });
    return { ...pick(entry), timedOut };
  }

  /** The run scope is the thread's current run: follow a run_start made by another connection first. */
  private async follow(scope: string | undefined): Promise<void> {
    if (scope === 'run') await this.session.refresh();
  }

  /** A write's target. Callers `follow` the scope first. */
  private writeKey(key: string, scopeArg: string | undefined): { scope: ResolvedScope; storage: string } {
    const scope = writable(resolveScope(scopeArg, this.who));
    return { scope, storage: this.keys.data(scope.id, checkKey(key)) };
  }

  private prepareBatchOp(op: BatchOp): PreparedOp {
    if (op.op !== 'set' && op.op !== 'delete') checkOp(op.op);
    if (op.op !== 'delete' && op.value === undefined) throw invalid(`${op.op} needs a value.`, { path: 'value' });
    checkIfVersion(op.ifVersion);
    const { scope, storage } = this.writeKey(op.key, op.scope);
    return { ...op, resolved: scope, storage, ttlMs: ttl(op.ttlSeconds) };
  }

  private async applyBatchOp(tx: StoreTx, op: PreparedOp): Promise<BatchItemResult> {
    const by = this.session.by;
    if (op.op === 'delete') {
      return { key: op.key, ok: true, deleted: await tx.delete(op.storage, { ifVersion: op.ifVersion }) };
    }
    if (op.op === 'set') {
      const entry = await writing('value', () => tx.set(op.storage, op.value as Json, { by, ifVersion: op.ifVersion, ttlMs: op.ttlMs }));
      return { key: op.key, ok: true, version: entry.version };
    }
    const update = op.op; // narrowed: neither set nor delete
    const entry = await writing('value', () =>
      tx.update(op.storage, update, op.value as Json, { by, ifVersion: op.ifVersion, ttlMs: op.ttlMs }),
    );
    return { key: op.key, ok: true, version: entry.version, value: entry.value };
  }
}

/**
 * The wake condition of `watch`: without `afterVersion` (or with 0, "I saw it absent"), "the key exists"; with it,
 * "the key's version is no longer that one" — greater, smaller (the caller passed a version from elsewhere), or gone.
 * Versions never repeat, so a delete-and-recreate is always a different version.
 */
export function changedSince(afterVersion: number | undefined): (entry: Entry | undefined) => boolean {
  if (afterVersion === undefined || afterVersion === 0) return (entry) => entry !== undefined;
  return (entry) => entry?.version !== afterVersion;
}

export function describe(entry: Entry | undefined): GetResult {
  if (!entry) return { found: false };
  return {
    found: true,
    value: entry.value,
    version: entry.version,
    updatedAt: new Date(entry.updatedAt).toISOString(),
    updatedBy: entry.updatedBy,
  };
}

function pick(entry: Entry | undefined): { found: boolean; value?: Json; version?: number } {
  return entry ? { found: true, value: entry.value, version: entry.version } : { found: false };
}

export { SNAPSHOT_DEFAULT_BYTES, SNAPSHOT_MAX_BYTES, SNAPSHOT_MAX_ROWS } from './kv-snapshot.js';
export { LIST_DEFAULT_LIMIT, LIST_MAX_LIMIT } from './kv-list.js';
