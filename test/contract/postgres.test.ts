// The store contract on Postgres, a fresh schema per store; a second backend on the schema stands for another host.
import { describe, it } from 'vitest';
import { testPostgresUrl } from '../services/postgres.js';
import { postgresCase } from './backends.js';
import { storeContractSuite } from './suite.js';

// The suite's server (BLACKBOARD_TEST_POSTGRES_URL), else a throwaway one started here, else skipped with the reason.
const found = await testPostgresUrl();
if ('url' in found) storeContractSuite(postgresCase(found.url));
else describe.skip(`store contract (postgres): ${found.skipped}`, () => it('needs a PostgreSQL server', () => {}));
