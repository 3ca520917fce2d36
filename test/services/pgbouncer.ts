// Starts a throwaway PgBouncer in front of a test Postgres: a temp dir, 127.0.0.1, a free port, transaction pooling.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { acceptsConnections, freePort } from './postgres.js';

/** Debian's PgBouncer (apt-get install pgbouncer), or BLACKBOARD_PGBOUNCER. */
export const PGBOUNCER = process.env.BLACKBOARD_PGBOUNCER ?? '/usr/sbin/pgbouncer';

export interface PgBouncerHandle {
  /** the same database as the Postgres URL given, through the pooler */
  url: string;
  stop(): Promise<void>;
}

/**
 * PgBouncer in `pool_mode = transaction` with `poolSize` server connections, in front of `postgresUrl` (trust auth,
 * user `postgres`). It will not run as root, so as root it runs as the `postgres` user. Its pid file
 * (`pgbouncer.pid`, under the temp dir) lets CI stop it whatever happens. `{ skipped }` without the binary.
 */
export async function startPgBouncer(postgresUrl: string, poolSize = 4): Promise<PgBouncerHandle | { skipped: string }> {
  if (!existsSync(PGBOUNCER)) return { skipped: `no PgBouncer at ${PGBOUNCER} (apt-get install pgbouncer)` };
  const target = new URL(postgresUrl);
  // the same database name as behind it, so that a URL through the pooler and one straight to Postgres name one board
  const database = target.pathname.slice(1) || 'postgres';
  const dir = mkdtempSync(join(tmpdir(), 'bb-pgbouncer-'));
  const port = await freePort();
  writeFileSync(join(dir, 'users.txt'), '"postgres" ""\n');
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `${database} = host=${target.hostname} port=${target.port} dbname=${database} user=postgres`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      'pool_mode = transaction',
      `default_pool_size = ${poolSize}`,
      'max_client_conn = 200',
      `pidfile = ${join(dir, 'pgbouncer.pid')}`,
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      '',
    ].join('\n'),
  );
  let uid: number | undefined;
  let gid: number | undefined;
  if (userInfo().uid === 0) {
    uid = Number(spawnSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    gid = Number(spawnSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).stdout.trim());
    if (!Number.isInteger(uid) || !Number.isInteger(gid)) return { skipped: 'running as root and there is no postgres user for PgBouncer' };
    chownSync(dir, uid, gid);
    for (const file of ['users.txt', 'pgbouncer.ini']) chownSync(join(dir, file), uid, gid);
  }
  const child: ChildProcess = spawn(PGBOUNCER, [join(dir, 'pgbouncer.ini')], { uid, gid, cwd: dir, detached: true, stdio: 'ignore' });
  child.unref();
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const kill = (): void => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  };
  process.once('exit', kill);
  const url = `postgres://postgres@127.0.0.1:${port}/${database}`;
  try {
    await acceptsConnections(url, 20_000, () => child.exitCode !== null || child.signalCode !== null);
  } catch (error) {
    kill();
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`PgBouncer ${(error as Error).message}`);
  }
  return {
    url,
    stop: async () => {
      kill();
      await exited;
      process.removeListener('exit', kill);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
