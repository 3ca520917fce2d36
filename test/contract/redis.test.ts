// The store contract on Redis, a fresh key prefix per store; a second connection with the same prefix stands for
// another process. Runs when BLACKBOARD_TEST_REDIS_URL names a server (the test setup starts one where installed).
import { describe, it } from 'vitest';
import { redisCase, redisUrl } from './backends.js';
import { storeContractSuite } from './suite.js';

if (redisUrl) storeContractSuite(redisCase);
else describe('store contract (redis)', () => it.skip('BLACKBOARD_TEST_REDIS_URL is not set: no Redis server to run against', () => {}));
