// Starts a throwaway redis-server (installed from Debian packages) on 127.0.0.1 for tests: AOF on, fsync always.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createConnection, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { makeCertificates } from './certificates.js';

/** A running throwaway Redis. */
export interface RedisHandle {
  /** `redis://127.0.0.1:PORT` (add `?prefix=NAME` for an isolated board) */
  url: string;
  port: number;
  /** the data directory (AOF files) */
  dir: string;
  /** with `tls: true`: `rediss://127.0.0.1:TLSPORT`, and the CA file that signed the server's certificate */
  tlsUrl?: string;
  caFile?: string;
  /** the server's PID while it runs */
  pid(): number | undefined;
  /** SIGTERM, wait for exit, remove the data directory */
  stop(): Promise<void>;
  /** the same as `stop()` (the name the global test setup calls) */
  destroy(): Promise<void>;
  /** SIGKILL, wait for exit; keeps the data directory */
  kill9(): Promise<void>;
  /** starts the server again on the same port and data directory, and waits until it answers */
  restart(): Promise<void>;
  /** SIGSTOP / SIGCONT: a server that hangs without closing connections */
  pause(): void;
  resume(): void;
}

/** Where Debian (`apt-get install redis-server`) and other usual layouts put the binary. */
function findRedisServer(): string | undefined {
  const candidates = ['/usr/bin/redis-server', '/usr/local/bin/redis-server', '/usr/sbin/redis-server'];
  for (const dir of (process.env.PATH ?? '').split(delimiter)) if (dir) candidates.push(join(dir, 'redis-server'));
  return candidates.find((path) => existsSync(path));
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** Resolves once the server answers PING with PONG (not -LOADING while it replays its AOF). */
async function waitReady(port: number, child: ChildProcess, timeoutMs = 20_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      throw new Error(`redis-server exited during start-up (code ${child.exitCode}, signal ${child.signalCode})`);
    }
    const ok = await new Promise<boolean>((resolve) => {
      const socket = createConnection({ port, host: '127.0.0.1' });
      let data = '';
      const done = (result: boolean): void => {
        socket.destroy();
        resolve(result);
      };
      socket.setTimeout(1000, () => done(false));
      socket.on('error', () => done(false));
      socket.on('connect', () => socket.write('PING\r\n'));
      socket.on('data', (chunk) => {
        data += chunk.toString();
        if (data.includes('\r\n')) done(data.startsWith('+PONG'));
      });
    });
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`redis-server on port ${port} did not become ready`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const running = new Set<ChildProcess>();
process.on('exit', () => {
  for (const child of running) child.kill('SIGKILL');
});

/**
 * Starts `redis-server` on a free port of 127.0.0.1 with a fresh temp data directory, AOF on and fsync on every
 * write (`--appendonly yes --appendfsync always --save ''`). Returns `{ skipped }` when no binary is installed.
 */
export async function startRedis(options: { tls?: boolean } = {}): Promise<RedisHandle | { skipped: string }> {
  const binary = findRedisServer();
  if (!binary) return { skipped: 'redis-server is not installed (apt-get install -y --no-install-recommends redis-server)' };
  const dir = mkdtempSync(join(tmpdir(), 'bb-redis-'));
  const port = await freePort();
  const tlsArgs: string[] = [];
  let tls: { port: number; ca: string } | undefined;
  if (options.tls) {
    // Also a plain port, on which readiness is checked.
    let certs: ReturnType<typeof makeCertificates>;
    try {
      certs = makeCertificates(dir);
    } catch {
      rmSync(dir, { recursive: true, force: true });
      return { skipped: 'openssl could not make a test certificate' };
    }
    tls = { port: await freePort(), ca: certs.ca };
    tlsArgs.push('--tls-port', String(tls.port), '--tls-cert-file', certs.cert, '--tls-key-file', certs.key);
    tlsArgs.push('--tls-ca-cert-file', certs.ca, '--tls-auth-clients', 'no');
  }
  let child: ChildProcess | undefined;
  let paused = false;

  const launch = async (): Promise<void> => {
    const proc = spawn(
      binary,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--appendonly',
        'yes',
        '--appendfsync',
        'always',
        '--save',
        '',
        '--daemonize',
        'no',
        '--logfile',
        join(dir, 'redis.log'),
        // for CI's exit trap, which stops by PID any server a test run left behind
        '--pidfile',
        join(dir, 'redis.pid'),
        ...tlsArgs,
      ],
      { stdio: 'ignore' },
    );
    child = proc;
    running.add(proc);
    proc.once('exit', () => running.delete(proc));
    await waitReady(port, proc);
  };

  const waitExit = async (proc: ChildProcess | undefined, signal: NodeJS.Signals): Promise<void> => {
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill(signal);
    await exited;
  };

  await launch();
  const stop = async (): Promise<void> => {
    if (paused) child?.kill('SIGCONT');
    paused = false;
    await waitExit(child, 'SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  };
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    dir,
    ...(tls ? { tlsUrl: `rediss://127.0.0.1:${tls.port}`, caFile: tls.ca } : {}),
    pid: () => child?.pid,
    stop,
    destroy: stop,
    kill9: async () => {
      await waitExit(child, 'SIGKILL');
      paused = false;
    },
    restart: async () => {
      await waitExit(child, 'SIGKILL');
      paused = false;
      await launch();
    },
    pause: () => {
      paused = true;
      child?.kill('SIGSTOP');
    },
    resume: () => {
      paused = false;
      child?.kill('SIGCONT');
    },
  };
}

/**
 * The Redis a test file should use: `BLACKBOARD_TEST_REDIS_URL` when set (the run's shared server), else a throwaway
 * server of its own, which `release()` (call it in `afterAll`) stops and removes. `{ skipped }` when there is neither.
 */
export async function testRedis(): Promise<{ url: string; release(): Promise<void> } | { skipped: string }> {
  const fromEnv = process.env.BLACKBOARD_TEST_REDIS_URL;
  if (fromEnv) return { url: fromEnv, release: async () => {} };
  const started = await startRedis();
  if ('skipped' in started) return started;
  return { url: started.url, release: () => started.stop() };
}
