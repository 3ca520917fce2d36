// Who may look at the board: the shared token or an auth file's clients, and the browser cookie that stands for them.
import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { loadAuthFile } from '../auth-file.js';

/** What a request that proved a token may see. */
export interface Viewer {
  /** the namespaces it may see; `*` = all */
  namespaces: readonly string[] | '*';
}

/**
 * How the board checks tokens. A browser proves a token once (`?token=`), then carries a cookie derived from it: the
 * cookie is not the token, so it cannot be replayed as a bearer token against the MCP endpoint.
 */
export interface BoardAuth {
  /** The viewer a token stands for, or undefined when no client has it. */
  byToken(token: string): Viewer | undefined;
  /** The viewer a board cookie stands for, or undefined. */
  byCookie(cookie: string): Viewer | undefined;
  /** The cookie value for a token {@link byToken} accepted. */
  cookieFor(token: string): string;
}

interface Client {
  sha256: Buffer;
  cookie: Buffer;
  viewer: Viewer;
}

const sha256 = (text: string): Buffer => createHash('sha256').update(text, 'utf8').digest();
const cookieOf = (tokenSha256: Buffer): Buffer => createHmac('sha256', tokenSha256).update('mcp-blackboard board cookie v1').digest();

function authOver(clients: Client[]): BoardAuth {
  // Every client is compared, in constant time, whichever matches.
  const find = (field: 'sha256' | 'cookie', given: Buffer): Viewer | undefined => {
    let found: Viewer | undefined;
    for (const client of clients) if (timingSafeEqual(client[field], given) && !found) found = client.viewer;
    return found;
  };
  return {
    byToken: (token) => find('sha256', sha256(token)),
    byCookie: (cookie) => {
      const given = Buffer.from(cookie, 'base64url');
      return given.length === 32 ? find('cookie', given) : undefined;
    },
    cookieFor: (token) => cookieOf(sha256(token)).toString('base64url'),
  };
}

/** One shared token (`--token`): it sees every namespace. */
export function tokenAuth(token: string): BoardAuth {
  const hash = sha256(token);
  return authOver([{ sha256: hash, cookie: cookieOf(hash), viewer: { namespaces: '*' } }]);
}

export function fileAuth(path: string): BoardAuth {
  return authOver(
    loadAuthFile(path).map((c) => {
      const hash = Buffer.from(c.tokenSha256, 'hex');
      return { sha256: hash, cookie: cookieOf(hash), viewer: { namespaces: c.namespaces.includes('*') ? '*' : c.namespaces } };
    }),
  );
}
