// The store contract: every case, for one backend. Each backend runs it from a small file of its own.
import type { BackendCase } from './backends.js';
import { casCases } from './cases/cas.js';
import { changesCases } from './cases/changes.js';
import { listCases } from './cases/list.js';
import { modelCases } from './cases/model.js';
import { recordsCases } from './cases/records.js';
import { transactionCases } from './cases/transaction.js';
import { ttlCases } from './cases/ttl.js';
import { updateCases } from './cases/update.js';
import { watchCases } from './cases/watch.js';

/** Runs the whole store contract against `backend`. */
export function storeContractSuite(backend: BackendCase): void {
  recordsCases(backend);
  casCases(backend);
  updateCases(backend);
  transactionCases(backend);
  listCases(backend);
  ttlCases(backend);
  watchCases(backend);
  changesCases(backend);
  modelCases(backend);
}
