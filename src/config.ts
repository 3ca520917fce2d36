import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { NAMESPACE_RE } from './context.js';

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
  http?: { port: number; host: string; token?: string; sessionIdleSeconds: number };
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

export const HELP = `mcp-blackboard ${VERSION} - shared, durable, concurrency-safe state for LLM agents over MCP

Usage:
  mcp-blackboard [options]            serve over stdio (the default)
  mcp-blackboard --http PORT [opts]   serve Streamable HTTP on 127.0.0.1:PORT/mcp
  mcp-blackboard export [--store URL] [--namespace NS] [--thread ID] > bundle.json
                                      write a thread's state (or, without --thread, the namespace's) as JSON
  mcp-blackboard import FILE [--store URL] [--namespace NS]
                                      load such a bundle; a corrupt file is refused and changes nothing
  mcp-blackboard ui [--store URL] [--namespace NS] [--port P]
                                      a read-only, live view of the board in a browser (ui --help)

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
  --http-session-idle S  HTTP: close a session unused for S seconds (default 1800)
  --help                 print this and exit
  --version              print the version and exit

Logs and the start-up banner go to stderr; stdout carries only MCP messages.
`;

export class ConfigError extends Error {}

function int(name: string, raw: string | undefined, min: number, max: number): number | undefined {
  if (raw === undefined) return undefined;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < min || n > max) throw new ConfigError(`${name} must be a whole number from ${min} to ${max}, got "${raw}".`);
  return n;
}

export type ParsedArgs = { kind: 'help' } | { kind: 'version' } | { kind: 'serve'; config: Config };

/** Reads flags, then the environment for what the flags leave out. Throws ConfigError with a one-line reason. */
export function parseConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): ParsedArgs {
  let values;
  try {
    ({ values } = parseArgs({
      args: argv,
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
      },
    }));
  } catch (error) {
    throw new ConfigError(`${(error as Error).message}. Run mcp-blackboard --help for the flags.`);
  }
  if (values.help) return { kind: 'help' };
  if (values.version) return { kind: 'version' };

  const pick = (flag: string | undefined, name: string): string | undefined => flag ?? (env[name] === '' ? undefined : env[name]);
  const namespace = pick(values.namespace, 'BLACKBOARD_NAMESPACE');
  if (namespace !== undefined && !NAMESPACE_RE.test(namespace)) {
    throw new ConfigError(`--namespace "${namespace}" must match ^[a-z][a-z0-9_]{0,31}$.`);
  }
  const toolsRaw = pick(values.tools, 'BLACKBOARD_TOOLS');
  const tools = toolsRaw === undefined ? [...FAMILIES] : toolsRaw.split(',').map((t) => t.trim()).filter(Boolean);
  for (const t of tools) {
    if (!(FAMILIES as readonly string[]).includes(t)) throw new ConfigError(`--tools: unknown family "${t}". Families: ${FAMILIES.join(', ')}.`);
  }
  const budgets: Record<string, number> = {};
  for (const spec of values.budget ?? []) {
    const m = /^([A-Za-z0-9_.-]{1,64})=(\d+)$/.exec(spec);
    if (!m) throw new ConfigError(`--budget "${spec}" must look like NAME=MAX, e.g. tool_calls=50.`);
    budgets[m[1]] = int('--budget', m[2], 0, Number.MAX_SAFE_INTEGER)!;
  }
  const sync = (pick(values.sync, 'BLACKBOARD_SYNC') ?? 'full').toUpperCase();
  if (sync !== 'FULL' && sync !== 'NORMAL') throw new ConfigError(`--sync must be full or normal, got "${sync}".`);
  const httpPort = int('--http', values.http, 0, 65535);
  return {
    kind: 'serve',
    config: {
      http:
        httpPort === undefined
          ? undefined
          : {
              port: httpPort,
              host: values.host ?? '127.0.0.1',
              token: pick(values.token, 'BLACKBOARD_TOKEN'),
              sessionIdleSeconds: int('--http-session-idle', values['http-session-idle'], 1, 7 * 24 * 3600) ?? 1800,
            },
      store: pick(values.store, 'BLACKBOARD_STORE'),
      namespace,
      agent: pick(values.agent, 'BLACKBOARD_AGENT'),
      agentType: pick(values['agent-type'], 'BLACKBOARD_AGENT_TYPE'),
      thread: pick(values.thread, 'BLACKBOARD_THREAD'),
      parentThread: pick(values['parent-thread'], 'BLACKBOARD_PARENT_THREAD'),
      tools: tools as Family[],
      maxIterations: int('--max-iterations', pick(values['max-iterations'], 'BLACKBOARD_MAX_ITERATIONS'), 0, Number.MAX_SAFE_INTEGER),
      budgets,
      maxValueBytes: int('--max-value-bytes', pick(values['max-value-bytes'], 'BLACKBOARD_MAX_VALUE_BYTES'), 16, 64 * 1024 * 1024) ?? 1024 * 1024,
      sync,
      planTtlSeconds: int('--plan-ttl', values['plan-ttl'], 1, 10 * 365 * 24 * 3600) ?? 7 * 24 * 3600,
      keepCheckpoints: int('--keep-checkpoints', values['keep-checkpoints'], 1, 10_000) ?? 20,
      changeRetentionSeconds: int('--change-retention', values['change-retention'], 1, 365 * 24 * 3600) ?? 24 * 3600,
      allowBudgetAdmin: values['allow-budget-admin'] ?? false,
      progressIntervalMs: int('--progress-interval-ms', values['progress-interval-ms'], 50, 15_000) ?? 10_000,
    },
  };
}

/** Defaults for embedding and tests. */
export function defaultConfig(overrides: Partial<Config> = {}): Config {
  const parsed = parseConfig([], {});
  if (parsed.kind !== 'serve') throw new Error('unreachable');
  return { ...parsed.config, ...overrides };
}
