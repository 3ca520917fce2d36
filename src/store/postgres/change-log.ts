// The Postgres backend's change log: entries after a revision (for followers, and for the commit listener), pruning.
import type pg from 'pg';
import type { ChangeQuery, ChangeRow } from '../types.js';
import type { Connections } from './connections.js';
import type { LogTail } from './listener.js';
import { tablesGone, type Tables } from './schema.js';

/** Entries of a key range after a revision, with the revision and `compacted` of the same snapshot. */
export async function readChanges(
  db: Connections,
  t: Tables,
  query: ChangeQuery,
): Promise<{ changes: ChangeRow[]; revision: number; compacted: number }> {
  // One statement, one snapshot: entries up to the revision it reports, never a later commit's half.
  const { rows } = await db.read<{
    current: string;
    compacted: string;
    revision: string | null;
    key: string | null;
    version: string | null;
    deleted: boolean | null;
  }>(
    `SELECT m.revision AS current, m.compacted, c.revision, c.key, c.version, c.deleted FROM ${t.meta} m
       LEFT JOIN LATERAL (SELECT revision, key, version, deleted FROM ${t.changes}
                           WHERE revision > $1 AND key >= $2 AND key < $3
                           ORDER BY revision, key LIMIT $4) c ON true
      WHERE m.id = 1 ORDER BY c.revision, c.key`,
    [query.after, query.lo, query.hi, query.limit],
  );
  if (rows.length === 0) throw tablesGone(t);
  const changes: ChangeRow[] = [];
  for (const row of rows) {
    if (row.revision === null) continue;
    changes.push({ revision: Number(row.revision), key: row.key!, version: Number(row.version), deleted: row.deleted === true });
  }
  return { changes, revision: Number(rows[0].current), compacted: Number(rows[0].compacted) };
}

/** The change log after `after` with the revision and `compacted` of the same snapshot (for the listener). */
export async function readLog(client: pg.ClientBase, t: Tables, after: number, limit: number): Promise<LogTail> {
  const { rows } = await client.query<{ current: string; compacted: string; revision: string | null; key: string | null }>(
    `SELECT m.revision AS current, m.compacted, c.revision, c.key FROM ${t.meta} m
       LEFT JOIN LATERAL (SELECT revision, key FROM ${t.changes} WHERE revision > $1
                           ORDER BY revision, key LIMIT $2) c ON true
      WHERE m.id = 1`,
    [after, limit],
  );
  if (rows.length === 0) throw tablesGone(t);
  return {
    revision: Number(rows[0].current),
    compacted: Number(rows[0].compacted),
    rows: rows.filter((row) => row.revision !== null).map((row) => ({ revision: Number(row.revision), key: row.key! })),
  };
}

/** Deletes up to `limit` of the oldest entries written at or before `before`, raising `compacted` past them. */
export async function pruneChangeLog(db: Connections, t: Tables, before: number, limit: number): Promise<number> {
  const { rows } = await db.read<{ count: string }>(
    `WITH gone AS (
       DELETE FROM ${t.changes} WHERE ctid IN (SELECT ctid FROM ${t.changes} WHERE at <= $1 ORDER BY at LIMIT $2)
       RETURNING revision),
     mark AS (
       UPDATE ${t.meta} SET compacted = GREATEST(compacted, (SELECT max(revision) FROM gone))
        WHERE id = 1 AND EXISTS (SELECT 1 FROM gone))
     SELECT count(*) AS count FROM gone`,
    [before, limit],
  );
  return Number(rows[0].count);
}
