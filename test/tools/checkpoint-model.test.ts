// A model-based test of checkpoints: seeded random writes, saves, deletes, pruning, restores, two servers (one in this
// process, one a child process) saving the same thread, restarts; every checkpoint kept reads back and restores
// exactly what the thread held when it was saved, on every shareable backend.
import { describe, expect, it } from 'vitest';
import { relativeKey, userDataRange } from '../../src/keyspace.js';
import { jsonBytes, sameJson } from '../../src/store/json-text.js';
import { applyUpdate, type UpdateOp } from '../../src/store/ops.js';
import { openBackend } from '../../src/store/open.js';
import type { Json } from '../../src/store/types.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { agentsClosedAfterEach, spawnAgent, type Agent, type Connected, type Spawned } from '../helpers.js';
import { closedAfterEachTest, rng } from '../model.js';
import { sharedStores } from '../stores.js';

const connect = agentsClosedAfterEach();
const closing = closedAfterEachTest();

// `BLACKBOARD_CHECKPOINT_MODEL=full`: 5 seeds of 300 steps per backend (about 3-4 minutes in all); by default 2 of 150
const FULL = process.env.BLACKBOARD_CHECKPOINT_MODEL === 'full';
const SEEDS = FULL ? [1, 2, 3, 4, 5] : [1, 2];
const OPS = FULL ? 300 : 150;
const KEEP = 5;
const SEP = '\u001f';

type Saved = { v: Json; ver: number; at: number; by: string; exp?: number };
type State = Map<string, Saved>;

const WORDS = ['alpha', 'beta', 'gamma', 'héllo', 'naïve', '中文', 'ключ', '😀', 'emoji 🎉 party', 'tab\there', 'quote"s', 'back\\slash'];

class Gen {
  constructor(readonly r: () => number) {}
  int(n: number): number {
    return Math.floor(this.r() * n);
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)];
  }
  chance(p: number): boolean {
    return this.r() < p;
  }
  text(words: number): string {
    return Array.from({ length: words }, () => this.pick(WORDS)).join(' ');
  }
  small(depth = 0): Json {
    const k = this.int(depth > 2 ? 4 : 7);
    if (k === 0) return this.int(1000) - 500;
    if (k === 1) return this.text(1 + this.int(4));
    if (k === 2) return this.pick([true, false, null, 0.5, 1e21]);
    if (k === 3) return '';
    if (k === 4) return Array.from({ length: this.int(4) }, () => this.small(depth + 1));
    const out: Record<string, Json> = {};
    for (let i = this.int(4); i > 0; i--) {
      const key = this.pick(['a', 'b', 'z', 'é', '10', '2', 'nested', '__proto__']);
      Object.defineProperty(out, key, { value: this.small(depth + 1), enumerable: true, writable: true, configurable: true });
    }
    return out;
  }
  element(): Json {
    const k = this.int(4);
    if (k === 0) return { role: this.pick(['user', 'assistant']), content: this.text(5 + this.int(200)) };
    if (k === 1) return this.text(1 + this.int(20));
    if (k === 2) return this.small();
    return { i: this.int(1e6), deep: { more: [this.small(), { x: this.text(3) }] } };
  }
  large(): Json {
    if (this.chance(0.5)) return this.text(2000 + this.int(4000));
    return Array.from({ length: 100 + this.int(200) }, () => this.element());
  }
  value(): Json {
    const k = this.int(10);
    if (k < 2) return this.large();
    if (k < 4) return Array.from({ length: this.int(6) }, () => this.element());
    return this.small();
  }
}

/** Every user record of the store, by relative key (`scope\u001fkey`). */
async function observe(store: VersionedStore): Promise<State> {
  const range = userDataRange(undefined);
  const out: State = new Map();
  let after: string | undefined;
  for (;;) {
    const { entries } = await store.list({ ...range, after, limit: 1000 });
    for (const [key, e] of entries) {
      out.set(relativeKey(undefined, key), {
        v: e.value,
        ver: e.version,
        at: e.updatedAt,
        by: e.updatedBy,
        ...(e.expiresAt !== undefined ? { exp: e.expiresAt } : {}),
      });
    }
    if (entries.length < 1000) return out;
    after = entries[entries.length - 1][0];
  }
}

const scopeOf = (rel: string): string => rel.slice(0, rel.indexOf(SEP));
const only = (state: State, scopes: string[]): State => new Map([...state].filter(([rel]) => scopes.includes(scopeOf(rel))));
const plain = (state: State): Record<string, Saved> => Object.fromEntries([...state].sort(([a], [b]) => (a < b ? -1 : 1)));

describe.each(sharedStores().map((s) => [s.name, s] as const))('checkpoints against a model on %s', (_name, shared) => {
  it.each(SEEDS)('seed %i: every kept checkpoint reads back and restores as saved', async (seed) => {
    const g = new Gen(rng(seed));
    const url = shared.fresh();
    const log: string[] = [];
    const note = (line: string) => {
      log.push(line);
      if (log.length > 40) log.shift();
    };

    const observer = new VersionedStore(await openBackend(url), { sweepIntervalMs: 0 });
    closing.push(() => observer.close());
    const inProcess = async (thread: string): Promise<Connected> => {
      const store = new VersionedStore(await openBackend(url), { sweepIntervalMs: 0 });
      const a = await connect({ store, config: { agent: 'a', thread, keepCheckpoints: KEEP } });
      closing.push(() => store.close());
      return a;
    };
    const child = async (): Promise<Spawned> => {
      const b = await spawnAgent(['--store', url, '--agent', 'a', '--thread', 'T', '--keep-checkpoints', String(KEEP)]);
      closing.push(() => b.close());
      return b;
    };
    let A: Agent = await inProcess('T');
    let B: Agent = await child();
    const C = await inProcess('U');
    let run = (await A.ok('whoami')).run as string;

    // the model: every user record's value; checkpoints saved, kept (oldest first) and gone
    const model = new Map<string, Json>();
    const saved = new Map<string, { run: string; records: State; family: unknown }>();
    let kept: string[] = [];
    const gone: string[] = [];
    const T = () => ['thread:T', `run:T:${run}`];

    const check = async (what: string): Promise<State> => {
      const now = await observe(observer);
      const values = Object.fromEntries([...now].map(([rel, r]) => [rel, r.v]));
      expect(values, `${what}: the store holds what the model says`).toEqual(Object.fromEntries(model));
      return now;
    };

    const write = async (who: Agent, scope: 'thread' | 'run' | 'global', key: string, thread = 'T') => {
      const rel = `${scope === 'thread' ? `thread:${thread}` : scope === 'run' ? `run:T:${run}` : 'global'}${SEP}${key}`;
      const current = model.get(rel);
      const ttl = g.chance(0.1) ? { ttlSeconds: 3600 } : {};
      // the log mostly grows, so that chains of appended parts pass 32
      const kind = key === 'log' && Array.isArray(current) && g.chance(0.7) ? 0 : g.int(10);
      if (kind < 4 && (current === undefined || Array.isArray(current) || typeof current === 'string')) {
        const value = typeof current === 'string' ? g.text(1 + g.int(30)) : g.element();
        note(`${scope}/${key} append ${jsonBytes(value)}B`);
        await who.ok('state_update', { key, scope, op: 'append', value });
        model.set(rel, applyUpdate('append', current, value));
        return;
      }
      if (kind === 4 && Array.isArray(current) && current.length > 1) {
        // a list edited in the middle, shrunk, or replaced by something else
        const how = g.int(3);
        const value: Json =
          how === 0
            ? current.map((e, i) => (i === Math.floor(current.length / 2) ? g.element() : e))
            : how === 1
              ? current.slice(0, g.int(current.length))
              : g.small();
        note(`${scope}/${key} edit ${how}`);
        await who.ok('state_set', { key, scope, value, ...ttl });
        model.set(rel, value);
        return;
      }
      const ops: Array<[UpdateOp, Json]> = [
        ['merge', { [g.pick(['a', 'b', 'nested'])]: g.chance(0.2) ? null : g.small() }],
        ['increment', g.int(20) - 5],
        ['add_to_set', g.small(2)],
      ];
      if (kind < 7) {
        const [op, value] = g.pick(ops);
        let next: Json | undefined;
        try {
          next = applyUpdate(op, current, value);
        } catch {}
        if (next !== undefined && jsonBytes(next) < 500_000) {
          note(`${scope}/${key} ${op}`);
          await who.ok('state_update', { key, scope, op, value, ...ttl });
          model.set(rel, next);
          return;
        }
      }
      if (kind === 9 && current !== undefined) {
        note(`${scope}/${key} delete`);
        await who.ok('state_delete', { key, scope });
        model.delete(rel);
        return;
      }
      const value = g.value();
      note(`${scope}/${key} set ${jsonBytes(value)}B`);
      await who.ok('state_set', { key, scope, value, ...ttl });
      model.set(rel, value);
    };

    const batch = async (who: Agent) => {
      const ops: Array<Record<string, unknown>> = [];
      const next = new Map(model);
      for (let i = 1 + g.int(5); i > 0; i--) {
        const scope = g.pick(['thread', 'run'] as const);
        const key = g.pick(scope === 'thread' ? ['log', 'cfg', 'n', 's'] : ['rlog', 'rn']);
        const rel = `${scope === 'thread' ? 'thread:T' : `run:T:${run}`}${SEP}${key}`;
        const current = next.get(rel);
        const k = g.int(4);
        if (k === 0) {
          ops.push({ op: 'set', key, scope, value: g.value() });
          next.set(rel, ops[ops.length - 1].value as Json);
        } else if (k === 1) {
          ops.push({ op: 'delete', key, scope });
          next.delete(rel);
        } else {
          const [op, value]: [UpdateOp, Json] = k === 2 ? ['append', g.element()] : ['increment', 1 + g.int(3)];
          try {
            next.set(rel, applyUpdate(op, current, value));
            ops.push({ op, key, scope, value });
          } catch {}
        }
      }
      if (ops.length === 0) return;
      note(`batch ${ops.map((o) => `${o.op} ${o.scope}/${o.key}`).join(', ')}`);
      await who.ok('state_batch', { ops });
      model.clear();
      for (const [k, v] of next) model.set(k, v);
    };

    /** Reads a checkpoint back through the tool (every page) and the service, and compares both with what was saved. */
    const readBack = async (who: Agent, id: string) => {
      const want = saved.get(id)!;
      const records: Record<string, Saved & { truncated?: boolean; bytes?: number }> = {};
      let cursor: string | undefined;
      let pages = 0;
      do {
        const page = await who.ok('checkpoint_list', { checkpointId: id, ...(cursor ? { cursor } : {}) });
        expect(page.checkpoints.map((c: { checkpointId: string }) => c.checkpointId)).toEqual([id]);
        expect([page.state.thread, page.state.run]).toEqual(['T', want.run]);
        for (const [rel, r] of Object.entries(page.state.records)) {
          expect(Object.hasOwn(records, rel), `${rel} twice`).toBe(false);
          records[rel] = r as Saved;
        }
        cursor = page.nextCursor;
        expect(++pages).toBeLessThan(1000);
      } while (cursor);
      const user = Object.fromEntries(Object.entries(records).filter(([rel]) => !rel.startsWith('~')));
      const wanted = plain(want.records);
      expect(Object.keys(user).sort(), `${id}: the keys read back`).toEqual(Object.keys(wanted));
      for (const [rel, r] of Object.entries(user)) {
        const { truncated, bytes, ...meta } = r;
        if (truncated) {
          expect(bytes, `${id} ${rel}: a preview's size`).toBe(jsonBytes(wanted[rel].v));
          expect({ ...meta, v: wanted[rel].v }, `${id} ${rel}`).toEqual(wanted[rel]);
        } else {
          expect(meta, `${id} ${rel}`).toEqual(wanted[rel]);
          expect(JSON.stringify(meta.v), `${id} ${rel}: the same text`).toBe(JSON.stringify(wanted[rel].v));
        }
      }
      // whole, through the service (the library's checkpoints.get)
      const whole = await (A as Connected).bb.services.checkpoints.get({ checkpointId: id });
      const all = whole.state.records;
      const got = plain(new Map(Object.entries(all).filter(([rel]) => !rel.startsWith('~')) as Array<[string, Saved]>));
      expect(got).toEqual(wanted);
      expect(JSON.stringify(got), `${id}: the same text`).toBe(JSON.stringify(wanted));
      expect(Object.fromEntries(Object.entries(all).filter(([rel]) => rel.startsWith('~')))).toEqual(want.family);
    };

    const save = async (who: Agent) => {
      const info = await who.ok('checkpoint_save', g.chance(0.3) ? { label: `s${log.length} ✓` } : {});
      note(`save ${info.checkpointId} by ${who === A ? 'A' : 'B'}`);
      expect(info.run).toBe(run);
      const now = await check('at a save');
      const whole = await (A as Connected).bb.services.checkpoints.get({ checkpointId: info.checkpointId });
      const family = Object.fromEntries(Object.entries(whole.state.records).filter(([rel]) => rel.startsWith('~')));
      saved.set(info.checkpointId, { run, records: only(now, T()), family });
      kept.push(info.checkpointId);
      while (kept.length > KEEP) gone.push(kept.shift()!);
      // what was saved reads back at once (now and then: a read rebuilds every value)
      if (g.chance(0.3)) await readBack(who, info.checkpointId);
    };

    const restore = async (who: Agent, id: string) => {
      const want = saved.get(id)!;
      note(`restore ${id} (run ${want.run}) by ${who === A ? 'A' : 'B'}`);
      const before = await check('before a restore');
      const scopes = ['thread:T', `run:T:${want.run}`];
      const leaving = `run:T:${run}`;
      const result = await who.ok('checkpoint_restore', { checkpointId: id });
      expect(result).toMatchObject({ checkpointId: id, thread: 'T', run: want.run });
      for (const rel of [...model.keys()]) if ([...scopes, leaving].includes(scopeOf(rel))) model.delete(rel);
      for (const [rel, r] of want.records) model.set(rel, r.v);
      run = want.run;
      const after = await check('after a restore');
      // the thread's records as saved; a version kept when the record was unchanged since, else above the current
      for (const [rel, r] of after) {
        if (!scopes.includes(scopeOf(rel))) {
          expect(r, `${rel}: not the thread's, untouched`).toEqual(before.get(rel));
          continue;
        }
        const w = want.records.get(rel)!;
        const { ver, ...rest } = r;
        const { ver: wver, ...wrest } = w;
        expect(rest, `${rel} restored`).toEqual(wrest);
        expect(JSON.stringify(r.v), `${rel}: restored as the same text`).toBe(JSON.stringify(w.v));
        const prev = before.get(rel);
        if (prev !== undefined && prev.ver === wver && sameJson(prev.v, w.v)) {
          expect(ver, `${rel}: unchanged, same version`).toBe(wver);
        } else {
          expect(ver, `${rel}: version`).toBeGreaterThanOrEqual(wver);
          if (prev !== undefined) expect(ver, `${rel}: version above`).toBeGreaterThan(prev.ver);
        }
      }
      for (const [rel] of before) if (!after.has(rel)) expect(scopes.concat(leaving), `${rel} removed`).toContain(scopeOf(rel));
      expect((await who.ok('whoami')).run).toBe(run);
    };

    const listed = async (who: Agent): Promise<string[]> => {
      const ids: string[] = [];
      let cursor: string | undefined;
      do {
        const page = await who.ok('checkpoint_list', { limit: 2, ...(cursor ? { cursor } : {}) });
        ids.push(...page.checkpoints.map((c: { checkpointId: string }) => c.checkpointId));
        cursor = page.nextCursor;
      } while (cursor);
      return ids;
    };

    try {
      for (let step = 0; step < OPS; step++) {
        const who = g.chance(0.5) ? A : B;
        const x = g.int(100);
        if (x < 40) {
          const scope = g.chance(0.75) ? 'thread' : 'run';
          await write(
            who,
            scope,
            g.pick(scope === 'thread' ? ['log', 'log', 'msgs', 'cfg', 'n', 'big', 's', 'ü-ключ 😀'] : ['rlog', 'rcfg', 'rn']),
          );
        } else if (x < 46) {
          await write(C, g.chance(0.5) ? 'thread' : 'global', g.pick(['log', 'other']), 'U');
        } else if (x < 52) {
          await batch(who);
        } else if (x < 72) {
          await save(who);
        } else if (x < 76 && kept.length > 0) {
          const id = g.pick(kept);
          note(`delete ${id}`);
          expect(await who.ok('checkpoint_delete', { checkpointId: id })).toEqual({ deleted: true });
          kept = kept.filter((k) => k !== id);
          gone.push(id);
        } else if (x < 84 && kept.length > 0) {
          await restore(who, g.pick(kept));
        } else if (x < 88 && kept.length > 0) {
          await readBack(who, g.pick(kept));
        } else if (x < 90 && gone.length > 0) {
          const id = g.pick(gone);
          expect((await who.err(g.pick(['checkpoint_restore', 'checkpoint_list', 'checkpoint_delete']), { checkpointId: id })).code).toBe(
            'NOT_FOUND',
          );
        } else if (x < 92) {
          note('run_start');
          const started = await who.ok('run_start', {});
          for (const rel of [...model.keys()]) if (scopeOf(rel) === `run:T:${run}`) model.delete(rel);
          run = started.run;
        } else if (x < 93) {
          // a restart (the child process killed): the server forgets the checkpoint it saved last
          if (g.chance(0.5)) {
            note('restart A');
            await (A as Connected).close();
            A = await inProcess('T');
          } else {
            note('restart B');
            (B as Spawned).kill();
            B = await child();
          }
        } else {
          await write(who, 'thread', 'log');
        }
      }
      await check('at the end');
      expect(await listed(A)).toEqual([...kept].reverse());
      expect(await listed(B)).toEqual([...kept].reverse());
      for (const id of kept) await readBack(g.chance(0.5) ? A : B, id);
      for (const id of gone) expect((await A.err('checkpoint_list', { checkpointId: id })).code).toBe('NOT_FOUND');
      for (const id of [...kept].sort(() => g.r() - 0.5)) await restore(g.chance(0.5) ? A : B, id);
    } catch (error) {
      console.error(`checkpoint model: seed ${seed} failed on ${shared.name}; the last steps:\n  ${log.join('\n  ')}`);
      throw error;
    }
  });
});
