import { copyFileSync, mkdirSync, readdirSync, renameSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { createHook } from 'node:async_hooks';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BYTES_FROM_CHARS } from '../../src/store/json-text.js';
import { SqliteBackend } from '../../src/store/sqlite/backend.js';
import { KeyvSqlite } from '../../src/store/sqlite/keyv-sqlite.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import type { CommitEvent, Json, StoredRecord, Writes } from '../../src/store/types.js';
import { tempDir } from '../contract/backends.js';
import { connect, sleep } from '../helpers.js';

// What only the SQLite backend has to get right.

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((x) => x.close().catch(() => {})));
});
async function open(path: string, options: Parameters<typeof SqliteBackend.open>[1] = {}): Promise<SqliteBackend> {
  const backend = await SqliteBackend.open(path, options);
  opened.push(backend);
  return backend;
}
const record = (v: StoredRecord['v'], ver = 1): Omit<StoredRecord, 'rev'> => ({ v, ver, at: Date.now(), by: 't' });
const put = (entries: Record<string, StoredRecord['v']>): Writes =>
  new Map(Object.entries(entries).map(([key, v]) => [key, { record: record(v), log: true }]));

describe('SQLite backend', () => {
  it('many connections opening a brand-new file at once all succeed (no "database is locked")', async () => {
    for (let round = 0; round < 5; round++) {
      const path = join(tempDir(), 'new.db');
      const backends = await Promise.all(Array.from({ length: 8 }, () => SqliteBackend.open(path)));
      const stores = backends.map((b) => new VersionedStore(b, { sweepIntervalMs: 0 }));
      await Promise.all(stores.map((s, i) => s.transact((tx) => tx.update('n', 'increment', i + 1, { by: 'x' }))));
      expect((await stores[0].get('n'))!.value).toBe(36);
      await Promise.all(stores.map((s) => s.close()));
    }
  });

  it('a path that is a symbolic link to the database opens the file it points to, shared with those opening it directly', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'real'));
    mkdirSync(join(dir, 'link'));
    const real = join(dir, 'real', 'board.db');
    await (await open(real)).close();
    symlinkSync(real, join(dir, 'link', 'board.db'));
    const viaLink = new VersionedStore(await open(join(dir, 'link', 'board.db')), { sweepIntervalMs: 0 });
    const direct = new VersionedStore(await open(real), { sweepIntervalMs: 0 });
    await viaLink.transact((tx) => tx.set('k', 'through the link', { by: 't' }));
    expect((await direct.get('k'))?.value).toBe('through the link');
    const woken = direct.waitUntil('k', (e) => e?.value === 'again', { timeoutMs: 5_000 });
    await viaLink.transact((tx) => tx.set('k', 'again', { by: 't' }));
    expect((await woken).timedOut).toBe(false);
    // every file of the board is beside the database itself, none beside the link
    expect(readdirSync(join(dir, 'link'))).toEqual(['board.db']);
  });

  it('uses WAL, so readers are never blocked by a writer', async () => {
    const path = join(tempDir(), 'wal.db');
    const store = new VersionedStore(await SqliteBackend.open(path), { sweepIntervalMs: 0 });
    // hold the write lock inside a transaction while reading through the store
    let release!: () => void;
    const held = new Promise<void>((r) => (release = r));
    const writing = store.transact(async (tx) => {
      await tx.set('k', 'uncommitted', { by: 'x' });
      await held;
      return {};
    });
    await sleep(20);
    expect(await store.get('k')).toBeUndefined(); // not blocked, and never a dirty read
    release();
    await writing;
    expect((await store.get('k'))!.value).toBe('uncommitted');
    await store.close();
  });

  it('the -wal file does not stay large: past 16 MiB it is checkpointed and truncated by a later commit', async () => {
    const path = join(tempDir(), 'wal-size.db');
    const store = new VersionedStore(await SqliteBackend.open(path), { sweepIntervalMs: 0 });
    const walBytes = () => statSync(`${path}-wal`).size;
    const big = 'x'.repeat(1000 * 1024);
    await store.transact(async (tx) => {
      for (let i = 0; i < 24; i++) await tx.set(`big-${i}`, `${i}${big}`, { by: 'x' });
    });
    expect(walBytes()).toBeGreaterThan(16 * 1024 * 1024);
    // SQLite's own checkpoints reuse the file from its start but never shrink it: it stayed at its largest
    for (let i = 0; i < 40; i++) await store.transact((tx) => tx.set('small', i, { by: 'x' }));
    expect(walBytes()).toBeLessThan(16 * 1024 * 1024);
    expect((await store.get('big-19'))!.value).toBe(`19${big}`);
    await store.close();
  });
});

describe('group commit', () => {
  it('concurrent transactions share one commit; each sees the earlier ones; results and errors stay per call', async () => {
    const backend = await open(join(tempDir(), 'group.db'));
    await backend.transaction(async () => ({ result: 0, writes: put({ seed: 1 }) }));
    const before = { ...backend.stats };
    const failure = new Error('this one fails');
    const calls = Array.from({ length: 20 }, (_, i) =>
      backend.transaction(async (tx, context) => {
        if (i === 7) throw failure;
        // every call reads the one before it: the batch's earlier writes are visible, the failed one's are not
        const previous = i === 0 ? undefined : await tx.get(`k${i - 1}`);
        return { result: { sawPrevious: previous?.v ?? null, revision: context.revision }, writes: put({ [`k${i}`]: i }) };
      }),
    );
    const settled = await Promise.allSettled(calls);
    expect(backend.stats.commits - before.commits).toBe(1);
    expect(backend.stats.transactions - before.transactions).toBe(19);
    expect(settled[7]).toEqual({ status: 'rejected', reason: failure });
    const revisions: number[] = [];
    for (const [i, outcome] of settled.entries()) {
      if (i === 7) continue;
      expect(outcome.status).toBe('fulfilled');
      const { result, revision } = (
        outcome as PromiseFulfilledResult<{ result: { sawPrevious: unknown; revision: number }; revision: number }>
      ).value;
      expect(result.sawPrevious).toBe(i === 0 || i === 8 ? null : i - 1);
      expect(revision).toBe(result.revision + 1);
      revisions.push(revision);
      expect((await backend.get(`k${i}`))!.rev).toBe(revision);
    }
    expect(await backend.get('k7')).toBeUndefined();
    // one revision per writing transaction, in order, all above the seed's
    expect(revisions).toEqual([...revisions].sort((a, b) => a - b));
    expect(new Set(revisions).size).toBe(19);
    expect(await backend.revision()).toBe(revisions[revisions.length - 1]);
    const log = await backend.changes({ after: 1, lo: '', hi: '\u{10ffff}', limit: 100 });
    expect(log.changes.map((c) => c.key)).toEqual(Array.from({ length: 20 }, (_, i) => `k${i}`).filter((k) => k !== 'k7'));
  });

  it('a write that SQLite refuses undoes only its own transaction', async () => {
    const backend = await open(join(tempDir(), 'refused.db'));
    const bad: Writes = new Map([['x', { record: { ...record(1), exp: Symbol('not bindable') as unknown as number }, log: true }]]);
    const [a, b, c] = await Promise.allSettled([
      backend.transaction(async () => ({ result: 'a', writes: put({ a: 1 }) })),
      backend.transaction(async () => ({ result: 'b', writes: new Map([...put({ b: 1 }), ...bad]) })),
      backend.transaction(async () => ({ result: 'c', writes: put({ c: 1 }) })),
    ]);
    expect(a.status).toBe('fulfilled');
    expect(b.status).toBe('rejected');
    expect(c.status).toBe('fulfilled');
    expect(await backend.get('a')).toBeDefined();
    expect(await backend.get('b')).toBeUndefined();
    expect(await backend.get('c')).toBeDefined();
  });

  it("waits for another process's write lock without blocking the event loop, and gives up after the busy timeout", async () => {
    const path = join(tempDir(), 'locked.db');
    const backend = await open(path, { busyTimeoutMs: 300 });
    const other = new Database(path);
    other.exec('BEGIN IMMEDIATE');
    let ticks = 0;
    const ticker = setInterval(() => ticks++, 5);
    try {
      const waiting = backend.transaction(async () => ({ result: 1, writes: put({ k: 1 }) }));
      await sleep(150);
      expect(ticks).toBeGreaterThan(3); // the loop kept running while the transaction waited (blocked: 0)
      other.exec('COMMIT');
      await expect(waiting).resolves.toMatchObject({ result: 1 });
      other.exec('BEGIN IMMEDIATE');
      const started = Date.now();
      await expect(backend.transaction(async () => ({ result: 2, writes: put({ k: 2 }) }))).rejects.toMatchObject({
        code: expect.stringMatching(/^SQLITE_BUSY/),
      });
      expect(Date.now() - started).toBeGreaterThanOrEqual(290);
    } finally {
      clearInterval(ticker);
      other.exec('ROLLBACK');
      other.close();
    }
  });
});

describe('the file identity check', () => {
  it.each(['removed', 'replaced'])(
    'a -wal file %s under a running backend fails writes and then reads with STORE_UNAVAILABLE',
    async (how) => {
      const dir = tempDir();
      const path = join(dir, 'store.db');
      const store = new VersionedStore(await open(path), { sweepIntervalMs: 0 });
      await store.transact((tx) => tx.set('k', 1, { by: 'a' }));
      if (how === 'removed') rmSync(`${path}-wal`);
      else {
        copyFileSync(`${path}-wal`, join(dir, 'other-wal'));
        renameSync(join(dir, 'other-wal'), `${path}-wal`);
      }
      const gone = { code: 'STORE_UNAVAILABLE', details: { cause: 'STORE_FILE_GONE' } };
      await expect(store.transact((tx) => tx.set('k', 2, { by: 'a' }))).rejects.toMatchObject(gone);
      await expect(store.get('k')).rejects.toMatchObject(gone);
      await expect(store.list({ lo: '', hi: '\u{10ffff}', limit: 10 })).rejects.toMatchObject(gone);
    },
  );

  it('reads alone notice a removed database within about a second, without a stat on every read', async () => {
    const path = join(tempDir(), 'store.db');
    const store = new VersionedStore(await open(path), { sweepIntervalMs: 0 });
    await store.transact((tx) => tx.set('k', 1, { by: 'a' }));
    for (const suffix of ['', '-wal', '-shm']) rmSync(path + suffix);
    const deadline = Date.now() + 3000;
    let error: unknown;
    while (Date.now() < deadline && !error) {
      await store.get('k').catch((e: unknown) => (error = e));
      await sleep(50);
    }
    expect(error).toMatchObject({ code: 'STORE_UNAVAILABLE', details: { cause: 'STORE_FILE_GONE' } });
  });
});

describe('commits of other processes', () => {
  const collect = (backend: SqliteBackend) => {
    const events: CommitEvent[] = [];
    const stop = backend.onForeignCommit((e) => events.push(e));
    return { events, stop };
  };
  const until = async (check: () => boolean, ms: number) => {
    const deadline = Date.now() + ms;
    while (!check() && Date.now() < deadline) await sleep(2);
    return check();
  };

  it('arrive through the notify file within milliseconds, with their keys, one event per commit', async () => {
    const path = join(tempDir(), 'notify.db');
    const watcher = await open(path, { pollMs: 60_000 }); // the safety poll cannot be what delivers them
    const writer = await open(path);
    const { events, stop } = collect(watcher);
    const started = performance.now();
    const { revision } = await writer.transaction(async () => ({ result: null, writes: put({ a: 1, b: 2 }) }));
    expect(await until(() => events.length > 0, 2000)).toBe(true);
    expect(performance.now() - started).toBeLessThan(500);
    expect(events).toEqual([{ revision, keys: ['a', 'b'] }]);
    // two concurrent transactions in one group commit are still two commit events
    await Promise.all([
      writer.transaction(async () => ({ result: null, writes: put({ c: 1 }) })),
      writer.transaction(async () => ({ result: null, writes: put({ d: 1 }) })),
    ]);
    expect(await until(() => events.length >= 3, 2000)).toBe(true);
    expect(events.slice(1)).toEqual([
      { revision: revision + 1, keys: ['c'] },
      { revision: revision + 2, keys: ['d'] },
    ]);
    stop();
  });

  it('still arrive by the slow poll where the notify file cannot be used', async () => {
    const path = join(tempDir(), 'nowatch.db');
    mkdirSync(`${path}-notify`); // a directory in its place: no process can write the notification
    const slow = await open(path, { pollMs: 60_000 });
    const polling = await open(path, { pollMs: 100 });
    const writer = await open(path);
    const slowEvents = collect(slow);
    const polled = collect(polling);
    await writer.transaction(async () => ({ result: null, writes: put({ a: 1 }) }));
    expect(await until(() => polled.events.length > 0, 3000)).toBe(true);
    expect(polled.events).toEqual([{ revision: 1, keys: ['a'] }]);
    expect(slowEvents.events).toEqual([]);
    slowEvents.stop();
    polled.stop();
  });

  it('report a gap when the change log was pruned past what the listener saw', async () => {
    const path = join(tempDir(), 'gap.db');
    mkdirSync(`${path}-notify`); // no notifications: the watcher reads on its poll only, after all of this
    const watcher = await open(path, { pollMs: 700 });
    const writer = await open(path);
    const { events, stop } = collect(watcher);
    await writer.transaction(async () => ({ result: null, writes: new Map([['a', { record: record(1), log: false }]]) }));
    await writer.transaction(async () => ({ result: null, writes: put({ b: 1 }) }));
    expect(await writer.pruneChanges(Date.now() + 1000, 100)).toBe(1);
    await writer.transaction(async () => ({ result: null, writes: put({ c: 1 }) }));
    expect(events).toEqual([]);
    expect(await until(() => events.length > 0, 3000)).toBe(true);
    expect(events).toEqual([{ gap: true }]);
    // after the gap, commits arrive with their keys again
    await writer.transaction(async () => ({ result: null, writes: put({ d: 1 }) }));
    expect(await until(() => events.length > 1, 3000)).toBe(true);
    expect(events[1]).toEqual({ revision: 4, keys: ['d'] });
    stop();
  });

  it('nobody listening: no timers, no watchers, no reads; they come with the first listener and go with the last', async () => {
    // Every timer and file watcher the backend creates, told apart from the test runner's by where it was made.
    const made = new Map<number, string>();
    const gone = new Set<number>();
    const hook = createHook({
      init(id, type) {
        if ((type === 'Timeout' || type === 'FSEVENTWRAP') && /src[\\/]store[\\/]sqlite[\\/]/.test(new Error().stack ?? ''))
          made.set(id, type);
      },
      destroy(id) {
        gone.add(id);
      },
    });
    const path = join(tempDir(), 'idle.db');
    const elsewhere = await open(path);
    const backend = await open(path);
    const idle = sleep(1500); // made before the hook, so it is not counted
    hook.enable();
    try {
      await backend.transaction(async () => ({ result: null, writes: put({ a: 1 }) }));
      await elsewhere.transaction(async () => ({ result: null, writes: put({ b: 1 }) }));
      await backend.get('a');
      await idle;
      expect([...made.values()]).toEqual([]);
      const first = backend.onForeignCommit(() => {});
      const second = backend.onForeignCommit(() => {});
      expect([...made.values()].sort()).toEqual(['FSEVENTWRAP', 'Timeout']);
      first();
      second();
      await new Promise((resolve) => setImmediate(resolve));
      await new Promise((resolve) => setImmediate(resolve));
      expect([...made.keys()].filter((id) => !gone.has(id))).toEqual([]);
    } finally {
      hook.disable();
    }
  });
});

describe('files of the previous version', () => {
  /** A database as the previous version (@keyv/sqlite 4 + node-sqlite3) left it, built with raw SQL. */
  function oldFile(path: string): void {
    const db = new Database(path);
    db.pragma('journal_mode = WAL');
    db.exec(`CREATE TABLE blackboard(key VARCHAR(4096) PRIMARY KEY, value TEXT);
      CREATE INDEX blackboard_exp ON blackboard(json_extract(value, '$.value.exp')) WHERE json_extract(value, '$.value.exp') IS NOT NULL;`);
    const insert = db.prepare('INSERT INTO blackboard(key, value) VALUES (?, ?)');
    const now = Date.now();
    insert.run('m\x1frevision', JSON.stringify({ value: 7 }));
    insert.run('d\x1f-\x1fglobal\x1fkept', JSON.stringify({ value: { v: { a: [1, 2.5, 'x'] }, ver: 3, rev: 6, at: now, by: 'old' } }));
    insert.run('d\x1f-\x1fglobal\x1fexpired', JSON.stringify({ value: { v: 1, ver: 1, rev: 4, at: now, by: 'old', exp: now - 1000 } }));
    insert.run('d\x1f-\x1fglobal\x1flater', JSON.stringify({ value: { v: 2, ver: 1, rev: 7, at: now, by: 'old', exp: now + 3_600_000 } }));
    db.close();
  }

  it('keep working: several processes upgrade one at once; records, revision and expiry carry over', async () => {
    const path = join(tempDir(), 'old.db');
    oldFile(path);
    const backends = await Promise.all(Array.from({ length: 4 }, () => open(path)));
    const [b] = backends;
    expect(await b.revision()).toBe(7);
    expect(await b.get('d\x1f-\x1fglobal\x1fkept')).toEqual({ v: { a: [1, 2.5, 'x'] }, ver: 3, rev: 6, at: expect.any(Number), by: 'old' });
    expect(await b.get('m\x1frevision')).toBeUndefined(); // the old revision row became metadata
    const listed = await b.list({ lo: 'd\x1f', hi: 'd\x20', limit: 10, now: Date.now() });
    expect(listed.rows.map(([key]) => key)).toEqual(['d\x1f-\x1fglobal\x1fkept', 'd\x1f-\x1fglobal\x1flater']);
    expect(await b.due({ now: Date.now(), tombstonesBefore: 0, limit: 10 })).toEqual(['d\x1f-\x1fglobal\x1fexpired']);
    const store = new VersionedStore(backends[1], { sweepIntervalMs: 0 });
    const { result, revision } = await store.transact((tx) => tx.set('d\x1f-\x1fglobal\x1fkept', 'new', { by: 'new' }));
    expect(result.version).toBe(4);
    expect(revision).toBe(8);
    // opening again changes nothing
    const again = await open(path);
    expect(await again.revision()).toBe(8);
    expect((await again.get('d\x1f-\x1fglobal\x1fkept'))!.v).toBe('new');
  });
});

describe('large records read again', () => {
  /** Texts of one length (about 144 KB stored), different for each `i`. */
  const big = (i: number): string => `${String(i).padStart(6, '0')}${'é—x'.repeat(24_000)}`;
  const readIn = async (backend: SqliteBackend, key: string) =>
    (
      await backend.transaction(async (tx) => {
        const got = await tx.get(key);
        const listed = await tx.list({ lo: key, hi: `${key}\u0000`, limit: 10, now: Date.now() });
        return { result: { got: got?.v, listed: listed.map(([, r]) => r.v) }, writes: new Map() };
      })
    ).result;
  /** Counts a connection's whole-text reads of one record (the size-and-head reads are another statement). */
  const wholeReads = (backend: SqliteBackend, connection: 'w' | 'r' = 'w'): { count: number } => {
    const statement = (backend as unknown as Record<'w' | 'r', { get: { get: (key: string) => unknown } }>)[connection].get;
    const counter = { count: 0 };
    const get = statement.get.bind(statement);
    statement.get = (key: string) => {
      counter.count++;
      return get(key);
    };
    return counter;
  };

  it('a record another process rewrote at the same size is read as it is now, never as this process remembers it', async () => {
    const path = join(tempDir(), 'texts.db');
    const [a, b] = [await open(path), await open(path)];
    for (let i = 0; i < 12; i++) {
      const [writer, reader] = i % 2 === 0 ? [a, b] : [b, a];
      await writer.transaction(async () => ({ result: 0, writes: put({ doc: big(i) }) }));
      // the writer holds what it committed; the other read (and held) the previous text of the same size
      expect(await readIn(writer, 'doc')).toEqual({ got: big(i), listed: [big(i)] });
      expect(await readIn(reader, 'doc')).toEqual({ got: big(i), listed: [big(i)] });
    }
  });

  it('a transaction gets a large record this process holds without reading it whole; only committed texts are held', async () => {
    const path = join(tempDir(), 'held.db');
    const [a, b] = [await open(path), await open(path)];
    const whole = wholeReads(a);
    await a.transaction(async () => ({ result: 0, writes: put({ doc: big(1) }) }));
    expect(await readIn(a, 'doc')).toEqual({ got: big(1), listed: [big(1)] });
    expect(whole.count).toBe(0);
    // written by another process: read whole once, then held
    await b.transaction(async () => ({ result: 0, writes: put({ doc: big(2) }) }));
    expect(await readIn(a, 'doc')).toEqual({ got: big(2), listed: [big(2)] });
    expect(whole.count).toBe(1);
    expect(await readIn(a, 'doc')).toEqual({ got: big(2), listed: [big(2)] });
    expect(whole.count).toBe(1);
    // in one batch, a later transaction reads an earlier one's write whole: it is not committed yet, so not held from
    // that read; it is held once the batch commits
    const [, seen] = await Promise.all([
      a.transaction(async () => ({ result: 0, writes: put({ doc: big(3) }) })),
      a.transaction(async (tx) => ({ result: (await tx.get('doc'))?.v, writes: new Map() })),
    ]);
    expect(seen.result).toBe(big(3));
    expect(whole.count).toBe(2);
    expect(await readIn(a, 'doc')).toEqual({ got: big(3), listed: [big(3)] });
    expect(whole.count).toBe(2);
    // a small text in its place is read as it is
    await b.transaction(async () => ({ result: 0, writes: put({ doc: 'small' }) }));
    expect(await readIn(a, 'doc')).toEqual({ got: 'small', listed: ['small'] });
  });

  it('a plain read of a large record this process holds takes it by size and first characters, never a stale one', async () => {
    const path = join(tempDir(), 'plain.db');
    const [a, b] = [await open(path), await open(path)];
    const whole = wholeReads(a, 'r');
    const keyv = (a as unknown as { keyv: { get: (key: string) => Promise<unknown> } }).keyv;
    const viaKeyv = { count: 0 };
    const keyvGet = keyv.get.bind(keyv);
    keyv.get = (key: string) => {
      viaKeyv.count++;
      return keyvGet(key);
    };
    const plain = async (key: string) => {
      const listed = await a.list({ lo: key, hi: `${key}\u0000`, limit: 10, now: Date.now() });
      return { got: (await a.get(key))?.v, listed: listed.rows.map(([, r]) => r.v) };
    };
    // a key this process holds nothing of is read through Keyv, as any small record is
    await b.transaction(async () => ({ result: 0, writes: put({ doc: big(0), small: 'x' }) }));
    expect((await a.get('small'))?.v).toBe('x');
    expect((await a.get('doc'))?.v).toBe(big(0));
    expect(viaKeyv.count).toBe(2);
    // written here: held, so neither a get nor a listing reads its text
    await a.transaction(async () => ({ result: 0, writes: put({ doc: big(1) }) }));
    expect(await plain('doc')).toEqual({ got: big(1), listed: [big(1)] });
    expect({ whole: whole.count, viaKeyv: viaKeyv.count }).toEqual({ whole: 0, viaKeyv: 2 });
    const held = await a.get('doc');
    expect(Object.isFrozen(held) && Object.isFrozen(held!.v)).toBe(true);
    // rewritten elsewhere at the same size: read whole once (the get; the listing then finds it held), then held
    await b.transaction(async () => ({ result: 0, writes: put({ doc: big(2) }) }));
    expect(await plain('doc')).toEqual({ got: big(2), listed: [big(2)] });
    expect(whole.count).toBe(1);
    expect(await plain('doc')).toEqual({ got: big(2), listed: [big(2)] });
    expect(whole.count).toBe(1);
    // small now, then a corrupt large row in its place, then gone
    await b.transaction(async () => ({ result: 0, writes: put({ doc: 'small' }) }));
    expect(await plain('doc')).toEqual({ got: 'small', listed: ['small'] });
    await a.transaction(async () => ({ result: 0, writes: put({ doc: big(3) }) }));
    const raw = new Database(path);
    raw.prepare('UPDATE blackboard SET value = ? WHERE key = ?').run(`{"value":{"rev":1,"v":"${'x'.repeat(30_000)}`, 'doc');
    await expect(a.get('doc')).rejects.toMatchObject({ code: 'STORE_UNAVAILABLE', details: { cause: 'CORRUPT_RECORD' } });
    expect((await a.list({ lo: 'doc', hi: 'doc\u0000', limit: 10, now: Date.now() })).rows).toEqual([]);
    raw.prepare('DELETE FROM blackboard WHERE key = ?').run('doc');
    raw.close();
    expect(await a.get('doc')).toBeUndefined();
  });

  it('a text read in a batch that then failed to commit is never taken for a later write at the same revision', async () => {
    const path = join(tempDir(), 'aborted.db');
    const [a, b] = [await open(path), await open(path)];
    const at = Date.now();
    const same = (v: string): Writes => new Map([['doc', { record: { v, ver: 1, at, by: 't' }, log: true }]]);
    await a.transaction(async () => ({ result: 0, writes: put({ other: 1 }) }));
    // The batch's commit fails (as on a full disk): a later transaction of it read the earlier one's write.
    const commit = (a as unknown as { w: { commit: { run: () => unknown } } }).w.commit;
    const run = commit.run.bind(commit);
    commit.run = () => {
      commit.run = run;
      throw Object.assign(new Error('database or disk is full'), { code: 'SQLITE_FULL' });
    };
    const settled = await Promise.allSettled([
      a.transaction(async () => ({ result: 0, writes: same(big(3)) })),
      a.transaction(async (tx) => ({ result: (await tx.get('doc'))?.v, writes: new Map() })),
    ]);
    expect(settled.map((s) => s.status)).toEqual(['rejected', 'rejected']);
    // Another process writes the same key at that same revision, size, time and author: only the value differs.
    await b.transaction(async () => ({ result: 0, writes: same(big(4)) }));
    expect(await readIn(a, 'doc')).toEqual({ got: big(4), listed: [big(4)] });
  });

  it('a list that grew long is written from UTF-8 bytes, stored as text: every reader reads it back as it was written', async () => {
    const path = join(tempDir(), 'bytes.db');
    const [a, b] = [await open(path), await open(path)];
    const store = new VersionedStore(a, { sweepIntervalMs: 0 });
    // quotes, a backslash, a control, an astral character and multi-byte text, so that a size counted wrong shows
    const message = (i: number) => ({ id: i, text: `${i} "é" \\ \n 😀 ${'—'.repeat(200)}` });
    const expected: Json[] = [];
    for (let i = 0; i < 150; i++) {
      await store.transact((tx) => tx.update('messages', 'append', message(i), { by: 't' }));
      expected.push(message(i));
    }
    const raw = new Database(path, { readonly: true });
    const row = raw.prepare(`SELECT typeof(value) AS type, value FROM blackboard WHERE key = 'messages'`).get() as {
      type: string;
      value: string;
    };
    raw.close();
    expect(row.type).toBe('text');
    expect(row.value.length).toBeGreaterThan(BYTES_FROM_CHARS);
    expect(row.value).toBe(JSON.stringify({ value: { rev: 150, v: expected, ver: 150, at: JSON.parse(row.value).value.at, by: 't' } }));
    // another process reads it through Keyv and in a transaction; the writer holds it, so reads it by size alone
    expect((await b.get('messages'))?.v).toEqual(expected);
    expect(await readIn(b, 'messages')).toEqual({ got: expected, listed: [expected] });
    const whole = wholeReads(a, 'r');
    expect((await a.get('messages'))?.v).toEqual(expected);
    expect(whole.count).toBe(0);
  });

  it('a held record is frozen: no caller can change what the next read gets, and an append makes a new list', async () => {
    const store = new VersionedStore(await open(join(tempDir(), 'frozen.db')), { sweepIntervalMs: 0 });
    const message = (i: number) => ({ id: i, text: `${i}`.padEnd(300, '.') });
    for (let i = 0; i < 80; i++) await store.transact((tx) => tx.update('messages', 'append', message(i), { by: 't' }));
    const read = await store.transact(async (tx) => (await tx.get('messages'))!.value as Array<{ id: number; text: string }>);
    expect(read.result).toHaveLength(80);
    expect(Object.isFrozen(read.result) && Object.isFrozen(read.result[0])).toBe(true);
    expect(() => read.result.push(message(99))).toThrow(TypeError);
    expect(() => {
      read.result[0].text = 'changed';
    }).toThrow(TypeError);
    await store.transact((tx) => tx.update('messages', 'append', message(80), { by: 't' }));
    expect(read.result).toHaveLength(80); // what the caller holds did not grow under it
    const again = await store.transact(async (tx) => (await tx.get('messages'))!.value as Array<{ id: number; text: string }>);
    expect(again.result.map((m) => m.id)).toEqual(Array.from({ length: 81 }, (_, i) => i));
    expect(again.result[0].text).toBe(message(0).text);
  });

  it("a written value stays the caller's: not frozen, and changing it afterwards changes nothing stored", async () => {
    const store = new VersionedStore(await open(join(tempDir(), 'callers.db')), { sweepIntervalMs: 0 });
    const mine = { list: Array.from({ length: 80 }, (_, i) => ({ id: i, text: 'x'.repeat(300) })) };
    await store.transact((tx) => tx.set('doc', mine, { by: 't' }));
    const operand = { id: 80, text: 'y'.repeat(300) };
    await store.transact((tx) => tx.update('list', 'append', operand, { by: 't' }));
    for (let i = 0; i < 60; i++) await store.transact((tx) => tx.update('list', 'append', { id: i }, { by: 't' }));
    expect(Object.isFrozen(mine) || Object.isFrozen(mine.list) || Object.isFrozen(mine.list[0]) || Object.isFrozen(operand)).toBe(false);
    mine.list.push({ id: 99, text: 'later' });
    mine.list[0].text = 'changed';
    operand.text = 'changed';
    const read = await store.transact(async (tx) => ({ doc: (await tx.get('doc'))!.value, list: (await tx.get('list'))!.value }));
    expect(read.result.doc).toEqual({ list: Array.from({ length: 80 }, (_, i) => ({ id: i, text: 'x'.repeat(300) })) });
    expect(Object.isFrozen(read.result.doc)).toBe(true); // the store's own copy, held
    expect((read.result.list as Array<{ text?: string }>)[0]).toEqual({ id: 80, text: 'y'.repeat(300) });
  });

  it("a caller's own frozen objects are copied, not shared: what is frozen only on the outside may still change", async () => {
    const path = join(tempDir(), 'shallow.db');
    const store = new VersionedStore(await open(path), { sweepIntervalMs: 0 });
    // Frozen by the caller, shallowly: the `meta` inside each message stays the caller's to change.
    const mine = Array.from({ length: 80 }, (_, i) => Object.freeze({ id: i, meta: { text: 'x'.repeat(300) } }));
    await store.transact((tx) => tx.set('list', mine, { by: 't' }));
    // Appends write the list again from what the store holds of it; then the caller changes its own objects.
    await store.transact((tx) => tx.update('list', 'append', { id: 80, meta: { text: 'y' } }, { by: 't' }));
    for (const message of mine) message.meta.text = 'changed';
    await store.transact((tx) => tx.update('list', 'append', { id: 81, meta: { text: 'z' } }, { by: 't' }));
    const held = await store.transact(async (tx) => (await tx.get('list'))!.value as Array<{ meta: { text: string } }>);
    expect(held.result.slice(0, 80).every((m) => m.meta.text === 'x'.repeat(300))).toBe(true);
    await store.close();
    // And as written to the file: another process reads the same.
    const other = new VersionedStore(await open(path), { sweepIntervalMs: 0 });
    const stored = (await other.get('list'))!.value as Array<{ meta: { text: string } }>;
    expect(stored).toHaveLength(82);
    expect(stored.slice(0, 80).every((m) => m.meta.text === 'x'.repeat(300))).toBe(true);
    await other.close();
  });

  it('a held record is what was stored: a Date in a written value is held as its ISO text, and what JSON leaves out is left out', async () => {
    const store = new VersionedStore(await open(join(tempDir(), 'dates.db')), { sweepIntervalMs: 0 });
    const at = new Date(Date.UTC(2026, 10, 28));
    const nothing = { toJSON: () => undefined };
    const list = Array.from({ length: 80 }, (_, i) => ({ i, at, text: 'x'.repeat(300) }));
    const value = { at, nothing, missing: undefined, list: [...list, nothing, undefined] } as unknown as Json;
    await store.transact((tx) => tx.set('doc', value, { by: 't' }));
    const read = await store.transact(async (tx) => (await tx.get('doc'))!.value);
    const stored = JSON.parse(JSON.stringify(value));
    expect(read.result).toStrictEqual(stored); // no Date, no {} for it, no undefined member; nulls where the file has them
    expect((read.result as { at: unknown }).at).toBe(at.toISOString());
  });

  it('a committed write that cannot be held is still answered, and read back from the file', async () => {
    const store = new VersionedStore(await open(join(tempDir(), 'unheld.db')), { sweepIntervalMs: 0 });
    // Written as JSON like any value; making the store's frozen copy of it, after the commit, throws.
    const odd = Object.defineProperty({}, 'x', {
      enumerable: true,
      get: () => {
        if (new Error().stack?.includes('frozenCopy')) throw new Error('not now');
        return 1;
      },
    });
    const value = { odd, list: Array.from({ length: 80 }, (_, i) => ({ i, text: 'x'.repeat(300) })) } as unknown as Json;
    const written = await store.transact((tx) => tx.set('doc', value, { by: 't' }));
    expect(written.revision).toBeGreaterThan(0);
    const read = await store.transact(async (tx) => (await tx.get('doc'))!.value as { odd: unknown });
    expect(read.result.odd).toEqual({ x: 1 });
  });

  it('a record from 16 KiB is held; a large row written with its revision last (an older version) is read whole every time', async () => {
    const path = join(tempDir(), 'threshold.db');
    const a = await open(path);
    const whole = wholeReads(a);
    const medium = { text: 'm'.repeat(20_000) };
    await a.transaction(async () => ({ result: 0, writes: put({ doc: medium }) }));
    const held = await a.transaction(async (tx) => ({ result: await tx.get('doc'), writes: new Map() }));
    expect(held.result!.v).toEqual(medium);
    expect(Object.isFrozen(held.result) && Object.isFrozen(held.result!.v)).toBe(true); // as this process holds it
    expect(whole.count).toBe(0);
    // As an older version wrote it: the revision last, so its first bytes do not tell which commit wrote it.
    const raw = new Database(path);
    const revision = (raw.prepare(`SELECT value FROM blackboard_meta WHERE name = 'revision'`).get() as { value: number }).value + 1;
    raw.prepare(`UPDATE blackboard_meta SET value = ? WHERE name = 'revision'`).run(revision);
    const text = JSON.stringify({ value: { v: big(7), ver: 2, at: Date.now(), by: 'old', rev: revision } });
    raw.prepare('UPDATE blackboard SET value = ? WHERE key = ?').run(text, 'doc');
    raw.close();
    for (let i = 1; i <= 3; i++) {
      expect(await readIn(a, 'doc')).toEqual({ got: big(7), listed: [big(7)] });
      expect(whole.count).toBe(2 * i); // the get and the listing, each time
    }
  });
});

describe('a corrupt record', () => {
  it('fails reads with CORRUPT_RECORD but can be overwritten with state_set and deleted with state_delete', async () => {
    const path = join(tempDir(), 'corrupt.db');
    const store = new VersionedStore(await open(path), { sweepIntervalMs: 0 });
    const agent = await connect({ store });
    try {
      await agent.ok('state_set', { key: 'broken', value: 1 });
      await agent.ok('state_set', { key: 'broken', value: 2 });
      await agent.ok('state_set', { key: 'gone', value: 1 });
      await agent.ok('state_set', { key: 'fine', value: 1 });
      const raw = new Database(path);
      const damage = raw.prepare(`UPDATE blackboard SET value = ? WHERE substr(key, -length(?)) = ?`);
      damage.run('{"value": {"v": 1', '\x1fbroken', '\x1fbroken');
      damage.run('{"value": {"v": 1}}', '\x1fgone', '\x1fgone');
      raw.close();
      for (const key of ['broken', 'gone']) {
        const error = await agent.err('state_get', { key });
        expect(error.code).toBe('STORE_UNAVAILABLE');
        expect(error.details).toMatchObject({ cause: 'CORRUPT_RECORD' });
      }
      // listings skip what cannot be read
      expect((await agent.ok('state_list', {})).keys.map((e: { key: string }) => e.key)).toEqual(['fine']);
      const written = await agent.ok('state_set', { key: 'broken', value: 'repaired' });
      expect(written.version).toBeGreaterThan(2);
      expect(await agent.ok('state_get', { key: 'broken' })).toMatchObject({ found: true, value: 'repaired' });
      expect(await agent.ok('state_delete', { key: 'gone' })).toMatchObject({ deleted: true });
      expect(await agent.ok('state_get', { key: 'gone' })).toMatchObject({ found: false });
    } finally {
      await agent.close();
    }
  });
});

describe('prepared statements', () => {
  it('bind no bare LIMIT, which SQLite would prepare again on every run; limits still hold', async () => {
    const prepared: string[] = [];
    const prepare = Database.prototype.prepare;
    const spy = vi.spyOn(Database.prototype, 'prepare').mockImplementation(function (this: Database.Database, sql: string) {
      prepared.push(sql);
      return prepare.call(this, sql);
    });
    try {
      const path = join(tempDir(), 'limits.db');
      const backend = await open(path);
      await backend.transaction(async () => ({ result: 0, writes: put({ a: 1, b: 2, c: 3 }) }));
      const all = { lo: '', hi: '\u{10ffff}', now: Date.now() };
      expect((await backend.list({ ...all, limit: 2 })).rows.map(([key]) => key)).toEqual(['a', 'b']);
      expect((await backend.list({ ...all, after: 'a', limit: 1 })).rows.map(([key]) => key)).toEqual(['b']);
      expect((await backend.changes({ after: 0, lo: '', hi: '\u{10ffff}', limit: 2 })).changes).toHaveLength(2);
      expect(await backend.due({ now: Date.now(), tombstonesBefore: Date.now(), limit: 2 })).toEqual([]);
      expect(await backend.pruneChanges(Date.now() + 1, 2)).toBe(2);
      const db = new Database(join(tempDir(), 'keyv.db'));
      const keyv = new KeyvSqlite({ db, table: 'keyv' });
      for (let i = 0; i < 150; i++) await keyv.set(`ns:${i}`, `${i}`);
      let rows = 0;
      for await (const _ of keyv.iterator('ns')) rows++;
      db.close();
      expect(rows).toBe(150);
      const limited = prepared.filter((sql) => /\bLIMIT\b/i.test(sql));
      expect(limited.length).toBeGreaterThanOrEqual(8);
      expect(limited.filter((sql) => /\bLIMIT\s+[?@:$]/i.test(sql))).toEqual([]);
    } finally {
      spy.mockRestore();
    }
  });
});
