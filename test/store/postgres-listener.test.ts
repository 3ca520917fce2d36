// The Postgres commit listener's safety poll on a real Postgres: commits whose doorbells ring keep it at its slow
// period; a commit nobody rang for (a pooler in transaction mode swallows notifications) is reported from the change
// log and makes it poll fast, and it returns to the slow period once that long has passed without another; a commit
// the poll reads an instant before its doorbell arrives is reported once and leaves the poll slow.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PostgresBackend } from '../../src/store/postgres/backend.js';
import { readLog } from '../../src/store/postgres/change-log.js';
import { CommitListener } from '../../src/store/postgres/listener.js';
import { parsePostgresUrl, tablesOf } from '../../src/store/postgres/schema.js';
import type { CommitEvent } from '../../src/store/types.js';
import { sleep } from '../helpers.js';
import { testPostgres, withFreshSchema } from '../services/postgres.js';

let pgUrl: string | undefined;
let release: (() => Promise<void>) | undefined;
let skipped: string | undefined;

beforeAll(async () => {
  const found = await testPostgres();
  if ('skipped' in found) skipped = found.skipped;
  else ({ url: pgUrl, release } = found);
}, 60_000);
afterAll(async () => {
  await release?.();
});

const POLL_MS = 300;
const DEAF_POLL_MS = 60;
const DEAF_FOR_MS = 900;

/** The median gap between the polls made in [from, to). */
function medianGap(polls: number[], from: number, to: number): number {
  const at = polls.filter((t) => t >= from && t < to);
  const gaps = at
    .slice(1)
    .map((t, i) => t - at[i])
    .sort((a, b) => a - b);
  expect(gaps.length, `polls between +${from} and +${to}`).toBeGreaterThan(1);
  return gaps[Math.floor(gaps.length / 2)];
}

/** A fresh board's tables, a writer connection, and a listener whose polls and reports are recorded. */
async function listening() {
  const url = withFreshSchema(pgUrl!);
  const { connectionString, schema } = parsePostgresUrl(url);
  // the board's tables, made as a server makes them
  await (await PostgresBackend.open(url)).close();
  const t = tablesOf(schema);
  const db = new pg.Client({ connectionString });
  await db.connect();
  const ring = (revision: number, key: string) =>
    db.query('SELECT pg_notify($1, $2)', [t.channel, JSON.stringify({ r: revision, k: [key], i: 'writer' })]);
  /** One commit as a writer makes it (the revision taken under the lock, its change logged), rung or not. */
  const commit = async (key: string, rung: boolean): Promise<number> => {
    await db.query('BEGIN');
    const revision = Number(
      (await db.query(`UPDATE ${t.meta} SET revision = revision + 1 WHERE id = 1 RETURNING revision`)).rows[0].revision,
    );
    await db.query(`INSERT INTO ${t.changes} (revision, key, version, deleted, at) VALUES ($1, $2, 1, false, $3)`, [
      revision,
      key,
      Date.now(),
    ]);
    await db.query('COMMIT');
    if (rung) await ring(revision, key);
    return revision;
  };
  const start = Date.now();
  const polls: number[] = [];
  const heard: Array<{ at: number; event: CommitEvent }> = [];
  const listener = new CommitListener({
    config: { connectionString },
    channel: t.channel,
    instance: 'reader',
    pollMs: POLL_MS,
    deafPollMs: DEAF_POLL_MS,
    deafForMs: DEAF_FOR_MS,
    readLog: (client, after, limit) => {
      polls.push(Date.now() - start);
      return readLog(client, t, after, limit);
    },
  });
  const onHeard: Array<(event: CommitEvent) => void> = [];
  const unsubscribe = listener.subscribe((event) => {
    heard.push({ at: Date.now() - start, event });
    for (const f of onHeard) f(event);
  });
  await sleep(500); // connected, caught up (a first catch-up may report a gap: waiters look again)
  heard.length = 0;
  const reports = (revision: number) => heard.filter((h) => 'keys' in h.event && h.event.revision === revision);
  /** Waits for `revision` to be reported, within a poll period of `since` (ms after start); when it was. */
  const reported = async (revision: number, since: number): Promise<number> => {
    while (reports(revision).length === 0) {
      expect(Date.now() - start - since, 'reported within a poll period').toBeLessThan(POLL_MS + 500);
      await sleep(10);
    }
    return reports(revision)[0].at;
  };
  return {
    commit,
    ring,
    polls,
    heard,
    onHeard,
    reports,
    reported,
    now: () => Date.now() - start,
    close: async () => {
      unsubscribe();
      await listener.close();
      await db.end();
    },
  };
}

describe('postgres commit listener', () => {
  it('polls fast after a commit nobody rang for, and slow again once that long has passed', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const l = await listening();
    try {
      // rung commits: heard by their doorbells, and the poll keeps its period
      const rung = [await l.commit('a', true), await l.commit('b', true)];
      await sleep(1500);
      expect(l.heard.map((h) => h.event)).toEqual([
        { revision: rung[0], keys: ['a'] },
        { revision: rung[1], keys: ['b'] },
      ]);
      const quietEnd = l.now();
      expect(medianGap(l.polls, quietEnd - 1200, quietEnd)).toBeGreaterThanOrEqual(POLL_MS - 50);

      // a commit nobody rang for: the next poll reports it from the log, once, and the poll speeds up
      const silent = await l.commit('c', false);
      const foundAt = await l.reported(silent, l.now());
      expect(l.reports(silent)).toHaveLength(1);
      await sleep(DEAF_FOR_MS + 1500);
      expect(medianGap(l.polls, foundAt + DEAF_POLL_MS + 50, foundAt + DEAF_FOR_MS - 50)).toBeLessThanOrEqual(DEAF_POLL_MS + 40);
      // back to the slow period once DEAF_FOR_MS passed without another unannounced commit
      expect(medianGap(l.polls, foundAt + DEAF_FOR_MS + 400, foundAt + DEAF_FOR_MS + 1500)).toBeGreaterThanOrEqual(POLL_MS - 50);
      expect(l.heard.map((h) => h.event)).toHaveLength(3);
    } finally {
      await l.close();
    }
  }, 30_000);

  it('stays slow when a poll reads a commit an instant before its doorbell arrives, and reports it once', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const l = await listening();
    try {
      // the commit is read from the log by a poll first; its doorbell comes right after (as when the poll runs
      // between a writer's COMMIT and its doorbell)
      const late = await l.commit('late', false);
      const rang = new Promise<void>((resolve) =>
        l.onHeard.push((event) => {
          if ('keys' in event && event.revision === late) void l.ring(late, 'late').then(() => resolve());
        }),
      );
      const foundAt = await l.reported(late, l.now());
      await rang;
      await sleep(DEAF_FOR_MS + 600);
      expect(medianGap(l.polls, foundAt + 50, foundAt + DEAF_FOR_MS + 500)).toBeGreaterThanOrEqual(POLL_MS - 50);
      expect(l.reports(late)).toHaveLength(1);

      // a doorbell that never comes still speeds the poll up, after the same short wait
      const silent = await l.commit('silent', false);
      const silentAt = await l.reported(silent, l.now());
      await sleep(DEAF_FOR_MS / 2);
      expect(medianGap(l.polls, silentAt + DEAF_POLL_MS + 50, l.now())).toBeLessThanOrEqual(DEAF_POLL_MS + 40);
      expect(l.heard.map((h) => h.event)).toEqual([
        { revision: late, keys: ['late'] },
        { revision: silent, keys: ['silent'] },
      ]);
    } finally {
      await l.close();
    }
  }, 30_000);
});
