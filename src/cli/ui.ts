// The `ui` command: its flags, its help, and serving the read-only board until stopped.
import { DEFAULTS, VERSION } from '../config.js';
import { ConfigError } from '../errors.js';
import { exposureError } from '../hosts.js';
import { type BoardAuth, fileAuth, tokenAuth } from '../ui/auth.js';
import { serveBoard } from '../ui/server.js';
import { type Command, openCommandStore } from './command.js';
import { flag, flagHelp, helpFlag, namespaceFlag, readFlags, storeFlag, text, wholeNumber, tokenFlag } from './flags.js';
import { print } from './serve.js';

const UI_FLAGS = {
  store: storeFlag('the store to look at'),
  namespace: namespaceFlag('the namespace shown first (the page offers the others)'),
  port: flag({
    flag: 'port',
    arg: 'P',
    default: DEFAULTS.uiPort as number,
    parse: wholeNumber(0, 65535),
    help: 'port to listen on (0 = any free port)',
  }),
  host: flag<string>({
    flag: 'host',
    arg: 'HOST',
    default: DEFAULTS.host,
    help: 'address to bind; any other than a loopback\naddress needs --token or --auth',
  }),
  token: tokenFlag({
    flag: 'token',
    arg: 'T',
    env: 'BLACKBOARD_TOKEN',
    help: 'require this token: open the page once as /?token=T, the\nbrowser then keeps an HttpOnly cookie',
  }),
  auth: text({ flag: 'auth', arg: 'FILE', help: 'require one of the tokens of this auth file (each client sees its namespaces)' }),
  help: helpFlag,
};

export const UI_HELP = `mcp-blackboard ui - a read-only, live view of the board in your browser

Usage:
  mcp-blackboard ui [--store URL] [--namespace NS] [--port P] [--host H] [--token T | --auth FILE]

Shows a namespace's scopes and keys, plans with their steps, owners and blockers, and threads with their
lifecycle state, run, budgets, final answer and recent history. It updates live and never writes: it never
creates a store, and refuses a SQLite file that is not a blackboard store.

Options (each also read from the environment variable shown):
${flagHelp(UI_FLAGS)}`;

/** The `ui` command's settings. */
export interface UiConfig {
  store?: string;
  namespace?: string;
  port: number;
  host: string;
  token?: string;
  authFile?: string;
}

/** The `ui` command's flags and environment as settings; `help` when --help was asked for. Throws ConfigError. */
export function parseUiArgs(argv: string[], env: NodeJS.ProcessEnv = process.env): { help: true } | { help: false; config: UiConfig } {
  const { values, given } = readFlags(UI_FLAGS, argv, { command: 'ui', env });
  if (values.help) return { help: true };
  const authFile = values.auth;
  // With --auth, a BLACKBOARD_TOKEN left in the environment is not a second way in.
  const token = authFile !== undefined && !given.has('token') ? undefined : values.token;
  if (token !== undefined && authFile !== undefined) throw new ConfigError('Give --token or --auth, not both.');
  if (token === '') throw new ConfigError('--token must not be empty.');
  const exposed = exposureError(values.host, token !== undefined || authFile !== undefined);
  if (exposed) throw new ConfigError(exposed);
  return {
    help: false,
    config: { store: values.store, namespace: values.namespace, port: values.port, host: values.host, token, authFile },
  };
}

export const uiCommand: Command = {
  usage: 'ui [--store URL] [--namespace NS] [--port P] [--host H] [--token T | --auth FILE]',
  summary: 'a read-only, live view of the board in a browser',
  async run(argv) {
    const parsed = parseUiArgs(argv);
    if (parsed.help) return print(UI_HELP);
    const config = parsed.config;
    let auth: BoardAuth | undefined;
    try {
      auth = config.authFile !== undefined ? fileAuth(config.authFile) : config.token !== undefined ? tokenAuth(config.token) : undefined;
    } catch (error) {
      throw new ConfigError((error as Error).message);
    }
    // No sweeper: the board never writes, not even to remove expired records.
    const store = await openCommandStore(config.store, { sweepIntervalMs: 0 }, { command: 'ui', mustExist: true, blackboardOnly: true });
    let served: Awaited<ReturnType<typeof serveBoard>>;
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
      await store.close().catch(() => {});
      const code = (error as NodeJS.ErrnoException).code;
      const why = code === 'EADDRINUSE' ? `port ${config.port} is in use (choose another with --port)` : (error as Error).message;
      throw new Error(`cannot listen on ${config.host}:${config.port}: ${why}`);
    }
    const stop = async (): Promise<never> => {
      await served.close().catch(() => {});
      await store.close().catch(() => {});
      process.exit(0);
    };
    process.on('SIGINT', () => void stop());
    process.on('SIGTERM', () => void stop());
    // SIGHUP re-reads the auth file, as `--http` does: rotate tokens without a restart (and never a reason to exit)
    process.on('SIGHUP', () => {
      if (config.authFile === undefined) return;
      try {
        served.reload(fileAuth(config.authFile));
        console.error(`mcp-blackboard: re-read the auth file ${config.authFile}`);
      } catch (error) {
        console.error(`mcp-blackboard: kept the previous tokens: ${(error as Error).message}`);
      }
    });
    const gate = auth ? ` (token required: open ${served.url}?token=<your token> once)` : '';
    console.error(`mcp-blackboard ${VERSION} board at ${served.url} store=${store.backend.description}${gate}`);
    return new Promise<number>(() => {});
  },
};
