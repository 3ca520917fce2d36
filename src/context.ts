// Who is calling and where their keys live: identity, name, scope and key checks, scope resolution.
import { createHash } from 'node:crypto';
import { BlackboardError, invalid } from './errors.js';
import type { Json } from './store/types.js';
import type { Fingerprint, IdempotencyKey } from './store/versioned-store.js';
import { threadInfoOf } from './services/thread-info.js';
import * as keyspace from './keyspace.js';
import { canonicalJson } from './store/ops.js';
import type { KeyRange } from './keyspace.js';

/**
 * Who is calling, and where their keys live. Every name, scope and key a tool receives is checked here, in one
 * place, before anything reaches the store.
 */
export interface Identity {
  /** `--namespace`; undefined = the unprefixed default namespace */
  namespace?: string;
  agent?: string;
  agentType?: string;
  thread: string;
  run: string;
  parentThread?: string;
  /** the root of this thread's delegation tree (this thread when it has no parent) */
  rootThread: string;
  /** 0 for a root thread, parent's level + 1 for a child */
  delegateLevel: number;
}

export const NAMESPACE_RE = /^[a-z][a-z0-9_]{0,31}$/;

/**
 * The namespace rule, in one place: undefined when `value` is a namespace name, else the one message that says why
 * not (`what` names where it came from: `--namespace`, `BLACKBOARD_NAMESPACE`, a request path, an auth file entry).
 * Every edge that takes a namespace (flags, bundles, the board, HTTP paths, auth files) asks this function.
 */
export function namespaceError(what: string, value: string): string | undefined {
  if (NAMESPACE_RE.test(value)) return undefined;
  return `${what} "${truncate(value)}" must match ^[a-z][a-z0-9_]{0,31}$ (a lower-case letter, then up to 31 lower-case letters, digits or "_").`;
}
/** Agent names, agent types, thread ids, run ids and group names. */
export const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9_.@-]{0,127}$/;
/**
 * A thread id: a name that may also hold ":" after its first character, and be a little longer, so that an agent's
 * default thread `agent:NAME` is one for any agent name.
 */
export const THREAD_RE = /^[A-Za-z0-9][A-Za-z0-9_.@:-]{0,159}$/;
/** The rule a name of kind `what` follows, as a regex and in words. */
export function nameRule(what: string): { re: RegExp; words: string } {
  return /thread/.test(what)
    ? { re: THREAD_RE, words: '1-160 letters, digits, "_", ".", "@", ":" or "-", starting with a letter or digit' }
    : { re: NAME_RE, words: '1-128 letters, digits, "_", ".", "@" or "-", starting with a letter or digit' };
}

export const MAX_KEY_CHARS = 512;
// C0 and C1 control characters, DEL included.
const CONTROL_RE = /[\u0000-\u001f\u007f-\u009f]/;

/** A name of kind `what`; `path` is the argument it came in (its error's `details.path`), when it came in one. */
export function checkName(what: string, value: string, path?: string): string {
  const rule = nameRule(what);
  if (!rule.re.test(value)) {
    throw invalid(`${what} "${truncate(value)}" is not valid: use ${rule.words}.`, {
      ...(path !== undefined ? { path } : {}),
      [what]: truncate(value),
    });
  }
  return value;
}

/**
 * A key is 1..512 characters of well-formed Unicode with no control characters. `what` is the argument it came in
 * (`key`, `prefix`, `name`): its error's `details.path`.
 */
export function checkKey(key: string, what = 'key'): string {
  const length = [...key].length;
  if (length === 0 || length > MAX_KEY_CHARS) {
    throw invalid(`${what} must be 1 to ${MAX_KEY_CHARS} characters long; it has ${length}.`, { path: what, length });
  }
  if (CONTROL_RE.test(key)) throw invalid(`${what} must not contain control characters.`, { path: what });
  if (!key.isWellFormed()) throw invalid(`${what} must be well-formed Unicode (it has a lone surrogate).`, { path: what });
  return key;
}

/** A prefix may be empty; otherwise it follows the key rules. */
export function checkPrefix(prefix: string | undefined): string {
  if (prefix === undefined || prefix === '') return '';
  return checkKey(prefix, 'prefix');
}

/** Where a scope's keys live, and whether this caller may write there. */
export interface ResolvedScope {
  /** the canonical explicit form, e.g. `thread:abc`; used in resource URIs and messages */
  label: string;
  /** the scope's part of every storage key */
  id: string;
  /** why writes are refused, when they are */
  readOnlyReason?: string;
}

export const SCOPE_FORMS = 'global, thread, run, parent, agent_type, profile, group:NAME, thread:ID, profile:NAME, agent_type:NAME';

/** The id of run `run`'s scope on `thread` (`run:T:R`); with run "" the prefix every run scope of the thread has. */
export const runScopeId = (thread: string, run: string): string => `run:${thread}:${run}`;

/** The thread and run of a run scope's id (a run id holds no ":"); `undefined` for any other scope. */
export function runOfScope(id: string): { thread: string; run: string } | undefined {
  if (!id.startsWith('run:')) return undefined;
  const last = id.lastIndexOf(':');
  return last > 4 ? { thread: id.slice(4, last), run: id.slice(last + 1) } : undefined;
}

/** Resolves a tool's `scope` argument against the caller's identity; its errors name `scope` in `details.path`. */
export function resolveScope(scope: string | undefined, who: Identity): ResolvedScope {
  const s = scope ?? 'global';
  const at = (label: string): ResolvedScope => ({ label, id: label });
  switch (s) {
    case 'global':
      return at('global');
    case 'thread':
      return at(`thread:${who.thread}`);
    case 'run':
      return at(runScopeId(who.thread, who.run));
    case 'parent':
      return at(`parent:${who.rootThread}`);
    case 'agent_type':
      if (!who.agentType) {
        throw invalid(
          'This connection has no agent type, so scope "agent_type" has no meaning. Use agent_type:NAME, or start the server with --agent-type TYPE. {tool:run_start} can also set agentType.',
          { path: 'scope' },
        );
      }
      return at(`agent_type:${who.agentType}`);
    case 'profile':
      if (!who.agent) {
        throw invalid(
          'This connection has no agent name, so scope "profile" has no meaning. Start the server with --agent NAME, or read another profile with profile:NAME.',
          { path: 'scope' },
        );
      }
      return at(`profile:${who.agent}`);
  }
  const colon = s.indexOf(':');
  const kind = colon > 0 ? s.slice(0, colon) : '';
  const name = colon > 0 ? s.slice(colon + 1) : '';
  if (kind === 'group' || kind === 'thread' || kind === 'agent_type' || kind === 'profile') {
    checkName(`${kind} name`, name, 'scope');
    const resolved = at(`${kind}:${name}`);
    if (kind === 'profile' && name !== who.agent) {
      resolved.readOnlyReason = `profile:${name} belongs to another agent; you can read it but only agent "${name}" can write it.`;
    }
    return resolved;
  }
  throw invalid(`Unknown scope "${truncate(s)}". Use one of: ${SCOPE_FORMS}.`, { path: 'scope', scope: truncate(s) });
}

/**
 * Whether `id` is a scope as {@link resolveScope} stores it (`global`, `thread:T`, `run:T:R`, `parent:T`,
 * `agent_type:N`, `profile:N`, `group:N`): what a record loaded from a bundle may name, so that a tool can reach it.
 */
export function isScopeId(id: string): boolean {
  if (id === 'global') return true;
  const colon = id.indexOf(':');
  const kind = id.slice(0, colon);
  const rest = id.slice(colon + 1);
  if (colon < 0) return false;
  if (kind === 'group' || kind === 'agent_type' || kind === 'profile') return NAME_RE.test(rest);
  if (kind === 'thread' || kind === 'parent') return THREAD_RE.test(rest);
  if (kind !== 'run') return false;
  const last = rest.lastIndexOf(':');
  return last > 0 && THREAD_RE.test(rest.slice(0, last)) && last < rest.length - 1;
}

/** Throws FORBIDDEN when the scope is read-only for this caller. */
export function writable(scope: ResolvedScope): ResolvedScope {
  if (scope.readOnlyReason) throw new BlackboardError('FORBIDDEN', scope.readOnlyReason, { scope: scope.label });
  return scope;
}

/** The storage key of a user key in a scope. */
export const dataKey = (who: Identity, scope: ResolvedScope, key: string): string => keyspace.dataKey(who.namespace, scope.id, key);

/** The storage key range `[lo, hi)` of every key of a scope that starts with `prefix`. */
export const dataRange = (who: Identity, scope: ResolvedScope, prefix: string): KeyRange =>
  keyspace.dataRange(who.namespace, scope.id, prefix);

/** Internal records of a family (plans, scratchpad, …) live in scopes no tool argument can name. */
export const internalKey = (who: Identity, family: string, owner: string, key: string): string =>
  keyspace.familyKey(who.namespace, family, owner, key);

export const internalRange = (who: Identity, family: string, owner: string): KeyRange => keyspace.familyRange(who.namespace, family, owner);

/**
 * Which operation a service call is, as its caller names it: the tool layer fills it from the tool's name, a library
 * from its method. It names the call's idempotency record and is part of the call's fingerprint.
 */
export interface CallOptions {
  operation: string;
}

/** Where an idempotent call's first result is kept, and the fingerprint a repeat must match (see `transact`). */
export interface Idempotency {
  idempotencyKey?: IdempotencyKey;
  fingerprint?: Fingerprint;
}

/**
 * The idempotency record of a call: one per (namespace, thread, run, agent, key), holding a fingerprint of the call
 * (the operation and its arguments but the key, as canonical JSON, hashed), so the same key sent with different
 * arguments is refused instead of answered with the first call's result. A key counts within a run: a model that
 * labels its writes "step-1" in each run has them applied in each. The run is the thread's current one as the call's
 * transaction reads it, not the one this connection last saw (it may lag behind a `run_start` by another connection
 * serving the thread): a write and its retry count in the run they commit in. A call that moves a thread to another
 * run (`run_start`, a checkpoint's restore) passes that thread as `movesThread`: its key counts within the thread, whatever
 * its run, because its retry comes from the run it moved to and must find the first call's record there.
 */
export function idempotent<A extends { idempotencyKey?: string | null }>(
  who: Identity,
  call: CallOptions,
  args: A,
  movesThread?: string,
): Idempotency {
  const key = args.idempotencyKey;
  if (key === undefined || key === null) return {};
  checkKey(key, 'idempotencyKey');
  const rest: Record<string, Json> = {};
  for (const [name, value] of Object.entries(args))
    if (name !== 'idempotencyKey' && value !== null && value !== undefined) rest[name] = value as Json;
  const hash = createHash('sha256').update(call.operation).update('\n').update(canonicalJson(rest)).digest('base64url').slice(0, 32);
  // the caller's agent is part of it: two agents working in one thread (an ancestor's owner in a child's) who happen
  // to label a write alike each have it applied (an agent name holds no ":", so the parts cannot run together)
  const fingerprint = { hash, key, operation: call.operation };
  const byAgent = `${who.agent ?? ''}:${key}`;
  if (movesThread !== undefined) return { idempotencyKey: keyspace.idempotencyKey(who.namespace, movesThread, byAgent), fingerprint };
  const inRun = (run: string): string => keyspace.idempotencyKey(who.namespace, who.thread, `${run}:${byAgent}`);
  const from = keyspace.keysOf(who.namespace).threadInfo(who.thread);
  return { idempotencyKey: { from, key: (info) => inRun(threadInfoOf(info)?.run ?? who.run), likely: inRun(who.run) }, fingerprint };
}

/** A name as an error message echoes it: its first 80 characters (a model's bad input is not sent back whole). */
export function truncate(value: string): string {
  return value.length > 80 ? `${value.slice(0, 80)}…` : value;
}
