// Who an HTTP request is: the auth file (one token per client) or the shared token, checked in constant time.
import { createHash, timingSafeEqual } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { NAME_RE, NAMESPACE_RE } from '../context.js';

const name = (what: string) =>
  z.string().regex(NAME_RE, `${what} must be 1-128 letters, digits, "_", ".", "@" or "-", starting with a letter or digit`);

const ClientSchema = z
  .strictObject({
    token: z.string().min(16, 'token must be at least 16 characters').optional(),
    tokenSha256: z
      .string()
      .regex(/^[0-9a-fA-F]{64}$/, 'tokenSha256 must be 64 hex digits (the SHA-256 of the token)')
      .optional(),
    agent: name('agent'),
    agentType: name('agentType').optional(),
    namespaces: z
      .array(
        z.string().refine((ns) => ns === '*' || NAMESPACE_RE.test(ns), {
          message: 'each namespace must be "*" or match ^[a-z][a-z0-9_]{0,31}$',
        }),
      )
      .min(1, 'namespaces must list at least one namespace (or "*")'),
    access: z.enum(['read', 'readwrite'], 'access must be "read" or "readwrite"'),
  })
  .refine((c) => (c.token === undefined) !== (c.tokenSha256 === undefined), 'give exactly one of token and tokenSha256');

const AuthFileSchema = z.strictObject({ clients: z.array(ClientSchema).min(1, 'clients must list at least one client') });

/** One client of the auth file. */
export interface AuthClient {
  /** SHA-256 of the client's token, hex: the token itself is not kept */
  tokenSha256: string;
  agent: string;
  agentType?: string;
  /** namespaces it may use; `*` = all (and only `*` reaches the unnamed default namespace) */
  namespaces: string[];
  access: 'read' | 'readwrite';
}

/** Who a request is: a client of the auth file, or (shared token, or no auth) anyone. */
export interface Principal {
  /** stable while the auth file keeps this client unchanged; a session is bound to it */
  id: string;
  client?: AuthClient;
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();

/** Reads and checks an auth file. Throws an Error whose message is one line naming the file and the problem. */
export function loadAuthFile(path: string): AuthClient[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read the auth file ${path}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new Error(`the auth file ${path} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = AuthFileSchema.safeParse(json, {
    error: (issue) => (issue.code === 'invalid_type' && issue.input === undefined ? 'missing' : undefined),
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue.path.map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`)).join('').replace(/^\./, '');
    throw new Error(`the auth file ${path} is malformed at ${where || 'the top level'}: ${issue.message}.`);
  }
  const seen = new Map<string, number>();
  return parsed.data.clients.map((c, i) => {
    const tokenSha256 = (c.token !== undefined ? sha256(c.token).toString('hex') : c.tokenSha256!).toLowerCase();
    const first = seen.get(tokenSha256);
    if (first !== undefined) throw new Error(`the auth file ${path} is malformed at clients[${i}]: the same token as clients[${first}].`);
    seen.set(tokenSha256, i);
    return { tokenSha256, agent: c.agent, agentType: c.agentType, namespaces: c.namespaces, access: c.access };
  });
}

/** Whether `client` may use `namespace`; the unnamed default namespace (undefined) needs `*`, as on the board. */
export function allowsNamespace(client: AuthClient, namespace: string | undefined): boolean {
  return client.namespaces.includes('*') || (namespace !== undefined && client.namespaces.includes(namespace));
}

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
  return createHash('sha256').update(JSON.stringify([client.tokenSha256, client.agent, client.agentType ?? null, [...client.namespaces].sort(), client.access])).digest('hex').slice(0, 32);
}
