// node bench/sqlite-commit-parts.mjs: where a `--sync normal` commit's time goes. The same one-record upsert is
// committed through better-sqlite3 with the parts of our write path added one at a time, on a copy of our table layout
// (src/store/sqlite/schema.ts): the read of the old record, the change log row (and its `at` index), the revision row,
// the three stats of the file identity check, the notify byte and the setImmediate of the group commit. Each variant
// runs on its own file, call by call in turn, and last our backend itself; p50 and p90 in µs. Needs npm run build.
// Not part of npm test.
import { mkdtempSync, openSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { openBackend } from '../dist/store/open.js';

const dir = mkdtempSync(join(tmpdir(), 'bb-commit-'));
const CALLS = Number(process.env.COMMIT_CALLS ?? 15_000);
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length * p)];
const layout = (withAtIndex) => `CREATE TABLE blackboard(key VARCHAR(4096) PRIMARY KEY, value TEXT, exp INTEGER, del_at INTEGER);
  CREATE TABLE meta(name TEXT PRIMARY KEY, value INTEGER NOT NULL); INSERT INTO meta VALUES ('revision', 0);
  CREATE INDEX blackboard_expiry ON blackboard(exp) WHERE exp IS NOT NULL;
  CREATE INDEX blackboard_tombstones ON blackboard(del_at) WHERE del_at IS NOT NULL;
  CREATE TABLE changes(rev INTEGER NOT NULL, key TEXT NOT NULL, ver INTEGER NOT NULL, del INTEGER NOT NULL, at INTEGER NOT NULL,
    PRIMARY KEY (rev, key)) WITHOUT ROWID;
  ${withAtIndex ? 'CREATE INDEX changes_at ON changes(at);' : ''}`;
const value = JSON.stringify({ value: { v: { n: 1, text: 'updated state' }, ver: 1, at: Date.now(), by: 'bench', rev: 1 } });
const variants = {};
function variant(name, { get, log, atIndex = true, meta, stat, notify, immediate }) {
  const file = join(dir, `${Object.keys(variants).length}.db`);
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = NORMAL');
  db.exec(layout(atIndex));
  const s = {
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    put: db.prepare(
      'INSERT INTO blackboard(key, value, exp, del_at) VALUES (?, ?, ?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value, exp = excluded.exp, del_at = excluded.del_at',
    ),
    log: db.prepare('INSERT INTO changes(rev, key, ver, del, at) VALUES (?, ?, ?, ?, ?)'),
    rev: db.prepare("SELECT value FROM meta WHERE name = 'revision'"),
    setRev: db.prepare("UPDATE meta SET value = ? WHERE name = 'revision'"),
    get: db.prepare('SELECT value FROM blackboard WHERE key = ?'),
  };
  const fd = openSync(`${file}-notify`, 'w');
  const byte = Buffer.from([42]);
  let rev = 0;
  const body = (i) => {
    s.begin.run();
    if (stat) for (const f of ['', '-wal', '-shm']) statSync(`${file}${f}`, { throwIfNoEntry: false });
    if (meta) rev = s.rev.get().value;
    else rev++;
    if (get) JSON.parse(s.get.get(`k${i % 1000}`)?.value ?? 'null');
    s.put.run(`k${i % 1000}`, value, null, null);
    if (log) s.log.run(rev + 1, `k${i % 1000}`, i, 0, Date.now());
    if (meta) s.setRev.run(rev + 1);
    s.commit.run();
    if (notify) writeSync(fd, byte, 0, 1, 0);
  };
  variants[name] = immediate ? (i) => new Promise((r) => setImmediate(() => r(body(i)))) : async (i) => body(i);
}
variant('upsert alone', {});
variant('+ read of the old record', { get: true });
variant('+ change log row, no at index', { get: true, log: true, atIndex: false });
variant('+ change log row and its at index', { get: true, log: true });
variant('+ revision row', { get: true, log: true, meta: true });
variant('+ 3 stats (file identity)', { get: true, log: true, meta: true, stat: true });
variant('+ notify byte', { get: true, log: true, meta: true, stat: true, notify: true });
variant('+ setImmediate (group commit)', { get: true, log: true, meta: true, stat: true, notify: true, immediate: true });
// and the real thing: our backend's transaction, reading the old record and writing one logged record
const backend = await openBackend(`sqlite://${join(dir, 'ours.db')}`, { synchronous: 'NORMAL' });
variants['our SqliteBackend.transaction'] = (i) =>
  backend.transaction(async (tx) => {
    await tx.get(`k${i % 1000}`);
    const record = { v: { n: i, text: 'updated state' }, ver: i + 1, at: Date.now(), by: 'bench' };
    return { result: null, writes: new Map([[`k${i % 1000}`, { record, log: true }]]) };
  });
const times = Object.fromEntries(Object.keys(variants).map((k) => [k, []]));
for (let i = 0; i < CALLS; i++) {
  for (const [name, run] of Object.entries(variants)) {
    const t = performance.now();
    await run(i);
    if (i >= 1000) times[name].push((performance.now() - t) * 1000);
  }
}
for (const [name, xs] of Object.entries(times))
  console.log(`${name.padEnd(38)} p50 ${pct(xs, 0.5).toFixed(1).padStart(6)} µs   p90 ${pct(xs, 0.9).toFixed(1).padStart(6)} µs`);
await backend.close();
