// Throwaway database servers for the whole test run: started when this machine has them installed, always stopped.
import { startPostgres } from './services/postgres.js';
import { startRedis } from './services/redis.js';

type Stop = () => Promise<void>;

/**
 * Starts a Postgres (and, where installed, other shareable stores) on 127.0.0.1 in a temp dir and exports its URL to
 * every test file (`BLACKBOARD_TEST_POSTGRES_URL`), unless the URL is already given. Says plainly which backends the
 * run skips, and why. Returns the teardown that stops them.
 */
export default async function setup(): Promise<Stop> {
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
    await Promise.allSettled(stops.map((stop) => stop()));
  };
}
