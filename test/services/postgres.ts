// Starts a throwaway PostgreSQL server for tests: binaries found on this machine, a temp data dir, 127.0.0.1, a free port.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { makeCertificates } from './certificates.js';

/** A running throwaway Postgres server. */
export interface PostgresHandle {
  /** `postgres://postgres@127.0.0.1:PORT/postgres` (trust auth on loopback, no password) */
  url: string;
  port: number;
  /** with `tls: true`: the CA file that signed the server's certificate (for 127.0.0.1) */
  caFile?: string;
  /** the server's main process id (the postmaster), while it runs */
  readonly pid: number | undefined;
  /** Fast shutdown (SIGINT to the postmaster), waiting for it to exit. The data dir is kept for `restart()`. */
  stop(): Promise<void>;
  /** SIGKILL to the postmaster and every process of it, waiting for them to exit. */
  kill9(): Promise<void>;
  /** SIGSTOP to the server and its backends: a host that hangs without closing its connections. */
  freeze(): void;
  /** SIGCONT after {@link PostgresHandle.freeze}. */
  thaw(): void;
  /** Starts the server again on the same data dir and port, and waits until it accepts connections. */
  restart(): Promise<void>;
  /** Stops the server (if running) and removes its temp dir. */
  destroy(): Promise<void>;
}

export type PostgresStart = PostgresHandle | { skipped: string };

/** Where this machine's PostgreSQL server binaries are (Debian: /usr/lib/postgresql/<major>/bin), newest first. */
export function findPostgresBin(): string | undefined {
  const candidates: string[] = [];
  if (process.env.BLACKBOARD_PG_BIN) candidates.push(process.env.BLACKBOARD_PG_BIN);
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const majors = readdirSync(debian)
      .filter((d) => /^\d+$/.test(d))
      .sort((a, b) => Number(b) - Number(a));
    for (const major of majors) candidates.push(join(debian, major, 'bin'));
  }
  const fromPgConfig = spawnSync('pg_config', ['--bindir'], { encoding: 'utf8' });
  if (fromPgConfig.status === 0) candidates.push(fromPgConfig.stdout.trim());
  return candidates.find((dir) => existsSync(join(dir, 'postgres')) && existsSync(join(dir, 'initdb')));
}

/** A free TCP port on 127.0.0.1 (free when asked; the server binds it right after). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

/**
 * Waits until `url` accepts a connection and a query (a server starting: Postgres, or a pooler in front of it); fails
 * when `exited()` says its process is gone, or after `timeoutMs`.
 */
export async function acceptsConnections(url: string, timeoutMs: number, exited: () => boolean): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (exited()) throw new Error('exited at start-up');
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    client.on('error', () => {});
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => {});
      if (Date.now() > deadline) throw new Error(`did not accept connections within ${timeoutMs / 1000} s (${(error as Error).message})`);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
}

/** Servers still running when this process exits are killed, and their temp dirs removed. */
const running = new Set<{ kill(): void; dir: string }>();
process.on('exit', () => {
  for (const server of running) {
    server.kill();
    rmSync(server.dir, { recursive: true, force: true });
  }
});

/**
 * Initialises a cluster in a temp dir (with `standbyOf`, a read-only standby copied from that running primary) and
 * starts it on 127.0.0.1. Postgres refuses to run as root, so as root the
 * data dir is given to the `postgres` user and the server runs as that user; otherwise it runs as the current user.
 * Returns `{ skipped }` when no PostgreSQL server binaries are installed.
 */
export async function startPostgres(
  options: { maxConnections?: number; tls?: boolean; standbyOf?: PostgresHandle } = {},
): Promise<PostgresStart> {
  const bin = findPostgresBin();
  if (!bin) return { skipped: 'no PostgreSQL server binaries (apt-get install postgresql-15, or set BLACKBOARD_PG_BIN)' };
  const ids = runAs();
  if ('skipped' in ids) return ids;
  const dir = mkdtempSync(join(tmpdir(), 'bb-pg-'));
  const data = join(dir, 'data');
  if (ids.uid !== undefined) chownSync(dir, ids.uid, ids.gid!);
  // A standby is a copy of its primary that follows it (`-R`: it starts in recovery, read-only).
  const [tool, args] = options.standbyOf
    ? ['pg_basebackup', ['-D', data, '-h', '127.0.0.1', '-p', String(options.standbyOf.port), '-U', 'postgres', '-R', '-X', 'stream']]
    : ['initdb', ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C', '--no-sync']];
  const init = spawnSync(join(bin, tool), args, {
    encoding: 'utf8',
    uid: ids.uid,
    gid: ids.gid,
    cwd: dir,
    env: { ...process.env, LC_ALL: 'C' },
  });
  if (init.status !== 0) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`${tool} failed: ${init.stderr || init.stdout}`);
  }
  // Connections for several server processes with their pools and listeners, and contract stores in parallel
  // (appended: a standby's file already says where its primary is, and the later of two settings wins).
  appendFileSync(
    join(data, 'postgresql.auto.conf'),
    [
      `max_connections = ${options.maxConnections ?? 300}`,
      'shared_buffers = 32MB',
      "listen_addresses = '127.0.0.1'",
      `unix_socket_directories = '${dir}'`,
      'log_min_messages = fatal',
      '',
    ].join('\n'),
  );
  if (ids.uid !== undefined) chownSync(join(data, 'postgresql.auto.conf'), ids.uid, ids.gid!);
  let caFile: string | undefined;
  if (options.tls) {
    // TLS besides plain connections (the client chooses with sslmode); the key must be the server user's, mode 0600.
    const certs = makeCertificates(dir);
    if (ids.uid !== undefined) chownSync(certs.key, ids.uid, ids.gid!);
    chmodSync(certs.key, 0o600);
    appendFileSync(join(data, 'postgresql.auto.conf'), `ssl = on\nssl_cert_file = '${certs.cert}'\nssl_key_file = '${certs.key}'\n`);
    caFile = certs.ca;
  }

  const port = await freePort();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  const entry = {
    dir,
    kill: () => {
      if (child?.pid !== undefined && child.exitCode === null && child.signalCode === null) send(serverPids(child.pid), 'SIGKILL');
    },
  };
  running.add(entry);

  const launch = async (): Promise<void> => {
    let log = '';
    const proc = spawn(join(bin, 'postgres'), ['-D', data, '-p', String(port)], {
      uid: ids.uid,
      gid: ids.gid,
      cwd: dir,
      detached: true, // not in the test runner's process group: a Ctrl-C there must not reach it half-way
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, LC_ALL: 'C' },
    });
    proc.stderr!.on('data', (chunk: Buffer) => {
      if (log.length < 20_000) log += chunk.toString();
    });
    proc.unref();
    (proc.stderr as unknown as { unref?: () => void }).unref?.();
    child = proc;
    exited = new Promise((resolve) => proc.once('exit', () => resolve()));
    try {
      await acceptsConnections(url, 30_000, () => proc.exitCode !== null || proc.signalCode !== null);
    } catch (error) {
      throw new Error(`postgres ${(error as Error).message}: ${log}`);
    }
  };

  const running_ = (): number | undefined =>
    child?.pid !== undefined && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
  /** SIGINT: fast shutdown by the postmaster. SIGKILL: the postmaster and every child, as a crash would. */
  const signal = async (sig: NodeJS.Signals, everyProcess: boolean): Promise<void> => {
    const pid = running_();
    if (pid === undefined) return;
    const pids = everyProcess ? serverPids(pid) : [pid];
    send(pids, sig);
    await exited;
    const deadline = Date.now() + 10_000;
    while (Date.now() < deadline && pids.some(alive)) await new Promise((resolve) => setTimeout(resolve, 50));
  };
  const sendToAll = (sig: NodeJS.Signals): void => {
    const pid = running_();
    if (pid !== undefined) send(serverPids(pid), sig);
  };

  try {
    await launch();
  } catch (error) {
    entry.kill();
    running.delete(entry);
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url,
    port,
    ...(caFile ? { caFile } : {}),
    get pid() {
      return child && child.exitCode === null && child.signalCode === null ? child.pid : undefined;
    },
    stop: () => signal('SIGINT', false),
    kill9: () => signal('SIGKILL', true),
    freeze: () => sendToAll('SIGSTOP'),
    thaw: () => sendToAll('SIGCONT'),
    restart: async () => {
      await signal('SIGINT', false);
      await launch();
    },
    destroy: async () => {
      await signal('SIGINT', false);
      running.delete(entry);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/** The postmaster and its children: each backend calls setsid(), so a signal to the process group misses them. */
function serverPids(postmaster: number): number[] {
  const pids = [postmaster];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      // /proc/PID/stat: "pid (comm) state ppid …"; comm may hold spaces, so read after the last ')'.
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
      if (ppid === postmaster) pids.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return pids;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function send(pids: number[], sig: NodeJS.Signals): void {
  for (const pid of pids) {
    try {
      process.kill(pid, sig);
    } catch {
      // already gone
    }
  }
}

/** The user to run Postgres as: `postgres` when we are root (it refuses root), else ourselves. */
function runAs(): { uid?: number; gid?: number } | { skipped: string } {
  if (userInfo().uid !== 0) return {};
  const id = spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' });
  const gid = spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' });
  if (id.status !== 0 || gid.status !== 0) return { skipped: 'running as root and there is no postgres user to run the server as' };
  return { uid: Number(id.stdout.trim()), gid: Number(gid.stdout.trim()) };
}

/**
 * The Postgres server a test file should use: `BLACKBOARD_TEST_POSTGRES_URL` when set (the suite's shared server),
 * else a throwaway server of its own, which `release()` (call it in `afterAll`) stops and removes. `{ skipped }` when
 * there is neither.
 */
export async function testPostgres(): Promise<{ url: string; release(): Promise<void> } | { skipped: string }> {
  const fromEnv = process.env.BLACKBOARD_TEST_POSTGRES_URL;
  if (fromEnv) return { url: fromEnv, release: async () => {} };
  const started = await startPostgres();
  if ('skipped' in started) return started;
  return { url: started.url, release: () => started.destroy() };
}

/** `url` with a fresh, random `?schema=`: an empty, isolated store on a shared server. */
export function withFreshSchema(url: string, prefix = 't'): string {
  return `${url}${url.includes('?') ? '&' : '?'}schema=${prefix}_${Math.random().toString(36).slice(2)}${Date.now().toString(36)}`;
}
