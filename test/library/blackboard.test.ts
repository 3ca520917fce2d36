// The library on every shareable backend: kv, CAS, idempotency, claims, watch and changes through openBlackboard, and
// a library (this process) and a spawned MCP server process on one store seeing each other's writes.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { afterEach, describe, expect, it } from 'vitest';
import { BlackboardError, openBlackboard, openStore, type Blackboard, type Change } from '../../src/index.js';
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { tempDir } from '../contract/backends.js';
import { CLI, Agent, sleep } from '../helpers.js';
import { sharedStores } from '../stores.js';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const thing of opened.splice(0).reverse()) await thing.close().catch(() => {});
});
async function board(options: Parameters<typeof openBlackboard>[0]): Promise<Blackboard> {
  const bb = await openBlackboard(options);
  opened.push(bb);
  return bb;
}
/** The BlackboardError a promise rejects with. */
async function failure(promise: Promise<unknown>): Promise<BlackboardError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error, 'the call should have failed').toBeInstanceOf(BlackboardError);
  return error as BlackboardError;
}
const parentless = (): Promise<Blackboard> => board({ store: 'memory://' });
/** The first `n` changes of a feed. */
async function take(feed: AsyncIterable<Change>, n: number): Promise<Change[]> {
  const out: Change[] = [];
  for await (const change of feed) if (out.push(change) === n) break;
  return out;
}

describe.each(sharedStores())('openBlackboard on $name', ({ fresh }) => {
  it("a value set from code stays the caller's to change: a loop that grows its own list and sets it each step", async () => {
    const bb = await board({ store: fresh(), agent: 'loop' });
    const messages: Array<{ role: string; content: string }> = [];
    for (let i = 0; i < 70; i++) {
      messages.push({ role: 'user', content: `${i} ${'m'.repeat(290)}` }); // over 16 KiB from the 55th on
      await bb.kv.set({ key: 'messages', value: messages });
    }
    messages[0].content = 'changed';
    const got = await bb.kv.get({ key: 'messages', maxBytes: 1024 * 1024 });
    expect((got.value as typeof messages).map((m) => m.content)).toEqual(Array.from({ length: 70 }, (_, i) => `${i} ${'m'.repeat(290)}`));
  });

  it('bb.changes() without afterRevision follows from the call, not from when the loop first asks', async () => {
    const bb = await board({ store: fresh(), agent: 'follower' });
    await bb.kv.set({ key: 'before', value: 0 });
    const feed = bb.changes();
    await new Promise((resolve) => setTimeout(resolve, 500)); // code that does other work before it loops
    await bb.kv.set({ key: 'early', value: 1 });
    const later = setTimeout(() => void bb.kv.set({ key: 'late', value: 2 }).catch(() => {}), 500);
    try {
      expect((await take(feed, 1)).map((c) => c.key)).toEqual(['early']);
    } finally {
      clearTimeout(later);
    }
  });

  it('bb.changes() refuses an argument it does not take (the feed sets limit and waitMs itself)', async () => {
    const bb = await board({ store: fresh(), agent: 'follower' });
    for (const name of ['limit', 'waitMs', 'afterRevison']) {
      expect(() => bb.changes({ [name]: 5 } as never)).toThrow(
        expect.objectContaining({ code: 'INVALID_ARGUMENT', details: { path: name } }) as unknown as Error,
      );
    }
  });

  it('a shared store handle closed under its blackboards ends their waits and later calls with STORE_UNAVAILABLE', async () => {
    for (const url of [fresh(), 'memory://']) {
      const store = await openStore(url);
      const bb = await board({ store, agent: 'a' });
      await bb.kv.set({ key: 'x', value: 1 });
      const feed = (async () => {
        for await (const _ of bb.changes());
      })();
      const watching = bb.kv.watch({ key: 'x', afterVersion: 1, waitMs: 600_000 });
      const answer = bb.finalAnswer.get({ waitMs: 600_000 });
      const ending = Promise.allSettled([watching, answer, feed]);
      await sleep(200);
      await store.close();
      const closed = { code: 'STORE_UNAVAILABLE', message: expect.stringContaining('The store was closed') };
      for (const one of await ending) expect(one).toMatchObject({ status: 'rejected', reason: closed });
      await expect(bb.kv.set({ key: 'y', value: 1 })).rejects.toMatchObject(closed);
    }
  }, 30_000);

  it('kv with CAS and idempotency, claims, watch and changes; two blackboards in one process share the store', async () => {
    const url = fresh();
    const a = await board({ store: url, agent: 'alice' });
    const b = await board({ store: url, agent: 'bob' }); // its own connection, like another server

    const first = await a.kv.set({ key: 'goal', value: { text: 'ship' }, ifVersion: 0 });
    expect(first.version).toBeGreaterThan(0);
    expect(await b.kv.get({ key: 'goal' })).toMatchObject({
      found: true,
      value: { text: 'ship' },
      version: first.version,
      updatedBy: 'alice',
    });
    // CAS: a stale writer loses with the tool's code and details, and changes nothing.
    await b.kv.set({ key: 'goal', value: 'bob was here', ifVersion: first.version });
    const conflict = await failure(a.kv.set({ key: 'goal', value: 'alice again', ifVersion: first.version }));
    expect(conflict.code).toBe('VERSION_CONFLICT');
    expect(conflict.details).toMatchObject({ currentVersion: first.version + 1 });
    expect((await a.kv.get({ key: 'goal' })).value).toBe('bob was here');
    // Idempotency: a retry with the same key applies once.
    const once = await a.kv.update({ key: 'count', op: 'increment', value: 1, idempotencyKey: 'retry-1' });
    const again = await a.kv.update({ key: 'count', op: 'increment', value: 1, idempotencyKey: 'retry-1' });
    expect(again).toEqual(once);
    expect((await b.kv.get({ key: 'count' })).value).toBe(1);
    // Argument rules are the tools': an unknown argument is refused, with a suggestion, and changes nothing.
    const typo = await failure(a.kv.set({ key: 'goal', value: 1, ifversion: 1 } as never));
    expect(typo.code).toBe('INVALID_ARGUMENT');
    expect(typo.details).toMatchObject({ path: 'ifversion', suggestion: 'ifVersion' });
    expect((await a.kv.get({ key: 'goal' })).value).toBe('bob was here');
    const batch = await a.kv.batch({
      ops: [
        { op: 'set', key: 'x', value: 1 },
        { op: 'set', key: 'goal', value: 2, ifVersion: 1 },
      ],
      atomic: false,
    });
    expect(batch.results.map((r) => r.ok)).toEqual([true, false]);
    expect(batch.results[1].error?.code).toBe('VERSION_CONFLICT');

    // Claims: two claimers never get one step.
    const { planId } = await a.plans.create({ title: 'two steps', steps: ['one', 'two'], scope: 'global' });
    const claims = await Promise.all([
      a.plans.claim({ planId }),
      b.plans.claim({ planId }),
      a.plans.claim({ planId }),
      b.plans.claim({ planId }),
    ]);
    const taken = claims.filter((c) => c.claimed).map((c) => c.step!.id);
    expect(taken.sort()).toEqual(['s1', 's2']);
    expect(claims.filter((c) => !c.claimed).every((c) => c.reason === 'all_taken')).toBe(true);

    // watch: woken by the other blackboard's write; an AbortSignal ends a wait.
    const watching = a.kv.watch({ key: 'signal', waitMs: 30_000 });
    await new Promise((r) => setTimeout(r, 100));
    await b.kv.set({ key: 'signal', value: 'go' });
    expect(await watching).toMatchObject({ found: true, value: 'go', timedOut: false });
    const abort = new AbortController();
    const aborted = a.kv.watch({ key: 'never', waitMs: 30_000 }, { signal: abort.signal });
    setTimeout(() => abort.abort(), 100);
    await expect(aborted).rejects.toMatchObject({ name: 'AbortError' });

    // changes: one page, and the feed as an async iterator that waits for the next change.
    const { revision } = await a.kv.changes();
    const feed = take(a.changes({ afterRevision: revision, scope: 'global' }), 2);
    await b.kv.set({ key: 'later/1', value: 1 });
    await b.kv.delete({ key: 'later/1' });
    const seen = await feed;
    expect(seen.map((c) => [c.key, c.deleted])).toEqual([
      ['later/1', false],
      ['later/1', true],
    ]);
    expect(seen[0].revision).toBeGreaterThan(revision);
    const stop = new AbortController();
    const following = take(a.changes({}, { signal: stop.signal }), 1);
    setTimeout(() => stop.abort(), 100);
    await expect(following).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('a list or snapshot cursor whose key breaks the key rules (a NUL, a lone surrogate) is INVALID_ARGUMENT, never a store failure', async () => {
    const bb = await board({ store: fresh(), agent: 'pager' });
    for (const key of ['a', 'b', 'c']) await bb.kv.set({ key, value: key });
    const { nextCursor } = await bb.kv.list({ limit: 1 });
    expect((await bb.kv.list({ cursor: nextCursor })).keys.map((k) => k.key)).toEqual(['b', 'c']);
    // a cursor is base64url JSON naming the scope, prefix and last key: one a model made up with a key no page lists
    const made = (k: string): string => Buffer.from(JSON.stringify({ s: 'global', p: '', k }), 'utf8').toString('base64url');
    for (const k of ['a\u0000', '\ud800', 'a\u001fb', 'x'.repeat(513)]) {
      for (const call of [() => bb.kv.list({ cursor: made(k) }), () => bb.kv.snapshot({ cursor: made(k) })]) {
        const error = await failure(call());
        expect({ code: error.code, details: error.details }, JSON.stringify(k)).toMatchObject({
          code: 'INVALID_ARGUMENT',
          details: { path: 'cursor' },
        });
      }
    }
  });

  it("a library in this process and an MCP server process on one store see each other's writes", async () => {
    const url = fresh();
    const store = await openStore(url);
    opened.push(store);
    const lib = await board({ store, agent: 'library' });
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [CLI, '--store', url, '--agent', 'server'],
      stderr: 'pipe',
    });
    const client = new Client({ name: 'library-test', version: '1.0.0' });
    await client.connect(transport);
    opened.push(client);
    const mcp = new Agent(client);

    // The server's write wakes the library's watch and shows in its change feed.
    const { revision } = await lib.kv.changes();
    const feed = take(lib.changes({ afterRevision: revision }), 1);
    const watching = lib.kv.watch({ key: 'from-server', waitMs: 30_000 });
    await mcp.ok('state_set', { key: 'from-server', value: 41 });
    expect(await watching).toMatchObject({ found: true, value: 41 });
    expect((await feed)[0]).toMatchObject({ scope: 'global', key: 'from-server', deleted: false });
    expect(await lib.kv.get({ key: 'from-server' })).toMatchObject({ value: 41, updatedBy: 'server' });

    // The library's CAS write wakes the server's watch; the server's stale write then loses.
    const { version } = await mcp.ok<{ version: number }>('state_get', { key: 'from-server' });
    const serverWatch = mcp.ok('watch', { key: 'from-server', afterVersion: version, waitMs: 30_000 });
    await new Promise((r) => setTimeout(r, 200));
    await lib.kv.set({ key: 'from-server', value: 42, ifVersion: version });
    expect(await serverWatch).toMatchObject({ found: true, value: 42 });
    expect((await mcp.err('state_set', { key: 'from-server', value: 0, ifVersion: version })).code).toBe('VERSION_CONFLICT');

    // One plan, claimed from both sides: each step once.
    const { planId } = await lib.plans.create({ title: 'shared', steps: ['a', 'b', 'c'], scope: 'global' });
    const [x, y, z] = await Promise.all([
      lib.plans.claim({ planId }),
      mcp.ok<{ claimed: boolean; step?: { id: string } }>('plan_claim', { planId }),
      lib.plans.claim({ planId }),
    ]);
    expect([x, y, z].map((c) => c.step!.id).sort()).toEqual(['s1', 's2', 's3']);
    const { plan } = await mcp.ok<{ plan: { steps: Array<{ owner: string }> } }>('plan_get', { planId });
    expect(plan.steps.map((s) => s.owner).sort()).toEqual(['library', 'library', 'server']);
  });
});

describe('openBlackboard on a SQLite file removed under it', () => {
  it('a bb.changes loop and a long watch learn it within seconds, not at the end of their wait', async () => {
    const path = join(tempDir(), 'gone.db');
    const bb = await board({ store: `sqlite://${path}`, agent: 'a' });
    await bb.kv.set({ key: 'x', value: 1 });
    const feed = (async () => {
      for await (const _ of bb.changes());
    })();
    const watching = bb.kv.watch({ key: 'x', afterVersion: 1, waitMs: 600_000 });
    await sleep(300);
    rmSync(path);
    const gone = { code: 'STORE_UNAVAILABLE', details: { cause: 'STORE_FILE_GONE' } };
    await expect(watching).rejects.toMatchObject(gone);
    await expect(feed).rejects.toMatchObject(gone);
  }, 30_000);
});

describe('openBlackboard options and errors', () => {
  it('refuses bad options with INVALID_ARGUMENT naming the option, and an unreachable store with STORE_UNAVAILABLE', async () => {
    expect((await failure(openBlackboard({ store: 'memory://', namespace: 'Bad-NS' }))).details).toMatchObject({ path: 'namespace' });
    const typo = await failure(openBlackboard({ store: 'memory://', nameSpace: 'x' } as never));
    expect(typo.details).toMatchObject({ path: 'nameSpace', suggestion: 'namespace' });
    expect((await failure(parentless().then((bb) => bb.as({ agent: 'x', maxIterations: 3 } as never)))).details).toMatchObject({
      path: 'maxIterations',
    });
    expect((await failure(openBlackboard({ store: 'memory://', agent: 'no spaces' }))).code).toBe('INVALID_ARGUMENT');
    // a server's own options are refused, not ignored (a blackboard has every method, and no read-only mode)
    for (const option of [{ readOnly: true }, { tools: ['agent'] }, { allowBudgetAdmin: true }]) {
      expect((await failure(openBlackboard({ store: 'memory://', ...option } as never))).details).toMatchObject({
        path: Object.keys(option)[0],
      });
    }
    const ownParent = await failure(openBlackboard({ store: 'memory://', thread: 'same', parentThread: 'same' }));
    expect(ownParent).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: 'parentThread' } });
    expect((await failure(parentless().then((bb) => bb.as({ thread: 't', parentThread: 't' })))).code).toBe('INVALID_ARGUMENT');
    const extra = await failure(parentless().then((bb) => bb.bundles.export({ thread: 'x', extra: 1 } as never)));
    expect(extra).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: 'extra' } });
    // null is "not given", as for the tools' arguments: never a TypeError, nor a caller's slip passed off as a store failure
    const bb = await parentless();
    const none = null as never;
    const other = await bb.as(none);
    expect((await other.whoami()).thread).not.toBe((await bb.whoami()).thread);
    await (await openStore('memory://', none)).close();
    const bundle = await bb.bundles.export(none);
    expect(await bb.bundles.import(bundle, none)).toMatchObject({ removed: 0 });
    const misspelt = await failure(bb.bundles.import(bundle, { replce: true } as never));
    expect(misspelt).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: 'replce' } });
    expect((await failure(bb.bundles.import(bundle, { replace: 'yes' } as never))).details).toMatchObject({ path: 'replace' });
    const down = await failure(openBlackboard({ store: 'postgres://user:secret@127.0.0.1:1/db' }));
    expect(down.code).toBe('STORE_UNAVAILABLE');
    expect(down.message).not.toContain('secret');
    expect((await failure(openBlackboard({ store: 'ftp://x' }))).code).toBe('STORE_UNAVAILABLE');
    // the reason stays whole: the URLs it names as examples are not taken for a password to mask
    const unknown = await failure(openBlackboard({ store: 'mysql://user:hunter2@db/app' }));
    expect(unknown).toMatchObject({ code: 'STORE_UNAVAILABLE' });
    expect(unknown.message).toContain('"mysql://user:***@db/app". Use sqlite:///absolute/path.db, sqlite://relative.db, postgres://');
    expect(unknown.message).not.toContain('hunter2');
  });

  it('a value comes whole unless maxBytes asks for a preview; a page says where it goes on; changes answers at once without waitMs', async () => {
    const bb = await parentless();
    const big = '"'.repeat(40_000);
    await bb.kv.set({ key: 'big', value: big });
    expect(await bb.kv.get({ key: 'big' })).toMatchObject({ found: true, value: big });
    for (const read of [() => bb.kv.get({ key: 'big', maxBytes: 1000 }), () => bb.kv.watch({ key: 'big', maxBytes: 1000, waitMs: 0 })]) {
      const got = await read();
      expect(got).toMatchObject({ truncated: true, bytes: 80_002 });
      expect(Buffer.byteLength(JSON.stringify(got.value))).toBeLessThanOrEqual(1000);
    }
    for (let i = 0; i < 3; i++) await bb.kv.set({ key: `k${i}`, value: 'x'.repeat(300) });
    // the result types carry what the tools return: sizes, the next page, skipped values, a wait that ended
    const listed = await bb.kv.list({ prefix: 'k' });
    expect(listed.keys.map((k) => k.bytes)).toEqual([302, 302, 302]);
    const page = await bb.kv.snapshot({ prefix: 'k', maxBytes: 800 });
    expect(page.truncated).toBe(true);
    const next = await bb.kv.snapshot({ prefix: 'k', maxBytes: 800, cursor: page.nextCursor });
    expect(next.truncated).toBe(false);
    expect(Object.keys({ ...page.entries, ...next.entries })).toEqual(['k0', 'k1', 'k2']);
    expect((await bb.kv.snapshot({ maxBytes: 1000 })).skipped).toEqual([{ key: 'big', bytes: 80_002 }]);
    const { revision } = await bb.kv.changes({});
    const started = Date.now();
    expect(await bb.kv.changes({ afterRevision: revision })).toMatchObject({ changes: [], timedOut: true });
    expect(Date.now() - started).toBeLessThan(1000);
  });

  it('a value JSON cannot write (a BigInt) is INVALID_ARGUMENT and changes nothing, not a store failure', async () => {
    const bb = await parentless();
    await bb.kv.set({ key: 'a', value: 1 }); // the first write records this blackboard's thread
    const { revision } = await bb.kv.changes({});
    for (const write of [
      () => bb.kv.set({ key: 'b', value: 10n as never }),
      () => bb.kv.set({ key: 'b', value: { n: 10n } as never }),
      () => bb.kv.update({ key: 'b', op: 'append', value: 10n as never }),
    ]) {
      const refused = await failure(write());
      expect(refused.code).toBe('INVALID_ARGUMENT');
      expect(refused.message).toMatch(/not JSON.*BigInt.*Nothing was changed/);
    }
    expect((await bb.kv.changes({})).revision).toBe(revision);
    expect((await bb.kv.get({ key: 'b' })).found).toBe(false);
  });

  it('a value with no JSON text at all (a function, a symbol, a toJSON that returns nothing) is refused, not stored corrupt', async () => {
    const bb = await parentless();
    await bb.kv.set({ key: 'a', value: 1 });
    const { revision } = await bb.kv.changes({});
    const nothing = { toJSON: () => undefined };
    for (const write of [
      () => bb.kv.set({ key: 'b', value: (() => 1) as never }),
      () => bb.kv.set({ key: 'b', value: Symbol('s') as never }),
      () => bb.kv.set({ key: 'b', value: nothing as never }),
      () => bb.kv.update({ key: 'b', op: 'merge', value: nothing as never }),
      () => bb.kv.batch({ ops: [{ op: 'set', key: 'b', value: (() => 1) as never }] }),
      () => bb.scratchpad.write({ kind: 'variable', name: 'b', value: (() => 1) as never }),
    ]) {
      const refused = await failure(write());
      expect(refused.code).toBe('INVALID_ARGUMENT');
      expect(refused.message).toMatch(/not JSON.*no JSON text.*Nothing was changed/);
    }
    expect((await bb.kv.changes({})).revision).toBe(revision);
    expect(await bb.kv.get({ key: 'b' })).toEqual({ found: false });
    expect((await bb.scratchpad.read()).variables).toEqual({});
  });

  it('the inbox iterator waits for mail between reads, and ends on its signal even when asked not to wait', async () => {
    for (const args of [{}, { waitMs: 0 }]) {
      const bb = await parentless();
      let reads = 0;
      const read = bb.mail.read;
      bb.mail.read = (...a) => {
        reads++;
        return read(...a);
      };
      const stop = new AbortController();
      setTimeout(() => stop.abort(), 300);
      const loop = (async () => {
        for await (const _ of bb.inbox(args, { signal: stop.signal })) throw new Error('no mail was sent');
      })();
      await expect(loop).rejects.toMatchObject({ name: 'AbortError' });
      // it read once and waited (it used to read without pause, never letting the event loop turn)
      if (!('waitMs' in args)) expect(reads).toBe(1);
    }
  });

  it('names methods, not tools, in its messages; close() ends waits and later calls fail', async () => {
    const bb = await openBlackboard({ store: 'memory://', changeRetentionSeconds: 1 });
    const ahead = await failure(bb.kv.changes({ afterRevision: 10_000 }));
    expect(ahead.code).toBe('INVALID_ARGUMENT');
    // A run-scoped write after run_end is refused the way the tool refuses it, with the library's names.
    const ended = await bb.runs.end({ status: 'finished' });
    // run_end saves a checkpoint, as the tool does
    expect(ended.checkpointId).toEqual(expect.any(String));
    expect((await bb.checkpoints.list({})).checkpoints.map((c) => c.checkpointId)).toEqual([ended.checkpointId]);
    const finished = await failure(bb.kv.set({ key: 'k', value: 1, scope: 'run' }));
    expect(finished.code).toBe('RUN_FINISHED');
    expect(finished.message).not.toMatch(/\{tool:/);
    expect(finished.message).toContain('Begin a new run on this thread with runs.start().');
    // advice in a result too
    const { hint } = await bb.plans.list({});
    expect(hint).toMatch(/plans\.create\(\)/);
    expect(hint).not.toMatch(/\{tool:/);
    const waiting = bb.finalAnswer.get({ waitMs: 30_000 });
    const following = take(bb.changes(), 1);
    await new Promise((r) => setTimeout(r, 50));
    await bb.close();
    await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    expect(await following).toEqual([]); // close() ends the feed quietly
    expect((await failure(bb.kv.get({ key: 'k' }))).code).toBe('STORE_UNAVAILABLE');
    expect((await failure(bb.as({ thread: 'other' }))).code).toBe('STORE_UNAVAILABLE');
    // a loop begun after close() fails like any later call, rather than end as if there were nothing to read
    const drain = async (feed: AsyncIterable<unknown>) => {
      for await (const _ of feed);
    };
    for (const feed of [bb.changes(), bb.inbox()]) expect((await failure(drain(feed))).code).toBe('STORE_UNAVAILABLE');
  });

  it('as(): a handle dropped unclosed is collected (one per request does not pile up); close() still closes those held', async () => {
    const bb = await openBlackboard({ store: 'memory://' });
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void; // the collector, made callable in this test only
    let dropped: WeakRef<Blackboard> | undefined;
    await (async () => {
      const other = await bb.as({ thread: 'per-request' });
      await other.kv.set({ key: 'k', value: 1 });
      dropped = new WeakRef(other);
    })();
    await expect
      .poll(
        async () => {
          await new Promise((r) => setTimeout(r, 10)); // a new job: WeakRefs of the last one may be cleared
          collect();
          return dropped?.deref() === undefined;
        },
        { timeout: 10_000 },
      )
      .toBe(true);
    // one held, and one opened from it, are closed with bb: their waits end, their later calls fail
    const child = await bb.as({ thread: 'held' });
    const grandchild = await child.as({ thread: 'held-below' });
    const waits = [child.finalAnswer.get({ waitMs: 30_000 }), grandchild.finalAnswer.get({ waitMs: 30_000 })];
    await new Promise((r) => setTimeout(r, 50));
    await bb.close();
    for (const waiting of waits) await expect(waiting).rejects.toMatchObject({ name: 'AbortError' });
    for (const closed of [child, grandchild]) expect((await failure(closed.kv.get({ key: 'k' }))).code).toBe('STORE_UNAVAILABLE');
  });

  it('calls passing one long-lived signal do not pile up memory (each call joins it with the close only for the call)', async () => {
    const bb = await board({ store: 'memory://' });
    setFlagsFromString('--expose-gc');
    const collect = runInNewContext('gc') as () => void; // the collector, made callable in this test only
    const shutdown = new AbortController(); // an app's one signal, passed to every call
    const heap = async (): Promise<number> => {
      await new Promise((r) => setTimeout(r, 10));
      collect();
      return process.memoryUsage().heapUsed;
    };
    const calls = async (n: number): Promise<void> => {
      for (let i = 0; i < n; i++) await bb.kv.get({ key: 'k' }, { signal: shutdown.signal });
    };
    await calls(2_000); // warm
    const before = await heap();
    await calls(100_000);
    const grown = (await heap()) - before;
    // Node 20's AbortSignal.any kept ~60 bytes a call here (about 6 MB)
    expect(grown, `heap grew ${grown} bytes over 100,000 calls`).toBeLessThan(2_500_000);
    // the signal still ends a wait, and the close still ends one made with a signal
    const waiting = bb.kv.watch({ key: 'w', waitMs: 30_000 }, { signal: shutdown.signal });
    shutdown.abort(new Error('shutting down'));
    await expect(waiting).rejects.toThrow('shutting down');
    const other = new AbortController();
    const closedWait = bb.kv.watch({ key: 'w', waitMs: 30_000 }, { signal: other.signal });
    await new Promise((r) => setTimeout(r, 20));
    await bb.close();
    await expect(closedWait).rejects.toMatchObject({ name: 'AbortError' });
  });

  it('as(): another identity over the same connection; budgets and final answers follow the thread tree', async () => {
    const parent = await board({ store: 'memory://', agent: 'parent', thread: 'p', maxIterations: 2 });
    const child = await parent.as({ agent: 'child', thread: 'c', parentThread: 'p' });
    expect(await child.whoami()).toMatchObject({ agent: 'child', thread: 'c', parentThread: 'p', delegateLevel: 1 });
    await child.budgets.step();
    await child.budgets.step();
    const limit = await failure(child.budgets.step());
    expect(limit.code).toBe('LIMIT_REACHED');
    const waiting = parent.finalAnswer.get({ thread: 'c', waitMs: 30_000 });
    await child.finalAnswer.set({ content: 'done' });
    expect(await waiting).toMatchObject({ isSet: true, answer: { content: 'done', thread: 'c' } });
    expect((await failure(child.finalAnswer.set({ content: 'again' }))).code).toBe('MULTIPLE_FINAL_ANSWERS');
    const bundle = await parent.bundles.export({ thread: 'c' });
    expect(bundle.kind).toBe('thread');
    // A checkpoint read back whole (a tool's reply previews large values; the library's does not), and nothing written.
    const long = 'x'.repeat(40_000);
    await child.kv.set({ key: 'long', value: long, scope: 'thread' });
    const saved = await child.checkpoints.save();
    const { revision } = await child.kv.changes({});
    const read = await child.checkpoints.get({ checkpointId: saved.checkpointId });
    expect(read.checkpoint).toEqual(saved);
    expect(Object.values(read.state.records).map((r) => r.v)).toContain(long);
    expect((await child.kv.changes({})).revision).toBe(revision);
    expect((await failure(child.checkpoints.get({ checkpointId: 'cp-000000000-00000000' }))).code).toBe('NOT_FOUND');
    // its one argument: required, and nothing beside it taken silently
    expect(await failure(child.checkpoints.get({} as never))).toMatchObject({
      message: 'checkpointId is required.',
      details: { path: 'checkpointId' },
    });
    const paged = child.checkpoints.get({ checkpointId: saved.checkpointId, limit: 1 } as never);
    expect(await failure(paged)).toMatchObject({ code: 'INVALID_ARGUMENT', details: { path: 'limit' } });
    const other = await openBlackboard({ store: 'memory://' });
    opened.push(other);
    expect((await other.bundles.import(bundle)).records).toBeGreaterThan(0);
    expect((await failure(other.bundles.import('{"format": 2, "kind": "thr'))).code).toBe('CHECKPOINT_CORRUPT');
  });
});
