// The configuration the server runs with: its shape, its defaults and the version; the CLI's flag table fills it.
import { readFileSync } from 'node:fs';
import type { AuthClient } from './auth-file.js';

export { FAMILIES, type Family } from './tool-profiles.js';

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
  /** `--tools`: profiles, families and tool names (default `agent`); see src/tool-profiles.ts */
  tools: string[];
  /** `--read-only`: register read tools only */
  readOnly: boolean;
  maxIterations?: number;
  budgets: Record<string, number>;
  maxValueBytes: number;
  /** SQLite `synchronous`: FULL (default) survives power loss, NORMAL survives crashes */
  sync: 'FULL' | 'NORMAL';
  planTtlSeconds: number;
  /** `--claim-lease`: how long a plan step claim lives without a sign of life from its holder (seconds) */
  claimLeaseSeconds: number;
  /** `--roster-window`: how long an agent stays on the team roster after its last call (seconds) */
  rosterWindowSeconds: number;
  /** `--message-retention`: how long a message is kept (seconds) */
  messageRetentionSeconds: number;
  keepCheckpoints: number;
  /** how long the change log and deleted keys' tombstones are kept (seconds) */
  changeRetentionSeconds: number;
  allowBudgetAdmin: boolean;
  /** progress notification period of blocking tools (ms) */
  progressIntervalMs: number;
}

/** The smallest `--max-value-bytes`: the server's own records (a thread's info, a roster entry) must fit. */
export const MIN_VALUE_BYTES = 1024;

/** Every default, once: the flag table shows and applies these, and {@link defaultConfig} starts from them. */
export const DEFAULTS = {
  tools: ['agent'],
  maxValueBytes: 1024 * 1024,
  sync: 'FULL',
  planTtlSeconds: 7 * 24 * 3600,
  claimLeaseSeconds: 600,
  rosterWindowSeconds: 3600,
  messageRetentionSeconds: 7 * 24 * 3600,
  keepCheckpoints: 20,
  changeRetentionSeconds: 24 * 3600,
  progressIntervalMs: 10_000,
  host: '127.0.0.1',
  sessionIdleSeconds: 1800,
  maxSessions: 1000,
  uiPort: 8765,
} as const;

export const VERSION: string = (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
  .version;

/** Defaults for embedding and tests: what the server runs with when given no flag and no environment. */
export function defaultConfig(overrides: Partial<Config> = {}): Config {
  return {
    tools: [...DEFAULTS.tools],
    readOnly: false,
    budgets: {},
    maxValueBytes: DEFAULTS.maxValueBytes,
    sync: DEFAULTS.sync,
    planTtlSeconds: DEFAULTS.planTtlSeconds,
    claimLeaseSeconds: DEFAULTS.claimLeaseSeconds,
    rosterWindowSeconds: DEFAULTS.rosterWindowSeconds,
    messageRetentionSeconds: DEFAULTS.messageRetentionSeconds,
    keepCheckpoints: DEFAULTS.keepCheckpoints,
    changeRetentionSeconds: DEFAULTS.changeRetentionSeconds,
    allowBudgetAdmin: false,
    progressIntervalMs: DEFAULTS.progressIntervalMs,
    ...overrides,
  };
}
