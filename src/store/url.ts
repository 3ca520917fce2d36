// Store URLs as people see them: the default store's file, and every URL in messages and banners with its password masked.
import { homedir } from 'node:os';
import { isAbsolute, join, resolve } from 'node:path';

/** The URL with its password (if any) replaced by `***`. */
export function maskPassword(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/([^/@:]*):[^/@]*@/, '//$1:***@');
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
  let password = '';
  try {
    password = url ? new URL(url).password : '';
  } catch {
    password = /\/\/[^/@:]*:([^/@]*)@/.exec(url ?? '')?.[1] ?? '';
  }
  if (password === '') return text;
  let decoded = password;
  try {
    decoded = decodeURIComponent(password);
  } catch {}
  return [password, decoded].reduce((out, secret) => out.split(secret).join('***'), text);
}
