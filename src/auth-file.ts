// The auth file format, in one place: one token per client, with its agent, namespaces and access (--auth FILE).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import * as z from 'zod';
import { NAME_RE, namespaceError } from './context.js';

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
        z.string().superRefine((ns, ctx) => {
          const bad = ns === '*' ? undefined : namespaceError('namespace', ns);
          if (bad) ctx.addIssue({ code: 'custom', message: `${bad.replace(/\.$/, '')}, or be "*"` });
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
    const where = issue.path
      .map((p) => (typeof p === 'number' ? `[${p}]` : `.${String(p)}`))
      .join('')
      .replace(/^\./, '');
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
