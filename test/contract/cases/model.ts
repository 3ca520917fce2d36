import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { BackendCase } from '../backends.js';
import { applyUpdate, type UpdateOp } from '../../../src/store/ops.js';
import { prefixEnd } from '../../../src/store/keys.js';
import type { Json } from '../../../src/store/types.js';

// Model-based check: random sequences of operations give the same results on every backend as on a plain Map.
type Op =
  | { kind: 'set'; key: string; value: Json; ifVersion?: number }
  | { kind: 'delete'; key: string; ifVersion?: number }
  | { kind: 'update'; key: string; op: UpdateOp; value: Json }
  | { kind: 'batch'; ops: Array<{ key: string; value: Json; ifVersion?: number }> }
  | { kind: 'list'; prefix: string };

const key = fc.constantFrom('a', 'a/1', 'a/2', 'a_b', 'aXb', 'A', 'b', '%', 'é');
const value = fc.oneof(
  fc.integer({ min: -5, max: 5 }),
  fc.constantFrom('x', 'y'),
  fc.constant([1]),
  fc.constant({ k: 1 }),
  fc.constant(null),
);
const ifVersion = fc.option(fc.integer({ min: 0, max: 3 }), { nil: undefined });
const op: fc.Arbitrary<Op> = fc.oneof(
  fc.record({ kind: fc.constant('set' as const), key, value, ifVersion }),
  fc.record({ kind: fc.constant('delete' as const), key, ifVersion }),
  fc.record({
    kind: fc.constant('update' as const),
    key,
    op: fc.constantFrom<UpdateOp>('increment', 'append', 'merge', 'add_to_set'),
    value,
  }),
  fc.record({ kind: fc.constant('batch' as const), ops: fc.array(fc.record({ key, value, ifVersion }), { minLength: 1, maxLength: 3 }) }),
  fc.record({ kind: fc.constant('list' as const), prefix: fc.constantFrom('', 'a', 'a/', 'a_', '%', 'A') }),
);

/** A deleted key stays as a tombstone that keeps its version: a re-create continues above it. */
type ModelEntry = { value: Json; version: number; deleted?: true };
const liveOf = (model: Map<string, ModelEntry>, k: string): ModelEntry | undefined => {
  const e = model.get(k);
  return e && !e.deleted ? e : undefined;
};

/** The reference: what each operation should do, on a Map. Returns a result or an error code. */
function applyModel(model: Map<string, ModelEntry>, o: Op): unknown {
  const check = (k: string, expected?: number): string | undefined => {
    const current = liveOf(model, k)?.version ?? 0;
    return expected !== undefined && expected !== current ? 'VERSION_CONFLICT' : undefined;
  };
  switch (o.kind) {
    case 'set': {
      const e = check(o.key, o.ifVersion);
      if (e) return { error: e };
      const version = (model.get(o.key)?.version ?? 0) + 1;
      model.set(o.key, { value: o.value, version });
      return { version };
    }
    case 'delete': {
      const e = check(o.key, o.ifVersion);
      if (e) return { error: e };
      const current = liveOf(model, o.key);
      if (current) model.set(o.key, { value: null, version: current.version, deleted: true });
      return { deleted: current !== undefined };
    }
    case 'update': {
      let next: Json;
      try {
        next = applyUpdate(o.op, liveOf(model, o.key)?.value, o.value);
      } catch (error) {
        return { error: (error as { code: string }).code };
      }
      const version = (model.get(o.key)?.version ?? 0) + 1;
      model.set(o.key, { value: next, version });
      return { version, value: next };
    }
    case 'batch': {
      const copy = new Map(model);
      const versions: number[] = [];
      for (const b of o.ops) {
        const r = applyModel(copy, { kind: 'set', ...b }) as { error?: string; version?: number };
        if (r.error) return { error: r.error };
        versions.push(r.version!);
      }
      model.clear();
      for (const [k, v] of copy) model.set(k, v);
      return { versions };
    }
    case 'list': {
      const keys = [...model.keys()].filter((k) => k.startsWith(o.prefix) && liveOf(model, k));
      return { keys: keys.sort((x, y) => (x < y ? -1 : x > y ? 1 : 0)) };
    }
  }
}

/** This file's cases, run for one backend. */
export function modelCases(backend: BackendCase): void {
  describe(`store contract: random operation sequences match a reference model (${backend.name})`, () => {
    it('every result, error and final state agrees', async () => {
      await fc.assert(
        fc.asyncProperty(fc.array(op, { minLength: 1, maxLength: 25 }), async (ops) => {
          const store = await backend.open();
          const model = new Map<string, ModelEntry>();
          try {
            for (const o of ops) {
              const expected = applyModel(model, o);
              let actual: unknown;
              try {
                switch (o.kind) {
                  case 'set':
                    actual = {
                      version: (await store.transact((tx) => tx.set(o.key, o.value, { by: 'm', ifVersion: o.ifVersion }))).result.version,
                    };
                    break;
                  case 'delete':
                    actual = { deleted: (await store.transact((tx) => tx.delete(o.key, { ifVersion: o.ifVersion }))).result };
                    break;
                  case 'update': {
                    const { result } = await store.transact((tx) => tx.update(o.key, o.op, o.value, { by: 'm' }));
                    actual = { version: result.version, value: result.value };
                    break;
                  }
                  case 'batch': {
                    const { result } = await store.transact(async (tx) => {
                      const versions: number[] = [];
                      for (const b of o.ops) versions.push((await tx.set(b.key, b.value, { by: 'm', ifVersion: b.ifVersion })).version);
                      return { versions };
                    });
                    actual = result;
                    break;
                  }
                  case 'list': {
                    const { entries } = await store.list({ lo: o.prefix, hi: prefixEnd(o.prefix), limit: 100 });
                    actual = { keys: entries.map(([k]) => k) };
                    break;
                  }
                }
              } catch (error) {
                actual = { error: (error as { code?: string }).code ?? String(error) };
              }
              expect(actual, JSON.stringify(o)).toEqual(expected);
            }
            const { entries } = await store.list({ lo: '', hi: prefixEnd(''), limit: 100 });
            expect(Object.fromEntries(entries.map(([k, e]) => [k, { value: e.value, version: e.version }]))).toEqual(
              Object.fromEntries([...model].filter(([, e]) => !e.deleted)),
            );
          } finally {
            await store.close();
          }
        }),
        { numRuns: backend.name === 'memory' ? 200 : 60 },
      );
    });
  });
}
