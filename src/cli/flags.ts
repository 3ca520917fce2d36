// The flag table: each flag declared once ({flag, env, default, parse, help}); the parser and --help are made from it.
import { parseArgs } from 'node:util';
import { namespaceError, nameRule } from '../context.js';
import { maskPassword } from '../store/url.js';
import { ConfigError } from '../errors.js';

/**
 * One flag. The parser reads `--flag` (or, when it is not given, the environment variable `env`), turns the text
 * into a value with `parse`, and falls back to `default`; `--help` prints `help` with the placeholder `arg`, the
 * variable and the default. Adding a flag is adding one of these to a command's table.
 */
export interface Flag<T> {
  /** the flag's name, without `--` */
  flag: string;
  /** the environment variable read when the flag is not given */
  env?: string;
  /** the value's placeholder in --help (`N`, `URL`); a flag without one is a switch (true when given) */
  arg?: string;
  /** the value when neither the flag nor the variable is given */
  default: T;
  /** how --help shows the default; without it, a number or a word default is shown as it is */
  shownDefault?: string;
  /**
   * The given text as a value; `from` names where it came from (`--flag`, or the variable), for a one-line error.
   * A repeatable flag folds each occurrence into `previous` (which starts as the default).
   */
  parse?: (raw: string, from: string, previous: T) => T;
  /** may be given more than once (`--budget A=1 --budget B=2`) */
  repeat?: boolean;
  short?: string;
  /** --help text; a `\n` starts a continuation line */
  help: string;
}

// biome-ignore lint/suspicious/noExplicitAny: a table holds flags of every value type
export type FlagTable = Record<string, Flag<any>>;
export type Values<F extends FlagTable> = { [K in keyof F]: F[K] extends Flag<infer T> ? T : never };

/** A flag whose value type is inferred from its spec. */
export const flag = <T>(spec: Flag<T>): Flag<T> => spec;

/** A text value, undefined when not given. */
export const text = (spec: Omit<Flag<string | undefined>, 'default' | 'parse'> & { arg: string }): Flag<string | undefined> => ({
  ...spec,
  default: undefined,
});

/** A token: text that cannot be empty (an empty token would let no client in, and say nothing). */
export const tokenFlag = (spec: Omit<Flag<string | undefined>, 'default' | 'parse'> & { arg: string }): Flag<string | undefined> => ({
  ...spec,
  default: undefined,
  parse: (raw, from) => {
    if (raw === '') throw new ConfigError(`${from} must not be empty: give the token clients will send.`);
    return raw;
  },
});

/** A switch: false unless given. */
export const switchFlag = (spec: Omit<Flag<boolean>, 'default' | 'arg'>): Flag<boolean> => ({ ...spec, default: false });

/** A whole number from `min` to `max`. */
export function wholeNumber(min: number, max: number): (raw: string, from: string) => number {
  return (raw, from) => {
    const n = /^\s*-?\d+\s*$/.test(raw) ? Number(raw) : Number.NaN;
    if (!Number.isSafeInteger(n) || n < min || n > max) {
      throw new ConfigError(`${from} must be a whole number from ${min} to ${max}, got "${raw}".`);
    }
    return n;
  };
}

/** One of an allowed set of words (case-insensitive), returned lower-cased; a refusal echoes the value as given. */
export function oneOf<T extends string>(allowed: readonly T[]): (raw: string, from: string) => T {
  return (raw, from) => {
    const word = raw.trim().toLowerCase();
    if (!(allowed as readonly string[]).includes(word)) {
      throw new ConfigError(`${from} must be ${allowed.slice(0, -1).join(', ')} or ${allowed.at(-1)}, got "${raw}".`);
    }
    return word as T;
  };
}

/** A comma-separated list, blanks dropped. */
export const commaList = (raw: string): string[] =>
  raw
    .split(',')
    .map((x) => x.trim())
    .filter(Boolean);

/** A namespace name, checked by the one namespace rule. */
export const namespaceValue = (raw: string, from: string): string => {
  const bad = namespaceError(from, raw);
  if (bad) throw new ConfigError(bad);
  return raw;
};

/** A name (agent, agent type, thread), checked by the same rule the tools use, so a bad one is a bad flag (exit 2). */
export const nameFlag = (
  what: string,
  spec: Omit<Flag<string | undefined>, 'default' | 'parse'> & { arg: string },
): Flag<string | undefined> => ({
  ...spec,
  default: undefined,
  parse: (raw, from) => {
    const rule = nameRule(what);
    if (!rule.re.test(raw)) throw new ConfigError(`${from} "${raw.slice(0, 60)}" is not a valid ${what}: use ${rule.words}.`);
    return raw;
  },
});

/** The store URL flag, shared by every command; its help lists every kind of store. */
export const storeFlag = (help = 'the store'): Flag<string | undefined> => ({
  flag: 'store',
  arg: 'URL',
  env: 'BLACKBOARD_STORE',
  default: undefined,
  parse: storeUrl,
  help: `${help}: sqlite:///abs/path.db, sqlite://relative.db,\nmemory://, postgres://user:pass@host:port/db,\nredis://[:pass@]host:port[/db] or rediss://… (TLS)\n(default: a SQLite file in your data directory, printed at start-up)`,
});

/** A store URL of a kind this program serves (its password masked in the refusal); whether it opens is the store's. */
function storeUrl(raw: string, from: string): string {
  if (raw === '' || /^(sqlite:\/\/|memory:|postgres(ql)?:|rediss?:)/.test(raw)) return raw;
  throw new ConfigError(
    `${from} "${maskPassword(raw).slice(0, 80)}" is not a store URL: use sqlite:///absolute/path.db, sqlite://relative.db, postgres://…, redis://… or memory://.`,
  );
}

export const namespaceFlag = (help: string): Flag<string | undefined> => ({
  flag: 'namespace',
  arg: 'NS',
  env: 'BLACKBOARD_NAMESPACE',
  default: undefined,
  parse: namespaceValue,
  help: `${help}\n(NS matches ^[a-z][a-z0-9_]{0,31}$)`,
});

export const helpFlag = switchFlag({ flag: 'help', short: 'h', help: 'print this and exit' });

/**
 * Arguments ready for `parseArgs`: a negative number after a flag (`--max-iterations -1`) becomes its value
 * (`--max-iterations=-1`), so the value's own check can say what is wrong with it instead of parseArgs calling it
 * ambiguous. (`--flag=value` needs nothing.)
 */
function flagArgs(argv: string[]): string[] {
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
function flagError(error: unknown, command?: string): ConfigError {
  const { code, message } = error as { code?: string; message: string };
  const hint = `Run mcp-blackboard ${command ? `${command} ` : ''}--help for the flags.`;
  const flagName = /'(-[^' ]+)/.exec(message)?.[1] ?? '';
  if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return new ConfigError(`unknown flag ${flagName}. ${hint}`);
  if (code === 'ERR_PARSE_ARGS_UNEXPECTED_POSITIONAL') {
    return new ConfigError(`unexpected argument "${/'([^']*)'/.exec(message)?.[1] ?? ''}". ${hint}`);
  }
  if (/ambiguous/.test(message)) {
    return new ConfigError(`${flagName} needs a value; to give one that starts with "-", write ${flagName}=VALUE. ${hint}`);
  }
  if (/argument missing/.test(message)) return new ConfigError(`${flagName} needs a value. ${hint}`);
  return new ConfigError(`${message.replace(/\s*\n\s*/g, ' ').replace(/\.?$/, '.')} ${hint}`);
}

/** What a command line said: each flag's value, which flags were given on it, and the positional arguments. */
export interface Parsed<F extends FlagTable> {
  values: Values<F>;
  /** the flags given on the command line (not from the environment) */
  given: Set<keyof F>;
  positionals: string[];
}

/** Parses `argv` (and `env` for what the flags leave out) by a table. Throws ConfigError with a one-line reason. */
export function readFlags<F extends FlagTable>(
  table: F,
  argv: string[],
  options: { command?: string; env?: NodeJS.ProcessEnv; positionals?: boolean } = {},
): Parsed<F> {
  const env = options.env ?? process.env;
  const spec: Record<string, { type: 'string' | 'boolean'; multiple?: boolean; short?: string }> = {};
  for (const f of Object.values(table)) {
    spec[f.flag] = { type: f.arg ? 'string' : 'boolean', ...(f.repeat ? { multiple: true } : {}), ...(f.short ? { short: f.short } : {}) };
  }
  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: flagArgs(argv), options: spec, strict: true, allowPositionals: options.positionals ?? false });
  } catch (error) {
    throw flagError(error, options.command);
  }
  const values: Record<string, unknown> = {};
  const given = new Set<keyof F>();
  for (const [key, f] of Object.entries(table)) {
    const raw = parsed.values[f.flag];
    if (raw !== undefined) given.add(key);
    if (!f.arg) {
      values[key] = raw === true ? true : f.default;
    } else if (f.repeat) {
      let value = f.default;
      for (const one of (raw as string[] | undefined) ?? []) value = f.parse ? f.parse(one, `--${f.flag}`, value) : one;
      values[key] = value;
    } else {
      const fromEnv = raw === undefined && f.env !== undefined && env[f.env] !== '' ? env[f.env] : undefined;
      const text = (raw as string | undefined) ?? fromEnv;
      const from = raw === undefined && fromEnv !== undefined ? (f.env as string) : `--${f.flag}`;
      values[key] = text === undefined ? f.default : f.parse ? f.parse(text, from, f.default) : text;
    }
  }
  return { values: values as Values<F>, given, positionals: parsed.positionals };
}

/** The flags' part of a --help text: one entry per flag, its variable on the right, its default in the text. */
export function flagHelp(table: FlagTable): string {
  const lines: string[] = [];
  for (const f of Object.values(table)) {
    const name = `  --${f.flag}${f.arg ? ` ${f.arg}` : ''}`;
    const shown =
      f.shownDefault ??
      (typeof f.default === 'number' || (typeof f.default === 'string' && f.default !== '') ? String(f.default) : undefined);
    const help = `${f.help}${shown === undefined ? '' : ` (default ${shown})`}`.split('\n');
    const first = name.length < 24 ? name.padEnd(25) : `${name}\n${' '.repeat(25)}`;
    lines.push(`${first}${f.env ? `${help[0].padEnd(60)} ${f.env}` : help[0]}`);
    for (const more of help.slice(1)) lines.push(`${' '.repeat(25)}${more}`);
  }
  return `${lines.join('\n')}\n`;
}
