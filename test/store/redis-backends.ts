// Redis backends for one test file: on the run's server (BLACKBOARD_TEST_REDIS_URL), else a throwaway one for the file,
// else every test skipped with the reason; each backend opened is closed after the file.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll } from 'vitest';
import { RedisBackend, type RedisOptions } from '../../src/store/redis/backend.js';
import { testRedis } from '../services/redis.js';

export interface RedisBackends {
  /** the server's URL, without a prefix (set once the file's tests run) */
  readonly url: string;
  /** why this file's tests are skipped, if they are */
  readonly skipped: string | undefined;
  /** a backend on a board of its own (or on `prefix`'s: several on one prefix act as several processes) */
  open(prefix?: string, overrides?: RedisOptions): Promise<RedisBackend>;
  /** closes these with the others after the file */
  track(...backends: RedisBackend[]): void;
}

export function redisBackendsForFile(): RedisBackends {
  let url: string | undefined;
  let skipped: string | undefined;
  let release = async (): Promise<void> => {};
  const opened: RedisBackend[] = [];
  beforeAll(async () => {
    const found = await testRedis();
    if ('skipped' in found) skipped = found.skipped;
    else ({ url, release } = found);
  });
  afterAll(async () => {
    await Promise.allSettled(opened.map((b) => b.close()));
    await release();
  });
  return {
    get url() {
      return url!;
    },
    get skipped() {
      return skipped;
    },
    async open(prefix = `t${randomUUID().slice(0, 8)}`, overrides = {}) {
      const backend = await RedisBackend.open(`${url!}${url!.includes('?') ? '&' : '?'}prefix=${prefix}`, overrides);
      opened.push(backend);
      return backend;
    },
    track(...backends) {
      opened.push(...backends);
    },
  };
}
