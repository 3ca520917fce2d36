// A model-based test of the key-value state and its change feed: seeded rounds of concurrent writes (sets, updates,
// deletes, batches, ifVersion, idempotent retries) from three clients — on a shared backend one of them a child
// process — while cursors walk `state_list` and `state_changes` and watches wait. Every acknowledged write is seen by
// later reads from every client, the feed holds each one exactly once in revision order with no gap between pages,
// conflicts change nothing, walks see each lasting key once, watches never go back, subscribers hear of every change,
// and a cursor behind a pruned change log gets REVISION_COMPACTED, never a silent skip.
import { describe, expect, it } from 'vitest';
import type { UpdateOp } from '../../src/store/ops.js';
import { openBackend } from '../../src/store/open.js';
import { MemoryBackend } from '../../src/store/memory/backend.js';
import type { Json } from '../../src/store/types.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { agentsClosedAfterEach, sleep, spawnAgent, type Agent, type Connected, type ToolError } from '../helpers.js';
import { closedAfterEachTest, rng } from '../model.js';
import { sharedStores } from '../stores.js';

const connect = agentsClosedAfterEach();
const closing = closedAfterEachTest();

// `BLACKBOARD_KV_MODEL=full`: 5 seeds of 150 rounds per backend; by default 1 of 60
const FULL = process.env.BLACKBOARD_KV_MODEL === 'full';
const SEEDS = FULL ? [1, 2, 3, 4, 5] : [1];
const ROUNDS = FULL ? 150 : 60;

// Each key keeps one type, so that every update applies whichever order concurrent writes commit in: `c/` counters,
// `l/` lists, `o/` objects. `s/` keys are made first and never deleted: a listing walk must meet each of them once.
const STABLE = ['s/c/0', 's/l/1', 's/o/2', 's/c/ü', 's/l/😀'];
const VOLATILE = ['c/a', 'c/ключ', 'l/a', 'l/b', 'o/a', 'o/é', 'c/z', 'l/中文'];
const KEYS = [...STABLE, ...VOLATILE];
const typeOf = (key: string): 'c' | 'l' | 'o' => key.replace(/^s\//, '')[0] as 'c' | 'l' | 'o';

type Ack = {
  who: string;
  call?: number;
  key: string;
  revision: number;
  version?: number;
  deleted: boolean;
  value?: Json;
  ifVersion?: number;
};
type Change = { scope: string; key: string; version: number; revision: number; deleted: boolean };
type Current = { value: Json; version: number };

const uriOf = (key: string) => `blackboard://_default/global/${encodeURIComponent(key)}`;

const stores: Array<{ name: string; fresh?: () => string }> = [{ name: 'memory' }, ...sharedStores()];

describe.each(stores.map((s) => [s.name, s] as const))('the kv state and its change feed against a model on %s', (name, spec) => {
  it.each(SEEDS)(
    'seed %i: acknowledged writes are seen, fed once in order, conflicts change nothing',
    async (seed) => {
      const r = rng(seed);
      const int = (n: number) => Math.floor(r() * n);
      const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
      const log: string[] = [];
      const note = (line: string) => {
        log.push(line);
        if (log.length > 60) log.shift();
      };

      // A: in this process, 2025 protocol (resources/subscribe), on the store the test sweeps with a 1 ms retention;
      // B: a child process on a shared backend (2026 protocol, subscriptions/listen); C: in this process, its own store.
      const url = spec.fresh?.();
      const open = async (): Promise<VersionedStore> => {
        const store = new VersionedStore(url ? await openBackend(url) : new MemoryBackend(), { sweepIntervalMs: 0, changeRetentionMs: 1 });
        closing.push(() => store.close());
        return store;
      };
      const storeA = await open();
      const A: Connected = await connect({ store: storeA, era: 'legacy', config: { agent: 'a', thread: 'TA' } });
      const B: Agent = url
        ? await (async () => {
            const b = await spawnAgent(['--store', url, '--agent', 'b', '--thread', 'TB'], {}, undefined, 'modern');
            closing.push(() => b.close());
            return b;
          })()
        : await connect({ store: storeA, era: 'modern', config: { agent: 'b', thread: 'TB' } });
      const C: Agent = await connect({ store: url ? await open() : storeA, era: 'modern', config: { agent: 'c', thread: 'TC' } });
      const clients: Array<[string, Agent]> = [
        ['A', A],
        ['B', B],
        ['C', C],
      ];

      // the model: each key's value and version; every value a key has had, by version; the acknowledged changes
      const model = new Map<string, Current>();
      const lastVersion = new Map<string, number>();
      const history = new Map<string, Map<number, Json>>();
      const expected = new Map<string, Ack>(); // by `revision key`
      let serial = 0;

      // subscribers: A follows two keys with resources/subscribe, B two with subscriptions/listen
      const legacyKeys = ['c/a', 's/l/1'];
      // (subscriptions/listen is served by the stdio and HTTP transports: on memory:// B is in this process, unheard)
      const listenKeys = url ? ['l/a', 'o/é'] : [];
      const heard = new Map<string, number[]>();
      const hear = (who: string) => (n: { params: { uri: string; revision?: number; _meta?: Record<string, unknown> } }) => {
        const revision = n.params._meta?.['blackboard/revision'] as number;
        const list = heard.get(`${who} ${n.params.uri}`) ?? [];
        list.push(revision);
        heard.set(`${who} ${n.params.uri}`, list);
      };
      A.client.setNotificationHandler('notifications/resources/updated', hear('A') as never);
      B.client.setNotificationHandler('notifications/resources/updated', hear('B') as never);
      for (const key of legacyKeys) await A.client.subscribeResource({ uri: uriOf(key) });
      if (listenKeys.length > 0) await B.client.listen({ resourceSubscriptions: listenKeys.map(uriOf) });
      const listenFrom = (await C.ok('state_changes', {})).revision as number;

      const record = (ack: Ack) => {
        const id = `${ack.revision} ${ack.key}`;
        expect(expected.has(id), `${id}: two acknowledged writes of one key at one revision`).toBe(false);
        expected.set(id, ack);
      };

      /** Applies the effective acknowledged writes of a round in revision order, checking each against the model. */
      const apply = (acks: Ack[]) => {
        const revisions = new Map<number, number | undefined>();
        for (const ack of acks) {
          expect(
            !revisions.has(ack.revision) || revisions.get(ack.revision) === ack.call,
            `revision ${ack.revision} given to two calls`,
          ).toBe(true);
          revisions.set(ack.revision, ack.call);
        }
        for (const ack of [...acks].sort((x, y) => x.revision - y.revision)) {
          const before = model.get(ack.key);
          const floor = lastVersion.get(ack.key) ?? 0;
          if (ack.ifVersion !== undefined) expect(before?.version ?? 0, `${ack.key}: ifVersion ${ack.ifVersion} held`).toBe(ack.ifVersion);
          if (ack.deleted) {
            expect(before, `${ack.key}: deleted at ${ack.revision}, so it existed`).toBeDefined();
            model.delete(ack.key);
          } else {
            expect(ack.version!, `${ack.key}: versions only grow`).toBeGreaterThan(floor);
            model.set(ack.key, { value: ack.value!, version: ack.version! });
            lastVersion.set(ack.key, ack.version!);
            if (!history.has(ack.key)) history.set(ack.key, new Map());
            history.get(ack.key)!.set(ack.version!, ack.value!);
          }
          record(ack);
        }
      };

      const fresh = (key: string): Json => {
        const n = ++serial;
        const t = typeOf(key);
        return t === 'c' ? n : t === 'l' ? [`v${n}`] : { n, w: pick(['x', 'ü', '😀']) };
      };
      const updateOf = (key: string): [UpdateOp, Json] => {
        const t = typeOf(key);
        const n = ++serial;
        if (t === 'c') return ['increment', 1 + int(9)];
        if (t === 'l') return [pick(['append', 'add_to_set'] as const), `e${n}`];
        return ['merge', { [pick(['a', 'b', 'é'])]: n, ...(r() < 0.3 ? { n: null } : {}) }];
      };
      /** A version the key can never have again (versions only grow), or undefined when there is none. */
      const staleVersion = (key: string): number | undefined => {
        const now = model.get(key);
        if (now && now.version >= 2) return now.version - 1;
        if (!now && (lastVersion.get(key) ?? 0) >= 1) return lastVersion.get(key);
        return undefined;
      };

      // one operation by one client; returns its effective acknowledged writes (re-ordered and checked by `apply`)
      const retries: Array<{ who: string; agent: Agent; args: Record<string, unknown>; reply: Record<string, unknown> }> = [];
      const operate = async (who: string, agent: Agent, touched: Set<string>): Promise<Ack[]> => {
        const key = pick(KEYS.filter((k) => !touched.has(k) || r() < 0.5));
        touched.add(key);
        const x = int(100);
        if (x < 25) {
          const value = fresh(key);
          const ik = r() < 0.2 ? `ik${++serial}` : undefined;
          const args = { key, scope: 'global', value, ...(ik ? { idempotencyKey: ik } : {}) };
          note(`${who} set ${key} ${JSON.stringify(value)}`);
          const reply = await agent.ok('state_set', args);
          if (ik) retries.push({ who, agent, args, reply });
          return [{ who, key, revision: reply.revision, version: reply.version, deleted: false, value }];
        }
        if (x < 55) {
          const [op, value] = updateOf(key);
          note(`${who} ${op} ${key} ${JSON.stringify(value)}`);
          const reply = await agent.ok('state_update', { key, scope: 'global', op, value });
          expect(reply.truncated, 'small values come back whole').toBeUndefined();
          return [{ who, key, revision: reply.revision, version: reply.version, deleted: false, value: reply.value }];
        }
        if (x < 65 && !STABLE.includes(key)) {
          note(`${who} delete ${key}`);
          const reply = await agent.ok('state_delete', { key, scope: 'global' });
          return reply.deleted ? [{ who, key, revision: reply.revision, deleted: true }] : [];
        }
        if (x < 80) {
          // ifVersion: the version read at the start of the round (it may lose to a concurrent write), or a stale one
          const stale = r() < 0.5 ? staleVersion(key) : undefined;
          const ifVersion = stale ?? model.get(key)?.version ?? 0;
          const value = fresh(key);
          note(`${who} set ${key} ifVersion ${ifVersion}${stale !== undefined ? ' (stale)' : ''}`);
          const reply = await agent.raw('state_set', { key, scope: 'global', value, ifVersion });
          if (reply.isError) {
            const error = JSON.parse((reply.content[0] as { text: string }).text).error as ToolError;
            expect(error.code, `${key}: a failed ifVersion write`).toBe('VERSION_CONFLICT');
            return [];
          }
          expect(stale, `${key}: a stale ifVersion ${ifVersion} was accepted`).toBeUndefined();
          const ok = reply.structuredContent as { version: number; revision: number };
          return [{ who, key, revision: ok.revision, version: ok.version, deleted: false, value, ifVersion }];
        }
        if (x < 95) {
          // an atomic batch on distinct keys; now and then one stale ifVersion in it: all or none
          const keys = [...new Set(Array.from({ length: 2 + int(3) }, () => pick(KEYS)))];
          for (const k of keys) touched.add(k);
          const spoil = r() < 0.25 ? keys.find((k) => staleVersion(k) !== undefined) : undefined;
          const ops = keys.map((k) => {
            if (k === spoil) return { op: 'set', key: k, scope: 'global', value: fresh(k), ifVersion: staleVersion(k) };
            const y = int(3);
            if (y === 0) return { op: 'set', key: k, scope: 'global', value: fresh(k) };
            if (y === 1 && !STABLE.includes(k)) return { op: 'delete', key: k, scope: 'global' };
            const [op, value] = updateOf(k);
            return { op, key: k, scope: 'global', value };
          });
          note(
            `${who} batch ${ops.map((o) => `${o.op} ${o.key}${o.ifVersion !== undefined ? ` ifVersion ${o.ifVersion}` : ''}`).join(', ')}`,
          );
          const reply = await agent.raw('state_batch', { ops });
          if (spoil !== undefined) {
            expect(reply.isError, 'a batch with a stale ifVersion fails').toBe(true);
            expect(JSON.parse((reply.content[0] as { text: string }).text).error.code).toBe('VERSION_CONFLICT');
            return [];
          }
          expect(reply.isError, `batch failed: ${JSON.stringify(reply.content)}`).toBeFalsy();
          const { results, revision } = reply.structuredContent as {
            results: Array<{ ok: boolean; version?: number; value?: Json; deleted?: boolean }>;
            revision: number;
          };
          const call = ++serial;
          return results.flatMap((res, i): Ack[] => {
            const op = ops[i];
            expect(res.ok).toBe(true);
            if (op.op === 'delete') return res.deleted ? [{ who, call, key: op.key, revision, deleted: true }] : [];
            const value = op.op === 'set' ? (op.value as Json) : res.value!;
            return [{ who, call, key: op.key, revision, version: res.version, deleted: false, value }];
          });
        }
        // a retry of an earlier call with its idempotency key: the first reply, nothing applied
        const retry = retries.length > 0 ? retries[int(retries.length)] : undefined;
        if (retry) {
          note(`${retry.who} retry set ${retry.args.key} (${retry.args.idempotencyKey})`);
          expect(await retry.agent.ok('state_set', retry.args), 'a retry returns the first reply').toEqual(retry.reply);
        }
        return [];
      };

      // followers of the feed, one per client, each a page per round (C narrowed to a prefix); list walks in progress
      const followers = clients.map(([who, agent], i) => ({
        who,
        agent,
        prefix: i === 2 ? 'l/' : '',
        after: listenFrom,
        seen: [] as Change[],
        limit: 1 + int(4),
      }));
      const page = async (f: (typeof followers)[number], waitMs = 0) => {
        const got = await f.agent.ok('state_changes', {
          afterRevision: f.after,
          scope: 'global',
          prefix: f.prefix,
          limit: f.limit,
          waitMs,
        });
        expect(got.changes.length > 0 || got.timedOut, `${f.who}: a wait ends with changes or timedOut`).toBe(true);
        expect(got.revision, `${f.who}: a page's revision never goes back`).toBeGreaterThanOrEqual(f.after);
        for (const c of got.changes as Change[]) {
          expect(c.revision, `${f.who}: a change after the cursor, within the page`).toBeGreaterThan(f.after);
          expect(c.revision).toBeLessThanOrEqual(got.revision);
          const last = f.seen.at(-1);
          if (last)
            expect(c.revision > last.revision || (c.revision === last.revision && c.key > last.key), `${f.who}: in order`).toBe(true);
          f.seen.push(c);
        }
        f.after = got.revision;
      };
      type Walk = { who: string; agent: Agent; cursor?: string; keys: string[]; stable: Set<string>; limit: number };
      let walk: Walk | undefined;
      // one more follower on B, blocking in state_changes through the rounds (20 s a wait): woken by writes through
      // every client, at once, or the test runs out of time
      const blocking = { who: 'B waiting', agent: B, prefix: 'o/', after: listenFrom, seen: [] as Change[], limit: 1 + int(3) };
      let rounds = true;
      const waiting = (async () => {
        while (rounds) await page(blocking, 20_000);
      })();
      void waiting.catch(() => {});
      const walked = async (w: Walk): Promise<boolean> => {
        const got = await w.agent.ok('state_list', { scope: 'global', limit: w.limit, ...(w.cursor ? { cursor: w.cursor } : {}) });
        w.keys.push(...got.keys.map((k: { key: string }) => k.key));
        w.cursor = got.nextCursor;
        if (w.cursor) return false;
        expect(new Set(w.keys).size, `${w.who}: a listing walk repeated a key: ${w.keys}`).toBe(w.keys.length);
        expect(w.keys, `${w.who}: a listing walk in key order`).toEqual([...w.keys].sort());
        for (const k of w.stable) expect(w.keys, `${w.who}: a key that lasted through the walk`).toContain(k);
        return true;
      };

      /** Every client reads what the model holds, key by key (value and version) and in one snapshot. */
      const check = async (what: string, keys: string[]) => {
        for (const key of keys) {
          const [who, agent] = pick(clients);
          const got = await agent.ok('state_get', { key, scope: 'global' });
          const want = model.get(key);
          expect({ found: got.found, value: got.value, version: got.version }, `${what}: ${who} reads ${key}`).toEqual(
            want ? { found: true, ...want } : { found: false, value: undefined, version: undefined },
          );
        }
      };
      const snapshot = async (agent: Agent): Promise<Record<string, Json>> => {
        const entries: Record<string, Json> = {};
        let cursor: string | undefined;
        do {
          const got = await agent.ok('state_snapshot', { scope: 'global', ...(cursor ? { cursor } : {}) });
          Object.assign(entries, got.entries);
          cursor = got.nextCursor;
        } while (cursor);
        return entries;
      };
      const values = () => Object.fromEntries([...model].map(([k, c]) => [k, c.value]));

      try {
        // the lasting keys first, in one batch
        const first = STABLE.map((key) => ({ op: 'set', key, scope: 'global', value: fresh(key) }));
        const made = await A.ok('state_batch', { ops: first });
        const call = ++serial;
        apply(
          made.results.map((res: { version: number }, i: number) => ({
            who: 'A',
            call,
            key: STABLE[i],
            revision: made.revision,
            version: res.version,
            deleted: false,
            value: first[i].value,
          })),
        );

        for (let round = 0; round < ROUNDS; round++) {
          note(`-- round ${round}`);
          const start = new Map(model);
          const touched = new Set<string>();
          const writers = clients.filter(() => r() < 0.8);
          const work: Array<Promise<Ack[]>> = writers.map(([who, agent]) =>
            operate(who, agent, touched).then((acks) => {
              const call = ++serial;
              return acks.map((a) => ({ call, ...a }));
            }),
          );
          // a watch from the side, waiting for a key this round writes unconditionally (a set lands first)
          let watching: (() => Promise<void>) | undefined;
          if (r() < 0.3) {
            const key = pick(KEYS);
            const [who, agent] = pick(clients);
            const afterVersion = start.get(key)?.version ?? lastVersion.get(key) ?? 0;
            const value = fresh(key);
            note(`${who} watch ${key} afterVersion ${afterVersion}; C sets it`);
            const seen = agent.ok('watch', { key, scope: 'global', afterVersion, waitMs: 20_000 });
            void seen.catch(() => {});
            await sleep(int(15));
            work.push(
              C.ok('state_set', { key, scope: 'global', value }).then((reply) => [
                { who: 'C', call: ++serial, key, revision: reply.revision, version: reply.version, deleted: false, value },
              ]),
            );
            watching = () =>
              seen.then((got) => {
                expect(got.timedOut, `${who}: watch of ${key} woke`).toBe(false);
                if (got.found) {
                  expect(got.version, `${who}: watch of ${key} returned a version after ${afterVersion}`).toBeGreaterThan(afterVersion);
                  expect(
                    history.get(key)?.get(got.version),
                    `${who}: watch of ${key} at ${got.version} returned that version's value`,
                  ).toEqual(got.value);
                }
              });
          }
          // followers and walks move on while the writes go
          const moving: Array<Promise<unknown>> = followers.filter(() => r() < 0.5).map(page);
          if (walk === undefined && r() < 0.3) {
            const [who, agent] = pick(clients);
            walk = { who, agent, keys: [], stable: new Set(STABLE), limit: 1 + int(3) };
          }
          const w = walk;
          if (w)
            moving.push(
              walked(w).then((done) => {
                if (done) walk = undefined;
              }),
            );
          const acks = (await Promise.all(work)).flat();
          await Promise.all(moving);
          apply(acks);
          await watching?.();
          // what was acknowledged is seen at once by every client: the keys written, a few others, now and then all
          await check(`after round ${round}`, [...touched, pick(KEYS)]);
          if (round % 10 === 9) for (const [who, agent] of clients) expect(await snapshot(agent), `${who}: a snapshot`).toEqual(values());
          // a watch that starts behind the current version returns the current one at once, from any client
          if (r() < 0.2) {
            const key = pick(KEYS);
            const now = model.get(key);
            const [who, agent] = pick(clients);
            const got = await agent.ok('watch', {
              key,
              scope: 'global',
              afterVersion: now ? now.version - 1 : (lastVersion.get(key) ?? 0) + 1,
              waitMs: 0,
            });
            expect({ found: got.found, value: got.value, version: got.version }, `${who}: watch ${key} behind`).toEqual(
              now ? { found: true, ...now } : { found: false, value: undefined, version: undefined },
            );
          }
        }

        // (one more write of its prefix ends its last wait; a follower that slept through writes would miss the time)
        rounds = false;
        const last = fresh('o/a');
        const end = await A.ok('state_set', { key: 'o/a', scope: 'global', value: last });
        apply([{ who: 'A', call: ++serial, key: 'o/a', revision: end.revision, version: end.version, deleted: false, value: last }]);
        await waiting;
        followers.push(blocking);
        // the followers catch up: each has every acknowledged change of its prefix, once, in order, nothing else
        const want = (prefix: string) =>
          [...expected.values()]
            .filter((a) => a.revision > listenFrom && a.key.startsWith(prefix))
            .sort((x, y) => x.revision - y.revision || (x.key < y.key ? -1 : 1))
            .map((a) => ({ key: a.key, revision: a.revision, deleted: a.deleted, ...(a.deleted ? {} : { version: a.version }) }));
        for (const f of followers) {
          for (;;) {
            const before = f.after;
            await page(f);
            if (f.after === before) break;
          }
          const got = f.seen.map((c) => ({
            key: c.key,
            revision: c.revision,
            deleted: c.deleted,
            ...(c.deleted ? {} : { version: c.version }),
          }));
          expect(got, `${f.who}: the change feed (prefix "${f.prefix}")`).toEqual(want(f.prefix));
          expect(f.seen.every((c) => c.scope === 'global')).toBe(true);
        }
        // a delete's tombstone version lies between the versions around it
        const feed = followers[0].seen;
        for (const [i, c] of feed.entries()) {
          if (!c.deleted) continue;
          const prev = feed.slice(0, i).findLast((p) => p.key === c.key);
          if (prev) expect(c.version, `${c.key}: a tombstone's version`).toBeGreaterThanOrEqual(prev.version);
          const next = feed.slice(i + 1).find((p) => p.key === c.key);
          if (next) expect(next.version, `${c.key}: a version after a delete`).toBeGreaterThan(c.version);
        }
        // read again in pages as large as they come (about 16 KiB), from another client: the same
        const again: Change[] = [];
        for (let after = listenFrom; ; ) {
          const got = await C.ok('state_changes', { afterRevision: after, scope: 'global', limit: 1000, waitMs: 0 });
          again.push(...got.changes);
          if (got.revision === after) break;
          after = got.revision;
        }
        expect(again, 'the feed read again in large pages').toEqual(followers[0].seen);

        // subscribers heard: listen streams every change of their keys with its own revision; resources/subscribe the
        // last change or a later revision, never going back
        const listened = (key: string) =>
          want('')
            .filter((a) => a.key === key)
            .map((a) => a.revision);
        const legacyLast = (key: string) => listened(key).at(-1) ?? 0;
        for (let waited = 0; waited < 10_000; waited += 50) {
          const done =
            listenKeys.every((k) => (heard.get(`B ${uriOf(k)}`) ?? []).length >= listened(k).length) &&
            legacyKeys.every((k) => (heard.get(`A ${uriOf(k)}`)?.at(-1) ?? 0) >= legacyLast(k));
          if (done) break;
          await sleep(50);
        }
        for (const k of listenKeys) expect(heard.get(`B ${uriOf(k)}`) ?? [], `B listened to ${k}`).toEqual(listened(k));
        for (const k of legacyKeys) {
          const got = heard.get(`A ${uriOf(k)}`) ?? [];
          expect(got, `A subscribed to ${k}: never back`).toEqual([...got].sort((x, y) => x - y));
          expect(got.at(-1) ?? 0, `A subscribed to ${k}: heard of the last change`).toBeGreaterThanOrEqual(legacyLast(k));
        }

        // the change log pruned under a cursor: an explicit REVISION_COMPACTED from every client, never a silent skip
        const behind = followers[0].seen[Math.floor(followers[0].seen.length / 2)].revision;
        await sleep(5);
        note('sweep (1 ms retention)');
        await storeA.sweep();
        for (const [who, agent] of clients) {
          const error = await agent.err('state_changes', { afterRevision: behind, scope: 'global', waitMs: 0 });
          expect(error.code, `${who}: a cursor behind the pruned log`).toBe('REVISION_COMPACTED');
          const oldest = error.details?.oldestRevision as number;
          expect(oldest, `${who}: oldestRevision`).toBeGreaterThan(behind);
          // following on from oldestRevision misses nothing written since
          const { revision } = await agent.ok('state_set', { key: `after/${who}`, scope: 'global', value: who });
          const got = await agent.ok('state_changes', { afterRevision: oldest, scope: 'global', prefix: `after/${who}`, waitMs: 0 });
          expect(
            got.changes.map((c: Change) => [c.key, c.revision]),
            `${who}: following from oldestRevision`,
          ).toEqual([[`after/${who}`, revision]]);
        }
        for (const f of followers) {
          const error = await f.agent.err('state_changes', { afterRevision: 0, scope: 'global', waitMs: 0 });
          expect(error.code, `${f.who}: afterRevision 0 after a prune`).toBe('REVISION_COMPACTED');
        }
        for (const key of ['after/A', 'after/B', 'after/C']) model.set(key, { value: key.slice(6), version: 0 });
        for (const [who, agent] of clients) expect(await snapshot(agent), `${who}: a snapshot at the end`).toEqual(values());
      } catch (error) {
        console.error(`kv model: seed ${seed} failed on ${name}; the last steps:\n  ${log.join('\n  ')}`);
        throw error;
      }
    },
    120_000,
  );
});
