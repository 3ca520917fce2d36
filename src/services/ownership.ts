// Threads are owned: writes into another thread are allowed to its owner and to owners of the threads above it.
import { BlackboardError } from '../errors.js';
import type { Json } from '../store/types.js';
import { threadInfoOf, type Session } from './session.js';

type Read = (key: string) => Promise<{ value: Json } | undefined>;

/**
 * Refuses (FORBIDDEN, naming the owner) a write by this connection into `thread` when it is another thread whose
 * owner is neither the caller's agent nor the owner of any thread above it. A thread nobody recorded, or recorded
 * without an owner (by a caller with no agent name), is open. Reads are never refused.
 */
export async function checkThreadWrite(session: Session, read: Read, thread: string): Promise<void> {
  const who = session.identity;
  if (thread === who.thread) return;
  const info = threadInfoOf((await read(session.threadKey(thread)))?.value);
  if (info?.owner === undefined || info.owner === who.agent) return;
  const seen = new Set([thread]);
  for (let above = info.parent; above !== undefined && !seen.has(above) && seen.size < 64; ) {
    seen.add(above);
    const parent = threadInfoOf((await read(session.threadKey(above)))?.value);
    if (who.agent !== undefined && parent?.owner === who.agent) return;
    above = parent?.parent;
  }
  throw new BlackboardError(
    'FORBIDDEN',
    `Thread ${thread} belongs to agent "${info.owner}"; only its owner, or the owner of a thread above it, writes into it. Nothing was changed. You can still read it; write in your own thread.`,
    { thread, owner: info.owner },
  );
}
