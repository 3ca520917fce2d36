// npm run bench, checkpoints: ours against LangGraph JS's SqliteSaver and PostgresSaver on the same growing state, in
// one interleaved run (each step: every contender in turn). A step appends a ~300-byte message to a thread's
// message list and saves a checkpoint (every checkpoint kept). Reports step p50 and the median of per-step ratios,
// disk after the last step, the time to list the last 10 and to read one back. BENCH_POSTGRES_URL adds Postgres.
import { statSync, mkdtempSync, rmSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import pg from 'pg';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite';
import { PostgresSaver } from '@langchain/langgraph-checkpoint-postgres';
import { emptyCheckpoint, uuid6 } from '@langchain/langgraph-checkpoint';

const here = fileURLToPath(new URL('.', import.meta.url));
const CLI = join(here, '..', 'dist', 'cli.js');
const STEPS = Number(process.env.BENCH_CHECKPOINT_STEPS ?? (process.env.BENCH_QUICK === '1' ? 100 : 500));
const PG = process.env.BENCH_POSTGRES_URL;
const work = mkdtempSync(join(tmpdir(), 'bb-bench-cp-'));
const log = (...a) => console.error('[bench:checkpoints]', ...a);
const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) / 2] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
};
const pct = (xs, p) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];
const r2 = (x) => Math.round(x * 100) / 100;
const r3 = (x) => Math.round(x * 1000) / 1000;
const mb = (bytes) => r2(bytes / 1e6);
const unique = () => `${Date.now().toString(36)}${Math.random().toString(36).slice(2, 6)}`;
const WORDS = 'the agent read the file and decided to call the search tool with a narrower query before it answers'.split(' ');
/** A ~300-byte chat message, different every step. */
const message = (i) => ({
  role: i % 2 ? 'assistant' : 'user',
  content: `${i}: ${Array.from({ length: 44 }, (_, j) => WORDS[(i * 7 + j * 3) % WORDS.length]).join(' ')}`.slice(0, 260),
  id: `m-${i}`,
});
const sqliteBytes = (path) =>
  ['', '-wal'].reduce((sum, s) => {
    try {
      return sum + statSync(path + s).size;
    } catch {
      return sum;
    }
  }, 0);

async function ours(name, store, extra = []) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [
      CLI,
      '--store',
      store,
      '--agent',
      'bench',
      '--thread',
      'bench',
      '--keep-checkpoints',
      '10000',
      '--tools',
      'agent,checkpoint',
      ...extra,
    ],
    stderr: 'ignore',
  });
  const client = new Client({ name: 'bench', version: '1.0.0' });
  await client.connect(transport);
  const call = async (tool, args) => {
    const r = await client.callTool({ name: tool, arguments: args });
    if (r.isError) throw new Error(`${tool}: ${r.content[0].text}`);
    return r.structuredContent;
  };
  let last;
  return {
    name,
    step: async (i) => {
      await call('state_update', { key: 'messages', op: 'append', value: message(i), scope: 'thread' });
      last = (await call('checkpoint_save', {})).checkpointId;
    },
    listLast10: async () => {
      const { checkpoints } = await call('checkpoint_list', { limit: 10 });
      if (checkpoints.length !== 10) throw new Error('listed fewer than 10');
    },
    read: async () => call('checkpoint_list', { checkpointId: last }),
    restore: async () => call('checkpoint_restore', { checkpointId: last }),
    close: () => client.close(),
  };
}

/** Ours without MCP and without a process boundary (as the savers run): the checkpoint service over the store. */
async function library(name, url, synchronous) {
  const { openBackend } = await import('../dist/store/open.js');
  const { VersionedStore } = await import('../dist/store/versioned-store.js');
  const { Session } = await import('../dist/services/session.js');
  const { CheckpointService } = await import('../dist/services/checkpoint.js');
  const { KvService } = await import('../dist/services/kv.js');
  const store = new VersionedStore(await openBackend(url, { synchronous }), { sweepIntervalMs: 0 });
  const session = await Session.open(store, { agent: 'bench', thread: 'bench' });
  const kv = new KvService(store, session);
  const checkpoints = new CheckpointService(store, session, 10_000);
  let last;
  return {
    name,
    step: async (i) => {
      await kv.update({ key: 'messages', op: 'append', value: message(i), scope: 'thread' });
      last = (await checkpoints.save({})).checkpointId;
    },
    listLast10: async () => {
      if ((await checkpoints.list({ limit: 10 })).checkpoints.length !== 10) throw new Error('listed fewer than 10');
    },
    read: async () => checkpoints.get({ checkpointId: last }),
    restore: async () => checkpoints.restore({ checkpointId: last }),
    close: () => store.close(),
  };
}

function langgraph(name, saver) {
  const config = { configurable: { thread_id: 'bench', checkpoint_ns: '' } };
  const messages = [];
  let parent;
  return {
    name,
    step: async (i) => {
      messages.push(message(i));
      const cp = { ...emptyCheckpoint(), id: uuid6(i), channel_values: { messages }, channel_versions: { messages: i + 1 } };
      const next = await saver.put(
        { configurable: { ...config.configurable, ...(parent ? { checkpoint_id: parent } : {}) } },
        cp,
        { source: 'loop', step: i, parents: {} },
        { messages: i + 1 },
      );
      parent = next.configurable.checkpoint_id;
    },
    listLast10: async () => {
      let n = 0;
      for await (const _ of saver.list(config, { limit: 10 })) n++;
      if (n !== 10) throw new Error('listed fewer than 10');
    },
    read: async () => saver.getTuple(config),
    restore: undefined,
    close: async () => saver.end?.(),
  };
}

async function run(contenders, sizeOf, mainFileOf) {
  const times = Object.fromEntries(contenders.map((c) => [c.name, []]));
  for (let i = 0; i < STEPS; i++) {
    for (const c of contenders) {
      const t = performance.now();
      await c.step(i);
      times[c.name].push(performance.now() - t);
    }
    if (i % 100 === 99) log(`step ${i + 1}`);
  }
  const out = {};
  for (const c of contenders) {
    // Each operation as its own series of 21 (the first one discarded), as a board or a loop repeats it.
    const series = async (fn) => {
      const times = [];
      for (let k = 0; k < 21; k++) {
        const t = performance.now();
        await fn();
        times.push(performance.now() - t);
      }
      return times;
    };
    const list = await series(c.listLast10);
    const read = await series(c.read);
    const restore = c.restore ? await series(c.restore) : [];
    out[c.name] = {
      stepP50Ms: r3(median(times[c.name])),
      stepP99Ms: r3(pct(times[c.name], 99)),
      lastStepsP50Ms: r3(median(times[c.name].slice(-50))),
      diskMb: mb(await sizeOf(c.name)),
      ...(mainFileOf ? { mainFileMb: mb(mainFileOf(c.name)) } : {}),
      listLast10Ms: r3(median(list.slice(1))),
      readMs: r3(median(read.slice(1))),
      ...(restore.length ? { restoreMs: r3(median(restore.slice(1))) } : {}),
    };
  }
  // per-step ratio of each contender to the first baseline listed after it, medians
  return { out, times };
}

const ratio = (a, b) => r2(median(a.map((x, i) => x / b[i])));
const results = { steps: STEPS };

// SQLite: ours --sync full and --sync normal against SqliteSaver, interleaved step by step.
{
  log(`SQLite, ${STEPS} steps`);
  const paths = { full: join(work, 'full.db'), normal: join(work, 'normal.db'), saver: join(work, 'saver.db'), lib: join(work, 'lib.db') };
  const saverDb = new Database(paths.saver);
  const saver = new SqliteSaver(saverDb);
  const contenders = [
    await ours('ours --sync full', `sqlite://${paths.full}`),
    await ours('ours --sync normal', `sqlite://${paths.normal}`, ['--sync', 'normal']),
    await library('ours, in-process, normal', `sqlite://${paths.lib}`, 'NORMAL'),
    langgraph('SqliteSaver', saver),
  ];
  const files = {
    'ours --sync full': paths.full,
    'ours --sync normal': paths.normal,
    'ours, in-process, normal': paths.lib,
    SqliteSaver: paths.saver,
  };
  const { out, times } = await run(
    contenders,
    async (name) => sqliteBytes(files[name]),
    (name) => statSync(files[name]).size,
  );
  out.SqliteSaver.synchronous = saverDb.pragma('synchronous', { simple: true });
  out['ours --sync full'].ratioToSaver = ratio(times['ours --sync full'], times.SqliteSaver);
  out['ours --sync normal'].ratioToSaver = ratio(times['ours --sync normal'], times.SqliteSaver);
  out['ours, in-process, normal'].ratioToSaver = ratio(times['ours, in-process, normal'], times.SqliteSaver);
  results.sqlite = out;
  for (const c of contenders) await c.close();
  saverDb.close();
}

// Postgres: ours against PostgresSaver on the same server, each in a fresh schema.
if (PG) {
  log(`Postgres, ${STEPS} steps`);
  const ourSchema = `bench_cp_${unique()}`;
  const theirSchema = `bench_lg_${unique()}`;
  const saver = PostgresSaver.fromConnString(PG, { schema: theirSchema });
  await saver.setup();
  const libSchema = `bench_cl_${unique()}`;
  const withSchema = (schema) => `${PG}${PG.includes('?') ? '&' : '?'}schema=${schema}`;
  const contenders = [
    await ours('ours (Postgres)', withSchema(ourSchema)),
    await library('ours, in-process (PG)', withSchema(libSchema)),
    langgraph('PostgresSaver', saver),
  ];
  const admin = new pg.Client({ connectionString: PG });
  await admin.connect();
  const schemaBytes = async (schema) =>
    Number(
      (
        await admin.query(
          `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) AS b FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind IN ('r', 'm')`,
          [schema],
        )
      ).rows[0].b,
    );
  const { out, times } = await run(contenders, async (name) =>
    schemaBytes(name === 'PostgresSaver' ? theirSchema : name.includes('in-process') ? libSchema : ourSchema),
  );
  out['ours (Postgres)'].ratioToSaver = ratio(times['ours (Postgres)'], times.PostgresSaver);
  out['ours, in-process (PG)'].ratioToSaver = ratio(times['ours, in-process (PG)'], times.PostgresSaver);
  results.postgres = out;
  for (const c of contenders) await c.close();
  for (const schema of [ourSchema, theirSchema, libSchema]) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await admin.end();
}

// --- the report --------------------------------------------------------------------------------------------------------
const lines = [
  `checkpoints (${STEPS} steps, each appends a ~300-byte message and saves a checkpoint; all kept; interleaved step by step):`,
];
for (const [store, rows] of Object.entries(results).filter(([k]) => k !== 'steps')) {
  for (const [name, r] of Object.entries(rows)) {
    lines.push(
      `  ${name.padEnd(26)} step p50 ${r.stepP50Ms} ms (p99 ${r.stepP99Ms}, last 50 ${r.lastStepsP50Ms})${r.ratioToSaver !== undefined ? ` = ${r.ratioToSaver}x the saver` : ''}; disk ${r.diskMb} MB${r.mainFileMb !== undefined ? ` (${r.mainFileMb} without the WAL)` : ''}; last 10 listed in ${r.listLast10Ms} ms; read one ${r.readMs} ms${r.restoreMs !== undefined ? `; restore ${r.restoreMs} ms` : ''}${r.synchronous !== undefined ? ` (synchronous=${r.synchronous})` : ''}`,
    );
  }
  const saver = store === 'sqlite' ? rows.SqliteSaver : rows.PostgresSaver;
  const mine = store === 'sqlite' ? rows['ours --sync normal'] : rows['ours (Postgres)'];
  if (store === 'sqlite') {
    lines.push(`  goal: --sync normal step <= 2x SqliteSaver.put: ${mine.ratioToSaver}x ${mine.ratioToSaver <= 2 ? 'met' : 'MISSED'}`);
    lines.push(
      `  goal: disk <= 1/5 of SqliteSaver's: ${r2(rows['ours --sync full'].diskMb / saver.diskMb)} ${rows['ours --sync full'].diskMb * 5 <= saver.diskMb ? 'met' : 'MISSED'}`,
    );
  } else {
    lines.push(`  goal: step faster than PostgresSaver.put: ${mine.ratioToSaver}x ${mine.ratioToSaver < 1 ? 'met' : 'MISSED'}`);
  }
  lines.push(`  goal: last 10 listed in <= 1 ms: ${mine.listLast10Ms} ms ${mine.listLast10Ms <= 1 ? 'met' : 'MISSED'}`);
}
console.log(lines.join('\n'));
mkdirSync(join(here, 'results'), { recursive: true });
const latest = join(here, 'results', 'latest.json');
let all = {};
try {
  all = JSON.parse(readFileSync(latest, 'utf8'));
} catch {
  /* first run */
}
writeFileSync(latest, `${JSON.stringify({ ...all, checkpoints: results }, null, 2)}\n`);
rmSync(work, { recursive: true, force: true });
