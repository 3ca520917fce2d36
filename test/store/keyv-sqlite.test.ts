// Keyv's own adapter contract (@keyv/test-suite) run against the SQLite adapter the store reads single records through.
import keyvTestSuite, { keyvIteratorTests } from '@keyv/test-suite';
import Database from 'better-sqlite3';
import Keyv from 'keyv';
import * as vitest from 'vitest';
import { KeyvSqlite } from '../../src/store/sqlite/keyv-sqlite.js';

// Every adapter the suite makes shares one connection, as the store's adapters share its reader connection.
const db = new Database(':memory:');
const store = (): KeyvSqlite => new KeyvSqlite({ db, table: 'keyv' });

vitest.describe('KeyvSqlite under @keyv/test-suite', () => {
  vitest.afterAll(() => db.close());
  keyvTestSuite(vitest, Keyv, store);
  keyvIteratorTests(vitest, Keyv, store);
});
