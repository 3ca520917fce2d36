// The `ui` subcommand: its flags, its help, and serving the read-only board until stopped.
import { VERSION, readFlags } from '../config.js';
import { NAMESPACE_RE } from '../context.js';
import { defaultStorePath, openStore } from '../store/open.js';
import { fileAuth, tokenAuth, type BoardAuth } from './auth.js';
import { LOOPBACK_HOSTS, serveBoard } from './server.js';

export const UI_HELP = `mcp-blackboard ui - a read-only, live view of the board in your browser

Usage:
  mcp-blackboard ui [--store URL] [--namespace NS] [--port P] [--host H] [--token T | --auth FILE]

Shows a namespace's scopes and keys, plans with their steps, owners and blockers, and threads with their
lifecycle state, run, budgets, final answer and recent history. It updates live and never writes.

Options (each also read from the environment variable shown):
  --store URL      the store to look at (as for the server)                    BLACKBOARD_STORE
                   (default: the SQLite file in your data directory)
  --namespace NS   the namespace shown first (the page offers the others)     BLACKBOARD_NAMESPACE
  --port P         port to listen on (default 8765; 0 = any free port)
  --host HOST      address to bind (default 127.0.0.1); any other than a loopback
                   address needs --token or --auth
  --token T        require this token: open the page once as /?token=T, the    BLACKBOARD_TOKEN
                   browser then keeps an HttpOnly cookie
  --auth FILE      require one of the tokens of this auth file (each client sees its namespaces)
  --help           print this and exit
`;

/** The `ui` subcommand's settings. */
export interface UiConfig {
  store?: string;
  namespace?: string;
  port: number;
  host: string;
  token?: string;
  authFile?: string;
}

/** A bad flag: one line on stderr, exit code 2. */
export class UiConfigError extends Error {}

export function parseUiArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): { help: true } | { help: false; config: UiConfig } {
  let values;
  try {
    ({ values } = readFlags('ui', argv, {
      store: { type: 'string' },
      namespace: { type: 'string' },
      port: { type: 'string' },
      host: { type: 'string' },
      token: { type: 'string' },
      auth: { type: 'string' },
    }));
  } catch (error) {
    throw new UiConfigError((error as Error).message);
  }
  if (values.help) return { help: true };
  const pick = (flag: string | undefined, name: string): string | undefined => flag ?? (env[name] === '' ? undefined : env[name]);
  const namespace = pick(values.namespace, 'BLACKBOARD_NAMESPACE');
  if (namespace !== undefined && !NAMESPACE_RE.test(namespace)) {
    throw new UiConfigError(`--namespace "${namespace}" must match ^[a-z][a-z0-9_]{0,31}$.`);
  }
  const port = values.port === undefined ? 8765 : Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535 || values.port?.trim() === '') {
    throw new UiConfigError(`--port must be a whole number from 0 to 65535, got "${values.port}".`);
  }
  const host = values.host ?? '127.0.0.1';
  const authFile = values.auth;
  const token = authFile === undefined ? pick(values.token, 'BLACKBOARD_TOKEN') : values.token;
  if (token !== undefined && authFile !== undefined) throw new UiConfigError('Give --token or --auth, not both.');
  if (token === '') throw new UiConfigError('--token must not be empty.');
  if (!LOOPBACK_HOSTS.includes(host) && token === undefined && authFile === undefined) {
    throw new UiConfigError(`Refusing to serve the board on ${host} without --token or --auth: anyone who can reach it could read the store. Bind 127.0.0.1, or give a token.`);
  }
  return { help: false, config: { store: pick(values.store, 'BLACKBOARD_STORE'), namespace, port, host, token, authFile } };
}

/** Runs `mcp-blackboard ui …`; resolves with the exit code when the server cannot start (it runs until stopped). */
export async function runUiCommand(argv: string[]): Promise<number> {
  let config: UiConfig;
  let auth: BoardAuth | undefined;
  try {
    const parsed = parseUiArgs(argv);
    if (parsed.help) {
      process.stdout.write(UI_HELP);
      return 0;
    }
    config = parsed.config;
    auth = config.authFile !== undefined ? fileAuth(config.authFile) : config.token !== undefined ? tokenAuth(config.token) : undefined;
  } catch (error) {
    console.error(`mcp-blackboard ui: ${(error as Error).message}`);
    return 2;
  }
  let store;
  try {
    // No sweeper: the board never writes, not even to remove expired records.
    store = await openStore(config.store, { sweepIntervalMs: 0 });
  } catch (error) {
    console.error(`mcp-blackboard ui: cannot open the store ${config.store ?? `sqlite://${defaultStorePath()}`}: ${(error as Error).message.split('\n')[0]}`);
    return 1;
  }
  let served;
  try {
    served = await serveBoard({
      store,
      host: config.host,
      port: config.port,
      auth,
      namespace: config.namespace,
      description: store.backend.description,
      version: VERSION,
    });
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    const why = code === 'EADDRINUSE' ? `port ${config.port} is in use (choose another with --port)` : (error as Error).message;
    console.error(`mcp-blackboard ui: cannot listen on ${config.host}:${config.port}: ${why}`);
    await store.close().catch(() => {});
    return 1;
  }
  const stop = async (): Promise<never> => {
    await served.close().catch(() => {});
    await store.close().catch(() => {});
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
  const gate = auth ? ` (token required: open ${served.url}?token=<your token> once)` : '';
  console.error(`mcp-blackboard ${VERSION} board at ${served.url} store=${store.backend.description}${gate}`);
  return new Promise<number>(() => {});
}
