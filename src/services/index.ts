import type { Config } from '../config.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { KvService } from './kv.js';
import type { Session } from './session.js';

/** The services of one connection: plain TypeScript over the shared store and this connection's session. */
export interface Services {
  kv: KvService;
}

export function createServices(store: VersionedStore, session: Session, _config: Config): Services {
  return { kv: new KvService(store, session) };
}
