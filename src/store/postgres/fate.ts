// Where a Postgres write failed and what became of it: driver errors, the call's time, and a transaction's fate.
import pg from 'pg';
import type { Writes } from '../types.js';

/**
 * The moments of a write a test may break the connection at (see `PostgresOptions.failPoint`); `written`: a statement
 * carrying large records as parameters ran, its COMMIT not yet sent.
 */
export type FailPoint = 'begin' | 'commit' | 'written' | 'committed' | 'doorbell' | 'resolve';

/** A write's fate once the connection broke after its COMMIT was sent. */
export type Fate = 'committed' | 'aborted' | 'unknown';

/** A write whose COMMIT was sent: what its fate is looked up by. */
export interface SentWrite {
  /** its transaction id (`pg_current_xact_id()`) */
  xid: string;
  /**
   * the server process running it (`pg_backend_pid()`, read inside the transaction), or null; not the connection's own
   * process id, which behind a pooler is one the pooler made up
   */
  pid: number | null;
  /** `pg_postmaster_start_time()` as the transaction saw it: another one later means the server restarted since */
  started: string;
  /** the revision it commits, and the database clock it read (its change log rows carry both) */
  next: number;
  now: number;
  /** the keys it logs in the change log */
  logged: string[];
  /** the change log table */
  changes: string;
}

/** The keys a commit of `writes` logs. */
export const loggedOf = (writes: Writes): string[] => [...writes].filter(([, w]) => w.log && w.record !== null).map(([key]) => key);

/** How long a call may spend on its attempts (a retry included), and how much longer on finding out a write's fate. */
export const CALL_BUDGET_MS = 11_000;
export const RESOLVE_GRACE_MS = 2500;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Errors of the connection itself (refused, reset, timed out), as opposed to an SQL error or a caller's error. */
export function isDriverError(error: unknown): boolean {
  if (error instanceof pg.DatabaseError) {
    // The server ending the session (shutdown, crash of another backend, terminated): the connection is gone.
    return /^(57P|08)/.test(error.code ?? '');
  }
  const e = error as { code?: unknown; message?: unknown } | null;
  if (typeof e?.code === 'string' && /^E[A-Z]+$/.test(e.code)) return true;
  return typeof e?.message === 'string' && /Connection terminated|timeout|not queryable|Client was closed/i.test(e.message);
}

/** A query bounded by the call's deadline as well as the connection's own timeout; `name`: prepared under that name. */
export function boundedQuery<R extends pg.QueryResultRow = pg.QueryResultRow>(
  client: pg.ClientBase,
  text: string,
  values: unknown[] | undefined,
  ownTimeoutMs: number,
  deadline: number,
  name?: string,
): Promise<pg.QueryResult<R>> {
  const query_timeout = Math.max(1, Math.min(ownTimeoutMs, deadline - Date.now()));
  return client.query<R>({ text, values, query_timeout, ...(name !== undefined ? { name } : {}) } as pg.QueryConfig);
}

/**
 * Finds out whether transaction `xid` committed, on fresh connections, until `deadline`. A transaction still in
 * progress (its server process has not yet noticed that the connection is gone, or is waiting behind a partition) is
 * ended by terminating that process, so that it can never commit later: then its status is final. A transaction id
 * "in the future" was lost in a crash before its commit record was written: aborted.
 */
export async function resolveFate(
  config: pg.ClientConfig,
  sent: SentWrite,
  deadline: number,
  failPoint?: (point: FailPoint) => void | Promise<void>,
): Promise<Fate> {
  for (let pause = 50; Date.now() < deadline; pause = Math.min(pause * 2, 500)) {
    const remaining = deadline - Date.now();
    const client = new pg.Client({
      ...config,
      connectionTimeoutMillis: Math.max(1, Math.min(Number(config.connectionTimeoutMillis ?? remaining), remaining)),
      query_timeout: Math.max(1, remaining),
    });
    client.on('error', () => {});
    try {
      await failPoint?.('resolve');
      await client.connect();
      while (Date.now() < deadline) {
        let status: string | null;
        try {
          const { rows } = await client.query<{ status: string | null; started: string }>(
            'SELECT pg_xact_status($1::xid8) AS status, pg_postmaster_start_time()::text AS started',
            [sent.xid],
          );
          status = rows[0]?.status ?? null;
          // After a crash-restart, an id whose transaction left nothing on disk is handed out again: a "committed"
          // may then be another transaction's, and only the write's own change log rows can tell.
          if (status === 'committed' && rows[0].started !== sent.started) return await committedInLog(client, sent);
        } catch (error) {
          if (error instanceof pg.DatabaseError && /in the future/.test(error.message)) return 'aborted';
          throw error;
        }
        if (status === 'committed') return 'committed';
        if (status === 'aborted') return 'aborted';
        if (status !== 'in progress' || sent.pid === null) break;
        await client.query(`SELECT pg_terminate_backend(pid, 2000) FROM pg_stat_activity WHERE pid = $1 AND backend_xid = $2::xid8::xid`, [
          sent.pid,
          sent.xid,
        ]);
        await sleep(20);
      }
    } catch {
      // unreachable or failed again: try once more after a pause, while there is time
    } finally {
      client.end().catch(() => {});
    }
    await sleep(Math.min(pause, Math.max(0, deadline - Date.now())));
  }
  return 'unknown';
}

/** One line naming the cause of a failed open: the driver's message, or each address tried when all were refused. */
export function describeError(error: unknown): string {
  const errors = (error as { errors?: unknown[] } | null)?.errors;
  if (Array.isArray(errors) && errors.length > 0) {
    return [...new Set(errors.map((e) => (e as Error).message))].join('; ');
  }
  const message = error instanceof Error ? error.message : String(error);
  return message.split('\n')[0] || String((error as { code?: unknown })?.code ?? 'unknown error');
}

/** Whether the change log holds the write's rows (its revision, its clock, each key it logs); unknown when it logs none. */
async function committedInLog(client: pg.Client, sent: SentWrite): Promise<Fate> {
  if (sent.logged.length === 0) return 'unknown';
  const { rows } = await client.query<{ n: number }>(
    `SELECT count(*)::int AS n FROM ${sent.changes} WHERE revision = $1 AND at = $2 AND key = ANY($3::text[])`,
    [sent.next, sent.now, sent.logged],
  );
  return rows[0].n === sent.logged.length ? 'committed' : 'aborted';
}
