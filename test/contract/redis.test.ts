// The store contract on Redis, a fresh key prefix per store; a second backend on the prefix stands for another host.
import { afterAll, describe, it } from 'vitest';
import { testRedis } from '../services/redis.js';
import { redisCase } from './backends.js';
import { storeContractSuite } from './suite.js';

// The run's server (BLACKBOARD_TEST_REDIS_URL), else a throwaway one started here, else skipped with the reason.
const found = await testRedis();
if ('url' in found) {
  afterAll(() => found.release());
  storeContractSuite(redisCase(found.url));
} else describe.skip(`store contract (redis): ${found.skipped}`, () => it('needs a Redis server', () => {}));
