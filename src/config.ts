// Flags and environment to configuration: the server's own flags, and the parsing every subcommand shares.
import { readFileSync } from 'node:fs';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { NAMESPACE_RE } from './context.js';
import { loadAuthFile, type AuthClient } from './transports/auth.js';
import { isLoopbackAddress } from './transports/requests.js';

export const FAMILIES = [
  'kv',
  'plan',
  'scratchpad',
  'finalizer',
  'budget',
  'lifecycle',
  'run',
  'checkpoint',
  'history',
  'signal',
] as const;
export type Family = (typeof FAMILIES)[number];

/** Everything the server is told at start-up, from flags and environment. */
export interface Config {
  http?: {
    port: number;
    host: string;
    token?: string;
    sessionIdleSeconds: number;
    /** `--auth FILE`: one token per client, as loaded at start-up (the file is re-read on SIGHUP) */
    auth?: { file: string; clients: AuthClient[] };
    /** Host names accepted besides loopback ones (`--allowed-hosts`) */
    allowedHosts: string[];
    /** web origins accepted besides loopback ones (`--allowed-origins`) */
    allowedOrigins: string[];
    maxSessions: number;
  };
  /** store URL; undefined = SQLite in the user's data directory */
  store?: string;
  namespace?: string;
  agent?: string;
  agentType?: string;
  thread?: string;
  parentThread?: string;
  tools: Family[];
  maxIterations?: number;
  budgets: Record<string, number>;
  maxValueBytes: number;
  /** SQLite `synchronous`: FULL (default) survives power loss, NORMAL survives crashes */
  sync: 'FULL' | 'NORMAL';
  planTtlSeconds: number;
  keepCheckpoints: number;
  /** how long the change log and deleted keys' tombstones are kept (seconds) */
  changeRetentionSeconds: number;
  allowBudgetAdmin: boolean;
  /** progress notification period of blocking tools (ms) */
  progressIntervalMs: number;
}

export const VERSION: string = (
  JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }
).version;

/**
 * A subcommand (`mcp-blackboard export …`): its own flags, help and code. The CLI dispatches on the first argument
 * through a table of these, and the main `--help` lists each by its `usage` and `summary`.
 */
export interface Subcommand {
  /** what follows the program name in the main help, e.g. `export [--store URL] [--thread ID] > bundle.json` */
  usage: string;
  /** one line saying what it does */
  summary: string;
  /** the text `mcp-blackboard <name> --help` prints */
  help: string;
  /**
   * Runs the command with the arguments after its name and resolves to the exit code. Throw ConfigError for a bad
   * flag or value (exit 2, one line); any other error is printed as one line with exit code 1.
   */
  run(argv: string[]): Promise<number>;
}

/** The main `--help`: serving flags, with one entry per subcommand. */
export function serveHelp(commands: Record<string, Pick<Subcommand, 'usage' | 'summary'>>): string {
  const lines = Object.values(commands).map((c) => `  mcp-blackboard ${c.usage}\n${' '.repeat(38)}${c.summary}\n`);
  return HELP.replace('{commands}\n', lines.join(''));
}

const HELP = `mcp-blackboard ${VERSION} - shared, durable, concurrency-safe state for LLM agents over MCP

Usage:
  mcp-blackboard [options]            serve over stdio (the default)
  mcp-blackboard --http PORT [opts]   serve Streamable HTTP on 127.0.0.1:PORT/mcp (and /mcp/NS: namespace NS)
{commands}
  mcp-blackboard COMMAND --help       that command's flags

Options (each also read from the environment variable shown):
  --store URL            sqlite:///abs/path.db, sqlite://relative.db or memory://      BLACKBOARD_STORE
                         (default: a SQLite file in your data directory, printed at start-up)
  --namespace NS         partition the store and prefix every tool name: NS_state_get  BLACKBOARD_NAMESPACE
                         (NS matches ^[a-z][a-z0-9_]{0,31}$)
  --agent NAME           this agent's name (recorded as updatedBy)                     BLACKBOARD_AGENT
  --agent-type TYPE      this agent's type (scope agent_type)                          BLACKBOARD_AGENT_TYPE
  --thread ID            the conversation thread (default: a new id)                   BLACKBOARD_THREAD
  --parent-thread ID     the thread that delegated to this one                         BLACKBOARD_PARENT_THREAD
  --tools LIST           families to enable, comma-separated (default all):            BLACKBOARD_TOOLS
                         ${FAMILIES.join(',')}
  --max-iterations N     the "iterations" budget per thread                            BLACKBOARD_MAX_ITERATIONS
  --budget NAME=MAX      another budget per thread (repeatable)
  --allow-budget-admin   register budget_configure and budget_increase
  --max-value-bytes N    largest value accepted (default 1048576)                      BLACKBOARD_MAX_VALUE_BYTES
  --sync full|normal     SQLite durability: full fsyncs every commit (default);        BLACKBOARD_SYNC
                         normal survives kill -9 but not power loss
  --plan-ttl SECONDS     completed/abandoned plans expire after this (default 604800)
  --keep-checkpoints N   checkpoints kept per thread (default 20)
  --change-retention S   how long state_changes can look back (default 86400 = 24 h)
  --progress-interval-ms N  how often blocking tools (watch, final_answer_get) send progress
                         notifications when asked to (default 10000)
  --host HOST            HTTP bind address (default 127.0.0.1)
  --token T              HTTP: require Authorization: Bearer T                         BLACKBOARD_TOKEN
  --auth FILE            HTTP: one token per client, each with its agent, namespaces and
                         read or readwrite access (JSON; re-read on SIGHUP)
  --allowed-hosts LIST   HTTP: Host names accepted besides localhost, comma-separated
  --allowed-origins LIST HTTP: web origins accepted besides loopback ones, comma-separated
  --max-sessions N       HTTP: most open 2025 sessions (default 1000; 0: none, 2025 clients served statelessly)
  --http-session-idle S  HTTP: close a session unused for S seconds (default 1800)
  --help                 print this and exit
  --version              print the version and exit

Logs and the start-up banner go to stderr; stdout carries only MCP messages. Over stdio the server waits for an
MCP client; to try it by hand: npx @modelcontextprotocol/inspector -- mcp-blackboard [options]
(from a clone: npx @modelcontextprotocol/inspector -- node dist/cli.js [options]; the Inspector needs Node 22+).
Exit codes: 0 done, 1 could not run (store, port, file), 2 bad flag or value.
`;

/** A bad flag or value: the CLI prints its one-line message and exits with code 2. */
export class ConfigError extends Error {}

/** A whole number within bounds, or undefined when not given. `name` is the flag or variable it came from. */
export function int(name: string, raw: string | undefined, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  const n = /^\s*-?\d+\s*$/.test(raw) ? Number(raw) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max) {
    throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}".`);
  }
  return n;
}

/** One of an allowed set of words (case-insensitive), returned lower-cased; a refusal echoes the value as given. */
export function oneOf<T extends string>(name: string, raw: string, allowed: readonly T[]): T {
  const word = raw.trim().toLowerCase();
  if (!(allowed as readonly string[]).includes(word)) {
    throw new ConfigError(`${name} must be ${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}, got "${raw}".`);
  }
  return word as T;
}

type FlagSpec = NonNullable<ParseArgsConfig['options']>;
const HELP_FLAG = { help: { type: 'boolean', short: 'h' } } as const;

/**
 * Arguments ready for `parseArgs`: a negative number after a flag (`--max-iterations -1`) becomes its value
 * (`--max-iterations=-1`), so the value's own check can say what is wrong with it instead of parseArgs calling it
 * ambiguous. (`--flag=value` needs nothing.)
 */
export function flagArgs(argv: string[]): string[] {
  const args: string[] = [];
  for (let i = 0; i < argv.length; i++) {
    const next = argv[i + 1];
    if (/^--[^=]+$/.test(argv[i]) && next !== undefined && /^-\.?\d/.test(next)) {
      args.push(`${argv[i]}=${next}`);
      i++;
    } else {
      args.push(argv[i]);
    }
  }
  return args;
}

/** A `parseArgs` error as one line that says what to do; `command` names the subcommand in the `--help` hint. */
export function flagError(error: unknown, command?: string): ConfigError {
  const { code, message } = error as { code?: string; message: string };
  const hint = `Run mcp-blackboard ${command ? `${command} ` : ''}--help for the flags.`;
  const flag = /'(-[^' ]+)/.exec(message)?.[1] ?? '';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return new ConfigError(`unknown flag ${flag}. ${hint}`);
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    return new ConfigError(`unexpected argument "${/'([^']*)'/.exec(message)?.[1] ?? ''}". ${hint}`);
  }
  if (/ambiguous/.test(message)) {
    return new ConfigError(`${flag} needs a value; to give one that starts with "-", write ${flag}=VALUE. ${hint}`);
  }
  if (/argument missing/.test(message)) return new ConfigError(`${flag} needs a value. ${hint}`);
  return new ConfigError(`${message.replace(/\s*\n\s*/g, ' ').replace(/\.?$/, '.')} ${hint}`);
}

/** Strict parsing for a subcommand's flags, `--help`/`-h` included, with the errors of flagError. */
export function readFlags<const O extends FlagSpec>(command: string, argv: string[], options: O, allowPositionals = false) {
  try {
    return parseArgs({ args: flagArgs(argv), options: { ...options, ...HELP_FLAG }, strict: true, allowPositionals });
  } catch (error) {
    throw flagError(error, command);
  }
}

export type ParsedArgs = { kind: 'help' } | { kind: 'version' } | { kind: 'serve'; config: Config };

/** Reads flags, then the environment for what the flags leave out. Throws ConfigError with a one-line reason. */
export function parseConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): ParsedArgs {
  let values;
  try {
    ({ values } = parseArgs({
      args: flagArgs(argv),
      strict: true,
      allowPositionals: false,
      options: {
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean', short: 'v' },
        http: { type: 'string' },
        host: { type: 'string' },
        token: { type: 'string' },
        store: { type: 'string' },
        namespace: { type: 'string' },
        agent: { type: 'string' },
        'agent-type': { type: 'string' },
        thread: { type: 'string' },
        'parent-thread': { type: 'string' },
        tools: { type: 'string' },
        'max-iterations': { type: 'string' },
        budget: { type: 'string', multiple: true },
        'allow-budget-admin': { type: 'boolean' },
        'max-value-bytes': { type: 'string' },
        sync: { type: 'string' },
        'plan-ttl': { type: 'string' },
        'keep-checkpoints': { type: 'string' },
        'change-retention': { type: 'string' },
        'progress-interval-ms': { type: 'string' },
        'http-session-idle': { type: 'string' },
        auth: { type: 'string' },
        'allowed-hosts': { type: 'string' },
        'allowed-origins': { type: 'string' },
        'max-sessions': { type: 'string' },
      },
    }));
  } catch (error) {
    throw flagError(error);
  }
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };

  const pick = (flag: string | undefined, name: string): string | undefined => flag ?? (env[name] === '' ? undefined : env[name]);
  // Errors name where a value came from: the flag, or the environment variable when no flag was given.
  const from = (flag: string, name: string): string => (values[flag as keyof typeof values] !== undefined || !env[name] ? `--${flag}` : name);
  const namespace = pick(values.namespace, 'BLACKBOARD_NAMESPACE');
  if (namespace !== undefined && !NAMESPACE_RE.test(namespace)) {
    throw new ConfigError(`${from('namespace', 'BLACKBOARD_NAMESPACE')} "${namespace}" must match ^[a-z][a-z0-9_]{0,31}$.`);
  }
  const toolsRaw = pick(values.tools, 'BLACKBOARD_TOOLS');
  const tools = toolsRaw === undefined ? [...FAMILIES] : toolsRaw.split(',').map((t) => t.trim()).filter(Boolean);
  for (const t of tools) {
    if (!(FAMILIES as readonly string[]).includes(t)) {
      throw new ConfigError(`${from('tools', 'BLACKBOARD_TOOLS')}: unknown family "${t}". Families: ${FAMILIES.join(', ')}.`);
    }
  }
  const budgets: Record<string, number> = {};
  for (const spec of values.budget ?? []) {
    const m = /^([A-Za-z0-9_.-]{1,64})=(\d+)$/.exec(spec);
    if (!m) throw new ConfigError(`--budget "${spec}" must look like NAME=MAX, e.g. tool_calls=50.`);
    budgets[m[1]] = int('--budget', m[2], 0, Number.MAX_SAFE_INTEGER)!;
  }
  const sync = oneOf(from('sync', 'BLACKBOARD_SYNC'), pick(values.sync, 'BLACKBOARD_SYNC') ?? 'full', ['full', 'normal']).toUpperCase() as Config['sync'];
  const httpPort = int('--http', values.http, 0, 65535);
  const http = httpPort === undefined ? undefined : httpOptions(httpPort, values, pick(values.token, 'BLACKBOARD_TOKEN'));
  return {
    kind: 'serve',
    config: {
      http,
      store: pick(values.store, 'BLACKBOARD_STORE'),
      namespace,
      agent: pick(values.agent, 'BLACKBOARD_AGENT'),
      agentType: pick(values['agent-type'], 'BLACKBOARD_AGENT_TYPE'),
      thread: pick(values.thread, 'BLACKBOARD_THREAD'),
      parentThread: pick(values['parent-thread'], 'BLACKBOARD_PARENT_THREAD'),
      tools: tools as Family[],
      maxIterations: int(from('max-iterations', 'BLACKBOARD_MAX_ITERATIONS'), pick(values['max-iterations'], 'BLACKBOARD_MAX_ITERATIONS'), 0, Number.MAX_SAFE_INTEGER),
      budgets,
      maxValueBytes: int(from('max-value-bytes', 'BLACKBOARD_MAX_VALUE_BYTES'), pick(values['max-value-bytes'], 'BLACKBOARD_MAX_VALUE_BYTES'), 16, 64 * 1024 * 1024) ?? 1024 * 1024,
      sync,
      planTtlSeconds: int('--plan-ttl', values['plan-ttl'], 1, 10 * 365 * 24 * 3600) ?? 7 * 24 * 3600,
      keepCheckpoints: int('--keep-checkpoints', values['keep-checkpoints'], 1, 10_000) ?? 20,
      changeRetentionSeconds: int('--change-retention', values['change-retention'], 1, 365 * 24 * 3600) ?? 24 * 3600,
      allowBudgetAdmin: values['allow-budget-admin'] ?? false,
      progressIntervalMs: int('--progress-interval-ms', values['progress-interval-ms'], 50, 15_000) ?? 10_000,
    },
  };
}

/** The HTTP flags; refuses an exposed server without auth. */
function httpOptions(port: number, values: Record<string, unknown>, token: string | undefined): NonNullable<Config['http']> {
  const flag = (name: string): string | undefined => values[name] as string | undefined;
  const host = flag('host') ?? '127.0.0.1';
  const authFile = flag('auth');
  if (authFile !== undefined && token !== undefined) throw new ConfigError('give either --token (one shared token) or --auth (one token per client), not both.');
  if (!isLoopbackAddress(host) && token === undefined && authFile === undefined) {
    throw new ConfigError(`--host ${host} reaches beyond this machine: give --token or --auth so that only your clients can use the server.`);
  }
  let auth: NonNullable<Config['http']>['auth'];
  if (authFile !== undefined) {
    try {
      auth = { file: authFile, clients: loadAuthFile(authFile) };
    } catch (error) {
      throw new ConfigError(`--auth: ${(error as Error).message}`);
    }
  }
  const list = (name: string): string[] => (flag(name) ?? '').split(',').map((x) => x.trim()).filter(Boolean);
  return {
    port,
    host,
    token,
    auth,
    sessionIdleSeconds: int('--http-session-idle', flag('http-session-idle'), 1, 7 * 24 * 3600) ?? 1800,
    allowedHosts: list('allowed-hosts'),
    allowedOrigins: list('allowed-origins'),
    maxSessions: int('--max-sessions', flag('max-sessions'), 0, 1_000_000) ?? 1000,
  };
}

/** Defaults for embedding and tests. */
export function defaultConfig(overrides: Partial<Config> = {}): Config {
  const parsed = parseConfig([], {});
  if (parsed.kind !== 'serve') throw new Error('unreachable');
  return { ...parsed.config, ...overrides };
}
