// Threads are owned: writes into another thread are allowed to its owner and to owners of the threads above it.
import type { Identity } from '../context.js';
import { BlackboardError } from '../errors.js';
import type { Json } from '../store/types.js';
import { defaultThreadOwner } from '../request-identity.js';
import { threadInfoOf } from './thread-info.js';

type Read = (key: string) => Promise<{ value: Json } | undefined>;
/** Who is asking (a session): its identity, and where a thread's info is kept. */
export interface Caller {
  readonly identity: Identity;
  threadKey(thread: string): string;
}

/**
 * Refuses (FORBIDDEN, naming the owner) a write by this connection into `thread` when it is another thread whose
 * owner is neither the caller's agent nor the owner of any thread above it. A thread nobody recorded, or recorded
 * without an owner (by a caller with no agent name), is open — but for an agent's default thread `agent:NAME`, which
 * is NAME's from the start. Reads are never refused. (The connection's own thread was checked when it was opened:
 * see `Session.open`.)
 */
export async function checkThreadWrite(caller: Caller, read: Read, thread: string): Promise<void> {
  if (thread === caller.identity.thread) return;
  const owner = await barringOwner(caller, read, thread);
  if (owner !== undefined) throw forbiddenThread(thread, owner);
}

/** The owner that keeps the caller from writing into `thread`, or `undefined` when the caller may. */
export async function barringOwner(caller: Caller, read: Read, thread: string): Promise<string | undefined> {
  const who = caller.identity;
  const info = threadInfoOf((await read(caller.threadKey(thread)))?.value);
  const owner = info === undefined ? defaultThreadOwner(thread) : info.owner;
  if (owner === undefined || owner === who.agent) return undefined;
  const seen = new Set([thread]);
  for (let above = info?.parent; above !== undefined && !seen.has(above) && seen.size < 64; ) {
    seen.add(above);
    const parent = threadInfoOf((await read(caller.threadKey(above)))?.value);
    if (who.agent !== undefined && parent?.owner === who.agent) return undefined;
    above = parent?.parent;
  }
  return owner;
}

export const forbiddenThread = (thread: string, owner: string): BlackboardError =>
  new BlackboardError(
    'FORBIDDEN',
    `Thread ${thread} belongs to agent "${owner}"; only its owner, or the owner of a thread above it, writes into it. Nothing was changed. You can still read it; write in your own thread.`,
    { thread, owner },
  );
