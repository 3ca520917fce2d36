// Throwaway database servers for the whole test run: started when this machine has them installed, always stopped.
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startPostgres } from './services/postgres.js';
import { startRedis } from './services/redis.js';

type Stop = () => Promise<void>;

/**
 * Starts a Postgres (and, where installed, other shareable stores) on 127.0.0.1 in a temp dir and exports its URL to
 * every test file (`BLACKBOARD_TEST_POSTGRES_URL`), unless the URL is already given; points TMPDIR at a directory of
 * the run's own. Says plainly which backends the
 * run skips, and why. Returns the teardown that stops them.
 */
export default async function setup(): Promise<Stop> {
  // Each test project (see vitest.config.ts) runs the global setup again in this same process: the first one serves all.
  if (process.env.BLACKBOARD_TEST_SETUP_PID === String(process.pid)) return async () => {};
  process.env.BLACKBOARD_TEST_SETUP_PID = String(process.pid);
  // Every temp dir of the run — test files', spawned servers', throwaway databases' — goes under one directory that
  // the teardown removes, whether or not a worker got to clean up after itself.
  const runDir = mkdtempSync(join(tmpdir(), 'bb-run-'));
  chmodSync(runDir, 0o755); // the throwaway Postgres runs as the postgres user
  process.env.TMPDIR = runDir;
  const stops: Stop[] = [];
  const lines: string[] = [];
  const servers: Array<[name: string, envVar: string, start: () => Promise<{ url: string; destroy: Stop } | { skipped: string }>]> = [
    ['postgres', 'BLACKBOARD_TEST_POSTGRES_URL', startPostgres],
    ['redis', 'BLACKBOARD_TEST_REDIS_URL', startRedis],
  ];
  for (const [name, envVar, start] of servers) {
    if (process.env[envVar]) {
      lines.push(`${name}: ${process.env[envVar]} (given)`);
      continue;
    }
    const server = await start();
    if ('skipped' in server) {
      lines.push(`${name}: SKIPPED — ${server.skipped}`);
    } else {
      process.env[envVar] = server.url;
      stops.push(server.destroy);
      lines.push(`${name}: throwaway server at ${server.url}`);
    }
  }
  console.error(`\n[mcp-blackboard tests] shareable backends: sqlite (always); ${lines.join('; ')}\n`);
  return async () => {
    // The servers' processes are unref'd, so waiting for their exit alone would let this process end half-way (its
    // exit hooks then kill them, but the run dir would stay behind).
    const keepAlive = setInterval(() => {}, 1000);
    await Promise.allSettled(stops.map((stop) => stop()));
    clearInterval(keepAlive);
    try {
      rmSync(runDir, { recursive: true, force: true, maxRetries: 5, retryDelay: 200 });
    } catch (error) {
      console.error(`[mcp-blackboard tests] could not remove ${runDir}: ${String(error)}`);
    }
  };
}
