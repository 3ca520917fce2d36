// The store contract on memory:// (one process: the cross-process cases skip).
import { memoryCase } from './backends.js';
import { storeContractSuite } from './suite.js';

storeContractSuite(memoryCase);
