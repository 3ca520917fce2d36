// Who an HTTP request is: the auth file (one token per client) or the shared token, checked in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import { loadAuthFile, type AuthClient } from '../auth-file.js';

export { allowsNamespace, loadAuthFile, type AuthClient } from '../auth-file.js';

/** Who a request is: a client of the auth file, or (shared token, or no auth) anyone. */
export interface Principal {
  /** stable while the auth file keeps this client unchanged; a session is bound to it */
  id: string;
  client?: AuthClient;
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/**
 * The tokens an HTTP server accepts: none (a loopback server without auth), one shared token (`--token`), or the
 * clients of an auth file (`--auth`, re-read by {@link reload}). Tokens are compared by their SHA-256 in constant time.
 */
export class HttpAuth {
  /** the auth file, when identities come from one */
  readonly authFile?: string;
  private shared?: Buffer;
  private clients: { hash: Buffer; client: AuthClient }[] = [];

  constructor(options: { token?: string; authFile?: string; clients?: AuthClient[] }) {
    if (options.token !== undefined) this.shared = sha256(options.token);
    if (options.authFile !== undefined) this.setClients(options.clients ?? loadAuthFile(options.authFile));
    this.authFile = options.authFile;
  }

  /** Whether requests must carry a bearer token. */
  get required(): boolean {
    return this.shared !== undefined || this.authFile !== undefined;
  }

  /** Whether identities come from the auth file (so a client cannot name its own agent). */
  get perClient(): boolean {
    return this.authFile !== undefined;
  }

  /** Re-reads the auth file; throws (keeping the current clients) when it is malformed. */
  reload(): void {
    if (this.authFile !== undefined) this.setClients(loadAuthFile(this.authFile));
  }

  /** The principal without a token: only meaningful when no token is required. */
  anonymous(): Principal {
    return { id: 'anyone' };
  }

  /** The principal a token stands for, or undefined. Takes the same time whichever client (if any) matches. */
  verify(token: string): Principal | undefined {
    const given = sha256(token);
    if (this.shared) return timingSafeEqual(given, this.shared) ? { id: 'shared' } : undefined;
    let found: AuthClient | undefined;
    for (const { hash, client } of this.clients) {
      if (timingSafeEqual(given, hash) && !found) found = client;
    }
    return found && { id: principalId(found), client: found };
  }

  /** Whether a principal still stands for the same client with the same grants (after a reload). */
  stillValid(principalIdValue: string): boolean {
    if (!this.perClient) return true;
    return this.clients.some(({ client }) => principalId(client) === principalIdValue);
  }

  private setClients(clients: AuthClient[]): void {
    this.clients = clients.map((client) => ({ hash: Buffer.from(client.tokenSha256, 'hex'), client }));
  }
}

/** A client's identity and grants, hashed: a session survives a reload only if its client is unchanged. */
function principalId(client: AuthClient): string {
  return createHash('sha256')
    .update(JSON.stringify([client.tokenSha256, client.agent, client.agentType ?? null, [...client.namespaces].sort(), client.access]))
    .digest('hex')
    .slice(0, 32);
}
