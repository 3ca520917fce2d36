// The store contract on SQLite, a new file per store; a second connection to the file stands for another process.
import { sqliteCase } from './backends.js';
import { storeContractSuite } from './suite.js';

storeContractSuite(sqliteCase);
