// Store URLs as people see them: the default store's file, and every URL in messages and banners with its password masked.
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';

/** Query parameters that carry a secret (Postgres reads `password` and `sslpassword` from the query too). */
const SECRET_PARAM = /^(password|pass|pwd|passwd|sslpassword|secret|token)$/i;

/**
 * The password of a URL that does not parse (`//user:PASSWORD@`): everything up to the last `@`, so that a password
 * holding a raw `/`, `:`, `@`, `?` or `#` is taken whole (over-masking a path or query that holds `@` is the safe side).
 */
const UNPARSED_PASSWORD = /(\/\/[^/@:?#]*:)(.*)@/;

/**
 * Whether a URL parsed without a user, but has `@` after its host: `//user:12/34@host` parses as host `user`, port 12
 * and a path `/34@host` (`//user:12#34@host` and `?` likewise, with a fragment or a query), so the password's first
 * part would pass for a port and the rest for what follows the host.
 */
const misread = (parsed: URL): boolean =>
  parsed.username === '' && parsed.password === '' && `${parsed.pathname}${parsed.search}${parsed.hash}`.includes('@');
const MISREAD = 'a password with a raw "/", "?" or "#" read as a port and what follows the host';

/** The URL with its password (if any, in its user part or its query) replaced by `***`. */
export function maskPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (misread(parsed)) throw new Error(MISREAD);
    const params = [...parsed.searchParams.keys()].filter((name) => SECRET_PARAM.test(name));
    if (parsed.password === '' && params.length === 0) return url;
    if (parsed.password !== '') parsed.password = '***';
    for (const name of params) parsed.searchParams.set(name, '***');
    return parsed.toString().replaceAll('%2A%2A%2A', '***');
  } catch {
    return url
      .replace(UNPARSED_PASSWORD, '$1***@')
      .replace(/([?&](?:password|pass|pwd|passwd|sslpassword|secret|token)=)[^&#]*/gi, '$1***');
  }
}

/** Where the SQLite file lives when no `--store` is given: the user's data directory. */
export function defaultStorePath(): string {
  const env = process.env;
  const base =
    process.platform === 'win32'
      ? (env.APPDATA ?? join(homedir(), 'AppData', 'Roaming'))
      : process.platform === 'darwin'
        ? join(homedir(), 'Library', 'Application Support')
        : env.XDG_DATA_HOME && isAbsolute(env.XDG_DATA_HOME)
          ? env.XDG_DATA_HOME
          : join(homedir(), '.local', 'share');
  return join(base, 'mcp-blackboard', 'blackboard.db');
}

/**
 * The local file a store URL keeps its data in (the default and `sqlite://` stores), or undefined for a store that
 * is not a local file. Resolves a relative path against the working directory.
 */
export function storeFile(url: string | undefined): string | undefined {
  if (url === undefined || url === '') return defaultStorePath();
  const rest = url.startsWith('sqlite://') ? url.slice('sqlite://'.length) : '';
  return rest === '' ? undefined : isAbsolute(rest) ? rest : resolve(rest);
}

/** Whether a store URL is the in-process memory store (`memory://`, also written `memory:`), which lives as long as its process. */
export const isMemoryUrl = (url: string | undefined): boolean => url === 'memory://' || url === 'memory:';

/**
 * How every command names a store to people (banners, errors): the URL with its password masked, or the default
 * SQLite file when none was given. Commands print store URLs only through this.
 */
export function describeStoreUrl(url: string | undefined): string {
  return url === undefined || url === '' ? `sqlite://${defaultStorePath()}` : maskPassword(url);
}

/**
 * `text` (a driver's error message, say) with the store URL's password taken out wherever it appears, raw or
 * percent-decoded: a last guard, so that no message about a store ever shows its password.
 */
export function withoutPassword(text: string, url: string | undefined): string {
  const secrets: string[] = [];
  try {
    const parsed = new URL(url ?? '');
    if (misread(parsed)) throw new Error(MISREAD);
    secrets.push(parsed.password);
    for (const [name, value] of parsed.searchParams) if (SECRET_PARAM.test(name)) secrets.push(value, encodeURIComponent(value));
  } catch {
    secrets.push(UNPARSED_PASSWORD.exec(url ?? '')?.[2] ?? '');
  }
  const all = secrets.flatMap((secret) => {
    try {
      return [secret, decodeURIComponent(secret)];
    } catch {
      return [secret];
    }
  });
  return all.filter((secret) => secret !== '').reduce((out, secret) => out.split(secret).join('***'), text);
}
