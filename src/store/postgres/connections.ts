// The Postgres backend's connections: the pool, fresh connections past it, statements bounded by a call's time, and
// the plain reads prepared once per connection.
import { createHash } from 'node:crypto';
import pg from 'pg';
import { boundedQuery, CALL_BUDGET_MS, isDriverError } from './fate.js';
import type { PostgresUrl } from './schema.js';

/**
 * Whether a server refused to run a prepared statement: it does not exist on this connection (26000), one of that name
 * exists already (42P05), or its result changed shape since it was prepared (tables made anew differently).
 */
const preparedRefused = (error: unknown): boolean =>
  error instanceof pg.DatabaseError &&
  (error.code === '26000' || error.code === '42P05' || (error.code === '0A000' && /cached plan/.test(error.message)));

/**
 * The name a statement is prepared under: its text's hash, so that a name means one statement wherever it is found.
 * Behind a pooler in transaction mode a connection's prepared statements stay on the server connection they were made
 * on, for any client of the pooler to run by name: numbered in order of first use, a name ran another process's
 * statement there — another schema's table (another board's records), or another statement altogether.
 */
const statementName = (text: string): string => `mcp_blackboard_${createHash('sha256').update(text).digest('hex').slice(0, 40)}`;

/** Whether a statement was given up on this side (the connection's or the call's time ran out). */
const timedOut = (error: unknown): boolean => error instanceof Error && /Query read timeout/.test(error.message);
/** How long a connection given up on is kept for its cancel request to be sent and read. */
const CANCEL_WAIT_MS = 1000;

/**
 * A connection lent to one call, and how to give it back (with the error that broke it: then it is discarded, its
 * statement cancelled on the server first when this side gave up on it, see {@link dropAfter}).
 */
export interface Lent {
  client: pg.ClientBase;
  done(error?: Error): void;
}

/**
 * The pool, and fresh connections beside it. A connection that breaks is dropped (idle: by the pool; lent: when given
 * back with its error) and never reused; a call retried after a broken connection takes a fresh one, not another idle
 * one of the pool that may have broken the same way (a reset or a partition breaks them all).
 */
export class Connections {
  readonly config: pg.ClientConfig;
  /** the commit listener's connection: `config`, or straight to Postgres past a pooler (`listen_host`) */
  readonly listenConfig: pg.ClientConfig;
  readonly pool: pg.Pool;
  readonly statementTimeoutMs: number;
  readonly queryTimeoutMs: number;
  /** The statement that sets the server's timeouts for the transaction it runs in (it follows BEGIN). */
  readonly txTimeouts: string;
  private readonly connectTimeoutMs: number;
  /** Each connection's last statement, for the next to wait for. */
  private readonly running = new WeakMap<pg.ClientBase, Promise<unknown>>();
  /** The names plain reads are prepared under, by statement text (see {@link statementName}). */
  private readonly names = new Map<string, string>();
  /** Whether plain reads are prepared: until a server refuses a prepared statement (see {@link readPrepared}). */
  private prepares = true;
  /** How many transactions may hold a connection at once (see {@link turn}): half the pool, at least one. */
  private turns: number;
  /** Transactions waiting for a turn, oldest first: each is called with the turn it is handed. */
  private readonly waiting: Array<(granted: boolean) => void> = [];
  /** Set when the store closes; {@link ended} rejects then. */
  private ending = false;
  private endNow: (error: Error) => void = () => {};
  private readonly ended = new Promise<never>((_, reject) => {
    this.endNow = reject;
  });

  constructor(
    parsed: PostgresUrl,
    private readonly budgetMs = Math.max(CALL_BUDGET_MS, parsed.statementTimeoutMs),
  ) {
    this.ended.catch(() => {}); // rejected at close whether or not a call is waiting then
    // The server's own timeouts are set in each transaction (`txTimeouts`), not as startup parameters, which poolers
    // such as PgBouncer refuse ("unsupported startup parameter") and could not keep per client anyway.
    this.config = {
      connectionString: parsed.connectionString,
      connectionTimeoutMillis: parsed.connectTimeoutMs,
      // The client gives up a little after the server would, also when the server is unreachable mid-query.
      query_timeout: parsed.statementTimeoutMs + 2000,
      // Keeps idle connections alive through NATs and load balancers, and finds dead ones.
      keepAlive: true,
      keepAliveInitialDelayMillis: 10_000,
      application_name: 'mcp-blackboard',
    };
    this.listenConfig = parsed.listenConnectionString ? { ...this.config, connectionString: parsed.listenConnectionString } : this.config;
    this.statementTimeoutMs = parsed.statementTimeoutMs;
    this.queryTimeoutMs = parsed.statementTimeoutMs + 2000;
    // A statement (a wait for the store's lock too) runs at most statement_timeout; a host that freezes mid-transaction
    // must not hold the lock for long.
    this.txTimeouts = `SELECT set_config('statement_timeout', '${parsed.statementTimeoutMs}', true), set_config('idle_in_transaction_session_timeout', '${parsed.statementTimeoutMs + 5000}', true)`;
    this.connectTimeoutMs = parsed.connectTimeoutMs;
    // Idle connections are closed after 10 s, before a middlebox's idle timeout is likely to have cut them.
    this.pool = new pg.Pool({ ...this.config, max: parsed.poolMax, idleTimeoutMillis: 10_000 });
    this.turns = Math.max(1, Math.floor(parsed.poolMax / 2));
    // Its 'error' events must never go unheard: that would end the process.
    this.pool.on('error', () => {});
    this.pool.on('connect', (client) => client.on('error', () => {}));
  }

  /** When a call that starts now must have answered (its attempts; finding out a write's fate may take a little more). */
  deadline(): number {
    return Date.now() + this.budgetMs;
  }

  /**
   * A pooled connection, or a fresh one (connecting within the call's time). Once the store is closing, none: a call
   * still waiting for a connection fails then, rather than never (the pool forgets its waiters when it ends) or by
   * opening a connection of its own after the store was closed.
   */
  async lend(fresh: boolean, deadline: number): Promise<Lent> {
    if (this.ending) throw closedError();
    if (!fresh) {
      const connecting = this.pool.connect();
      const pooled = await Promise.race([connecting, this.ended]).catch((error: unknown) => {
        // a connection the pool hands out after the race was lost to the store's closing goes back at once
        if (this.ending)
          void connecting.then(
            (late) => late.release(),
            () => {},
          );
        throw error;
      });
      return {
        client: pooled,
        done: (error) => (error ? dropAfter(error, this.config, pooled, () => pooled.release(error)) : pooled.release()),
      };
    }
    const own = this.fresh(deadline);
    const end = (): void => void own.end().catch(() => {});
    await own.connect().catch((error: unknown) => {
      end();
      throw error;
    });
    return { client: own, done: (error) => (error ? dropAfter(error, this.config, own, end) : end()) };
  }

  /**
   * A turn for one transaction (all its attempts), waited for until `deadline`; call the function returned to give it
   * back. Every transaction waits for the board's one lock row, so more at once would only wait there, each on a
   * connection: behind a lock held long (an operator's open transaction, a frozen host) they took the whole pool, the
   * plain reads (which need no lock) failed after waiting 5 s for a connection, and each write retried on a connection
   * of its own past the pool (133 open for `pool_max=10`). A turn not come by the deadline fails, nothing changed.
   */
  async turn(deadline: number): Promise<() => void> {
    if (this.ending) throw closedError();
    const give = (): void => {
      const next = this.waiting.shift();
      if (next) next(true);
      else this.turns++;
    };
    if (this.turns > 0) {
      this.turns--;
      return give;
    }
    const granted = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(take), 1);
        resolve(false);
      }, deadline - Date.now());
      const take = (turn: boolean): void => {
        clearTimeout(timer);
        resolve(turn);
      };
      this.waiting.push(take);
    });
    if (!granted || this.ending) {
      if (granted) give();
      throw this.ending ? closedError() : new Error("timeout: no turn to write within the call's time (the store's lock is held)");
    }
    return give;
  }

  /** An unconnected client of its own, connecting within the call's time. */
  fresh(deadline: number): pg.Client {
    const remaining = Math.max(1, deadline - Date.now());
    const client = new pg.Client({ ...this.config, connectionTimeoutMillis: Math.min(this.connectTimeoutMs, remaining) });
    client.on('error', () => {});
    return client;
  }

  /**
   * A statement on `client` bounded by the call's deadline as well as the connection's own timeout. Statements asked
   * for together (concurrent reads of one transaction) run one after another: a connection runs one at a time.
   */
  query<R extends pg.QueryResultRow>(
    client: pg.ClientBase,
    deadline: number,
    text: string,
    values?: unknown[],
    name?: string,
  ): Promise<pg.QueryResult<R>> {
    const run = (this.running.get(client) ?? Promise.resolve()).then(() =>
      boundedQuery<R>(client, text, values, this.queryTimeoutMs, deadline, name),
    );
    this.running.set(
      client,
      run.catch(() => {}),
    );
    return run;
  }

  /**
   * One statement outside a transaction, bounded by the call's time (`deadline`: a call that reads more than once
   * passes its own); once more on a fresh connection when the first failed on its connection (broken while idle in
   * the pool, reset): a read changes nothing, so a retry is safe. Not once more when this side gave up waiting for it
   * (statement_timeout + 2 s): a read stuck behind a lock would only wait as long again.
   */
  async read<R extends pg.QueryResultRow>(
    text: string,
    values?: unknown[],
    name?: string,
    deadline = this.deadline(),
  ): Promise<pg.QueryResult<R>> {
    for (let fresh = false; ; fresh = true) {
      const { client, done } = await this.lend(fresh, deadline);
      try {
        const result = await this.query<R>(client, deadline, text, values, name);
        done();
        return result;
      } catch (error) {
        done(error as Error);
        if (fresh || !isDriverError(error) || timedOut(error) || Date.now() > deadline - 200) throw error;
      }
    }
  }

  /**
   * {@link read} for the statements every plain read runs (a record, a range, the revision; a fixed set of texts):
   * prepared under a name on each connection at its first use, so Postgres parses and plans them once per connection
   * instead of on every call. A server that refuses a prepared statement (a pooler in transaction mode that does not
   * carry them from one of its connections to another, or a reset that dropped them) turns this off for the process,
   * and the read runs again unprepared: a read changes nothing.
   */
  async readPrepared<R extends pg.QueryResultRow>(text: string, values: unknown[], deadline = this.deadline()): Promise<pg.QueryResult<R>> {
    if (!this.prepares) return this.read<R>(text, values, undefined, deadline);
    let name = this.names.get(text);
    if (name === undefined) {
      name = statementName(text);
      this.names.set(text, name);
    }
    try {
      return await this.read<R>(text, values, name, deadline);
    } catch (error) {
      if (!preparedRefused(error)) throw error;
      this.prepares = false;
      return this.read<R>(text, values, undefined, deadline);
    }
  }

  /** Ends the pool; calls still waiting for a connection fail (STORE_UNAVAILABLE), and no new connection is made. */
  async end(): Promise<void> {
    this.ending = true;
    this.endNow(closedError());
    for (const take of this.waiting.splice(0)) take(false);
    await this.pool.end().catch(() => {});
  }
}

const closedError = (): Error => new Error('the store is closed');

/**
 * Drops `client`, whose statement failed with `error` (`drop`: gives it back broken, or ends it). A statement given up
 * on this side is first cancelled on the server ({@link cancelStatement}); the caller goes on at once either way.
 */
export function dropAfter(error: unknown, config: pg.ClientConfig, client: pg.ClientBase, drop: () => void): void {
  if (timedOut(error)) void cancelStatement(config, client).then(drop);
  else drop();
}

/**
 * Asks the server to stop what `client` runs: a statement this side gave up on (see {@link timedOut}). Plain reads and
 * the commit listener's reads of the change log run without the server's own statement timeout (that needs a
 * transaction, and a round trip more), so one stuck behind a lock, say an operator's `ALTER TABLE` or `VACUUM FULL`,
 * would otherwise go on waiting after its connection is dropped, and each such read would hold one more of the
 * server's connection slots until the lock is gone. A transaction's statement given up on at the call's deadline has
 * the server's timeout, but may have started seconds before it: meanwhile it would hold the store's lock, and every
 * other write would wait behind it. Postgres's cancel request, sent on a connection of its own (a
 * pooler passes it on), ends it. It is sent while `client` is still connected (a pooler finds the statement by it):
 * drop the connection once the returned promise settles, at most {@link CANCEL_WAIT_MS} later. Best-effort: a cancel
 * that cannot be sent changes nothing.
 */
function cancelStatement(config: pg.ClientConfig, client: pg.ClientBase): Promise<void> {
  const target = client as pg.ClientBase & { processID?: number | null; secretKey?: number | null };
  if (!target.processID) return Promise.resolve();
  // The request goes as the driver's own `cancel` sends it, without the check of the statement it is for (the
  // connection is dropped afterwards anyway), which reads the driver's deprecated `activeQuery`.
  const canceller = new pg.Client(config) as pg.Client & {
    host: string;
    port: number;
    connection: {
      connect(portOrPath: number | string, host?: string): void;
      cancel(processID: number, secretKey: number | null | undefined): void;
      once(event: 'connect' | 'end' | 'error', listener: () => void): void;
      on(event: 'error', listener: () => void): void;
      end(): void;
    };
  };
  const con = canceller.connection;
  return new Promise<void>((resolve) => {
    const timer = setTimeout(done, CANCEL_WAIT_MS);
    function done(): void {
      clearTimeout(timer);
      con.end(); // Postgres closes it once it has read the request; this closes it if not
      resolve();
    }
    con.on('error', () => {});
    con.once('connect', () => con.cancel(target.processID!, target.secretKey));
    // the server has read the request when it closes the connection
    con.once('end', done);
    con.once('error', done);
    try {
      if (canceller.host?.startsWith('/')) con.connect(`${canceller.host}/.s.PGSQL.${canceller.port}`);
      else con.connect(canceller.port, canceller.host);
    } catch {
      done();
    }
  });
}
