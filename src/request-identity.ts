// Who a single request is: the `_meta` keys a request may carry to name its thread, parent thread and agent type.
import { BlackboardError } from './errors.js';
import { nameRule } from './context.js';

/** The `_meta` keys of a request's identity. */
export const META_THREAD = 'blackboard/thread';
export const META_PARENT_THREAD = 'blackboard/parentThread';
export const META_AGENT_TYPE = 'blackboard/agentType';

/** What a request's `_meta` says about who it is (each part only when given). */
export interface MetaIdentity {
  thread?: string;
  parentThread?: string;
  agentType?: string;
}

/** The identity parts of a request's `_meta`; a malformed one is INVALID_ARGUMENT naming the key. */
export function metaIdentity(meta: Record<string, unknown> | undefined): MetaIdentity {
  const out: MetaIdentity = {};
  if (!meta) return out;
  const take = (key: string, field: keyof MetaIdentity): void => {
    const value = meta[key];
    if (value === undefined) return;
    const rule = nameRule(field === 'agentType' ? 'agent type' : 'thread');
    if (typeof value !== 'string' || !rule.re.test(value)) {
      throw new BlackboardError('INVALID_ARGUMENT', `_meta "${key}" must be ${rule.words}; nothing was done.`, { path: `_meta.${key}` });
    }
    out[field] = value;
  };
  take(META_THREAD, 'thread');
  take(META_PARENT_THREAD, 'parentThread');
  take(META_AGENT_TYPE, 'agentType');
  return out;
}

const ANONYMOUS = 'anonymous';

/** The thread of an agent's requests that name none: the same for every request of that agent. */
export const defaultThread = (agent: string | undefined): string => `agent:${agent ?? ANONYMOUS}`;

/**
 * Whose default thread `thread` is: an `agent:NAME` thread belongs to NAME before anyone has used it (the default
 * thread of callers with no name, `agent:anonymous`, to nobody).
 */
export const defaultThreadOwner = (thread: string): string | undefined =>
  thread.startsWith('agent:') && thread !== defaultThread(undefined) ? thread.slice('agent:'.length) : undefined;
