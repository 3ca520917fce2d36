// The store contract on Postgres, a fresh schema per store; a second backend on the schema stands for another host.
import { afterAll, describe, it } from 'vitest';
import { testPostgres } from '../services/postgres.js';
import { postgresCase } from './backends.js';
import { storeContractSuite } from './suite.js';

// The suite's server (BLACKBOARD_TEST_POSTGRES_URL), else a throwaway one started here, else skipped with the reason.
const found = await testPostgres();
if ('url' in found) {
  afterAll(() => found.release());
  storeContractSuite(postgresCase(found.url));
} else describe.skip(`store contract (postgres): ${found.skipped}`, () => it('needs a PostgreSQL server', () => {}));
