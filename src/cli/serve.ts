// The server command (no subcommand): its flag table, its --help, and serving MCP over stdio or HTTP until stopped.
import { loadAuthFile } from '../auth-file.js';
import { type Config, DEFAULTS, FAMILIES, MIN_VALUE_BYTES, VERSION } from '../config.js';
import { PROFILES, parseToolList } from '../tool-profiles.js';
import { ConfigError } from '../errors.js';
import { exposureError } from '../hosts.js';
import { runHttp } from '../transports/http-command.js';
import { firstRunHint, serveStdio } from '../transports/stdio.js';
import { startWhenReachable } from './reach.js';
import { type Command, cannotOpen, openCommandStore } from './command.js';
import {
  commaList,
  flag,
  flagHelp,
  helpFlag,
  nameFlag,
  namespaceFlag,
  oneOf,
  readFlags,
  storeFlag,
  switchFlag,
  text,
  wholeNumber,
  tokenFlag,
} from './flags.js';

const MAX = Number.MAX_SAFE_INTEGER;

/** The server's flags, in --help order. Adding a flag: one entry here, then its field in `Config` (config.ts). */
export const SERVE_FLAGS = {
  store: storeFlag(),
  namespace: namespaceFlag('partition the store and prefix every tool name: NS_state_get'),
  agent: nameFlag('agent', { flag: 'agent', arg: 'NAME', env: 'BLACKBOARD_AGENT', help: "this agent's name (recorded as updatedBy)" }),
  agentType: nameFlag('agent type', {
    flag: 'agent-type',
    arg: 'TYPE',
    env: 'BLACKBOARD_AGENT_TYPE',
    help: "this agent's type (scope agent_type)",
  }),
  thread: nameFlag('thread', { flag: 'thread', arg: 'ID', env: 'BLACKBOARD_THREAD', help: 'the conversation thread (default: a new id)' }),
  parentThread: nameFlag('thread', {
    flag: 'parent-thread',
    arg: 'ID',
    env: 'BLACKBOARD_PARENT_THREAD',
    help: 'the thread that delegated to this one',
  }),
  tools: flag<string[]>({
    flag: 'tools',
    arg: 'LIST',
    env: 'BLACKBOARD_TOOLS',
    default: [...DEFAULTS.tools],
    shownDefault: 'agent',
    parse: (raw, from) => {
      try {
        return parseToolList(raw);
      } catch (error) {
        throw new ConfigError(`${from}: ${(error as Error).message}`);
      }
    },
    help: `profiles, families or tool names, comma-separated;\nprofiles: ${PROFILES.join(', ')};\nfamilies: ${FAMILIES.join(',')}`,
  }),
  readOnly: switchFlag({ flag: 'read-only', help: 'register read tools only' }),
  maxIterations: flag<number | undefined>({
    flag: 'max-iterations',
    arg: 'N',
    env: 'BLACKBOARD_MAX_ITERATIONS',
    default: undefined,
    parse: wholeNumber(0, MAX),
    help: 'the "iterations" budget per thread',
  }),
  budgets: flag<Record<string, number>>({
    flag: 'budget',
    arg: 'NAME=MAX',
    repeat: true,
    default: {},
    parse: (raw, from, previous) => {
      const m = /^([A-Za-z0-9_.-]{1,64})=(\d+)$/.exec(raw);
      if (!m) throw new ConfigError(`${from} "${raw}" must look like NAME=MAX, e.g. tool_calls=50.`);
      return { ...previous, [m[1]]: wholeNumber(0, MAX)(m[2], from) };
    },
    help: 'another budget per thread (repeatable)',
  }),
  allowBudgetAdmin: switchFlag({ flag: 'allow-budget-admin', help: 'register budget_configure and budget_increase' }),
  maxValueBytes: flag({
    flag: 'max-value-bytes',
    arg: 'N',
    env: 'BLACKBOARD_MAX_VALUE_BYTES',
    default: DEFAULTS.maxValueBytes as number,
    parse: wholeNumber(MIN_VALUE_BYTES, 64 * 1024 * 1024),
    help: 'largest value accepted',
  }),
  sync: flag<Config['sync']>({
    flag: 'sync',
    arg: 'full|normal',
    env: 'BLACKBOARD_SYNC',
    default: DEFAULTS.sync,
    shownDefault: 'full',
    parse: (raw, from) => oneOf(['full', 'normal'] as const)(raw, from).toUpperCase() as Config['sync'],
    help: 'SQLite durability: full fsyncs every commit;\nnormal survives kill -9 but not power loss',
  }),
  planTtlSeconds: flag({
    flag: 'plan-ttl',
    arg: 'SECONDS',
    default: DEFAULTS.planTtlSeconds as number,
    parse: wholeNumber(1, 10 * 365 * 24 * 3600),
    help: "completed/abandoned plans, and a replaced run's, expire after this",
  }),
  claimLeaseSeconds: flag({
    flag: 'claim-lease',
    arg: 'SECONDS',
    env: 'BLACKBOARD_CLAIM_LEASE',
    default: DEFAULTS.claimLeaseSeconds as number,
    parse: wholeNumber(1, 7 * 24 * 3600),
    help: "a plan step claim lapses this long after its holder's last call",
  }),
  rosterWindowSeconds: flag({
    flag: 'roster-window',
    arg: 'S',
    env: 'BLACKBOARD_ROSTER_WINDOW',
    default: DEFAULTS.rosterWindowSeconds as number,
    parse: wholeNumber(1, 30 * 24 * 3600),
    help: 'the team roster lists agents seen within this long',
  }),
  messageRetentionSeconds: flag({
    flag: 'message-retention',
    arg: 'S',
    env: 'BLACKBOARD_MESSAGE_RETENTION',
    default: DEFAULTS.messageRetentionSeconds as number,
    shownDefault: `${DEFAULTS.messageRetentionSeconds} = 7 days`,
    parse: wholeNumber(1, 365 * 24 * 3600),
    help: 'messages between agents expire after this',
  }),
  keepCheckpoints: flag({
    flag: 'keep-checkpoints',
    arg: 'N',
    default: DEFAULTS.keepCheckpoints as number,
    parse: wholeNumber(1, 10_000),
    help: 'checkpoints kept per thread',
  }),
  changeRetentionSeconds: flag({
    flag: 'change-retention',
    arg: 'S',
    default: DEFAULTS.changeRetentionSeconds as number,
    shownDefault: `${DEFAULTS.changeRetentionSeconds} = 24 h`,
    parse: wholeNumber(1, 365 * 24 * 3600),
    help: 'how long state_changes can look back',
  }),
  progressIntervalMs: flag({
    flag: 'progress-interval-ms',
    arg: 'N',
    default: DEFAULTS.progressIntervalMs as number,
    parse: wholeNumber(50, 15_000),
    help: 'how often blocking tools (watch, state_changes, inbox,\nfinal_answer_get) send progress notifications when asked to',
  }),
  http: flag<number | undefined>({
    flag: 'http',
    arg: 'PORT',
    default: undefined,
    parse: wholeNumber(0, 65535),
    help: 'serve Streamable HTTP on this port instead of stdio',
  }),
  host: flag<string>({ flag: 'host', arg: 'HOST', default: DEFAULTS.host, help: 'HTTP bind address' }),
  token: tokenFlag({ flag: 'token', arg: 'T', env: 'BLACKBOARD_TOKEN', help: 'HTTP: require Authorization: Bearer T' }),
  auth: text({
    flag: 'auth',
    arg: 'FILE',
    help: 'HTTP: one token per client, each with its agent, namespaces and\nread or readwrite access (JSON; re-read on SIGHUP)',
  }),
  allowedHosts: flag({
    flag: 'allowed-hosts',
    arg: 'LIST',
    default: [] as string[],
    parse: commaList,
    help: 'HTTP: Host names accepted besides localhost, comma-separated',
  }),
  allowedOrigins: flag({
    flag: 'allowed-origins',
    arg: 'LIST',
    default: [] as string[],
    parse: commaList,
    help: 'HTTP: web origins accepted besides loopback ones, comma-separated',
  }),
  maxSessions: flag({
    flag: 'max-sessions',
    arg: 'N',
    default: DEFAULTS.maxSessions as number,
    parse: wholeNumber(0, 1_000_000),
    help: 'HTTP: most open 2025 sessions (0: none, 2025 clients served statelessly)',
  }),
  sessionIdleSeconds: flag({
    flag: 'http-session-idle',
    arg: 'S',
    default: DEFAULTS.sessionIdleSeconds as number,
    parse: wholeNumber(1, 7 * 24 * 3600),
    help: 'HTTP: close a session unused for S seconds',
  }),
  help: helpFlag,
  version: switchFlag({ flag: 'version', short: 'v', help: 'print the version and exit' }),
};

export type ParsedArgs = { kind: 'help' } | { kind: 'version' } | { kind: 'serve'; config: Config };

/** Reads flags, then the environment for what the flags leave out. Throws ConfigError with a one-line reason. */
export function parseConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): ParsedArgs {
  const { values: v } = readFlags(SERVE_FLAGS, argv, { env });
  if (v.help) return { kind: 'help' };
  if (v.version) return { kind: 'version' };
  const {
    http: port,
    host,
    token,
    auth: authFile,
    allowedHosts,
    allowedOrigins,
    maxSessions,
    sessionIdleSeconds,
    help,
    version,
    ...rest
  } = v;
  let http: Config['http'];
  if (port !== undefined) {
    if (authFile !== undefined && token !== undefined)
      throw new ConfigError('give either --token (one shared token) or --auth (one token per client), not both.');
    const exposed = exposureError(host, token !== undefined || authFile !== undefined);
    if (exposed) throw new ConfigError(exposed);
    let auth: NonNullable<Config['http']>['auth'];
    if (authFile !== undefined) {
      try {
        auth = { file: authFile, clients: loadAuthFile(authFile) };
      } catch (error) {
        throw new ConfigError(`--auth: ${(error as Error).message}`);
      }
    }
    http = { port, host, token, auth, sessionIdleSeconds, allowedHosts, allowedOrigins, maxSessions };
  }
  return { kind: 'serve', config: { http, ...rest } };
}

/** The main `--help`: serving flags, with one entry per subcommand. */
export function serveHelp(commands: Record<string, Pick<Command, 'usage' | 'summary'>>): string {
  const lines = Object.values(commands).map((c) => `  mcp-blackboard ${c.usage}\n${' '.repeat(38)}${c.summary}\n`);
  return `mcp-blackboard ${VERSION} - shared, durable, concurrency-safe state for LLM agents over MCP

Usage:
  mcp-blackboard [options]            serve over stdio (the default)
  mcp-blackboard --http PORT [opts]   serve Streamable HTTP on 127.0.0.1:PORT/mcp (and /mcp/NS: namespace NS)
${lines.join('')}  mcp-blackboard COMMAND --help       that command's flags

Options (each also read from the environment variable shown):
${flagHelp(SERVE_FLAGS)}
Logs and the start-up banner go to stderr; stdout carries only MCP messages. Over stdio the server waits for an
MCP client; to try it by hand: npx @modelcontextprotocol/inspector -- mcp-blackboard [options]
(from a clone: npx @modelcontextprotocol/inspector -- node dist/cli.js [options]; the Inspector needs Node 22+).
Exit codes: 0 done, 1 could not run (store, port, file), 2 bad flag or value.
`;
}

/** Serves MCP over stdio (or HTTP with `--http`) until the client or a signal ends it; resolves to the exit code. */
export async function runServe(argv: string[], commands: Record<string, Pick<Command, 'usage' | 'summary'>>): Promise<number> {
  const parsed = parseConfig(argv);
  if (parsed.kind === 'help') return print(serveHelp(commands));
  if (parsed.kind === 'version') return print(`${VERSION}\n`);
  const config = parsed.config;
  // A database that cannot be reached for a moment (a failover, a partition) delays the start instead of ending it.
  const store = await startWhenReachable(() =>
    openCommandStore(
      config.store,
      {
        maxValueBytes: config.maxValueBytes,
        synchronous: config.sync,
        changeRetentionMs: config.changeRetentionSeconds * 1000,
      },
      { command: 'serve', blackboardOnly: true },
    ),
  );
  const shutdown = async (code: number): Promise<never> => {
    await store.close().catch(() => {});
    process.exit(code);
  };
  process.on('SIGINT', () => void shutdown(0));
  process.on('SIGTERM', () => void shutdown(0));
  // A backend that cannot promise "acknowledged means durable" with its server's settings says so (Redis).
  const warning = (store.backend as { warning?: string }).warning;
  if (warning) console.error(`mcp-blackboard: warning: ${warning}`);
  if (config.http) return runHttp(config, store);
  // Serving starts with the session's first writes: a store that refuses them (a role that may only read) is named.
  const { tools, closed } = await startWhenReachable(() =>
    serveStdio(config, store).catch((error: unknown) => {
      throw cannotOpen(config.store, error);
    }),
  );
  const ns = config.namespace ? ` namespace=${config.namespace}` : '';
  console.error(`mcp-blackboard ${VERSION} on stdio: ${tools} tools, store=${store.backend.description}${ns}`);
  const hint = firstRunHint(process.stdin.isTTY === true, process.argv[1], argv);
  if (hint) console.error(hint);
  await closed;
  await store.close().catch(() => {});
  return 0;
}

/** Writes to stdout and waits until it is flushed (the process exits right after). */
export function print(text: string): Promise<number> {
  return new Promise((resolve, reject) => process.stdout.write(text, (error) => (error ? reject(error) : resolve(0))));
}
