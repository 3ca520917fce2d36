// Addressing a message: what `to` names, the roster entries it reaches, and the mailboxes their entries go to.
import { BlackboardError } from '../errors.js';
import { checkName, type Identity } from '../context.js';
import { AGENT_MAILBOX, type Keys } from '../keyspace.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { holderId, type Holder, type PresenceRecord } from './presence.js';
import { nearestName, readSigns, readSignsBy, type RosterTimes } from './roster.js';

export type ToKind = 'agent' | 'type' | 'thread' | 'all';

/** What `to` addresses: an agent name, `agentType:T`, `thread:ID` or `all`. */
export function parseTo(to: string): { kind: ToKind; name: string } {
  if (to === 'all') return { kind: 'all', name: '' };
  const m = /^(agentType|thread):(.*)$/.exec(to);
  if (m) return { kind: m[1] === 'thread' ? 'thread' : 'type', name: checkName(m[1] === 'thread' ? 'thread' : 'agent type', m[2], 'to') };
  return { kind: 'agent', name: checkName('to', to, 'to') };
}

/**
 * The signs of life within the window a message can reach, read from where they are: a thread's own (its roster
 * entries are all under it), an agent name's or a type's copies, else (`all`, or copies not complete yet) the whole
 * roster. `whole` says which: the nearest name of a NOT_FOUND comes from the whole roster.
 */
export async function reachableSigns(
  store: VersionedStore,
  keys: Keys,
  kind: ToKind,
  name: string,
  times: RosterTimes,
): Promise<{ signs: PresenceRecord[]; whole: boolean }> {
  const now = store.now();
  if (kind === 'thread') return { signs: [...(await readSigns(store, keys, now, times, keys.presenceRange(name))).values()], whole: false };
  const by = kind === 'agent' || kind === 'type' ? await readSignsBy(store, keys, kind, name, now, times) : undefined;
  return by !== undefined ? { signs: by, whole: false } : { signs: [...(await readSigns(store, keys, now, times)).values()], whole: true };
}

/**
 * The roster entries a message reaches. Not the sender by type or `all`: a named sender is none of its own threads,
 * as its mail is theirs.
 */
export function recipientsOf(signs: PresenceRecord[], kind: ToKind, name: string, me: Identity): Holder[] {
  const isMe = (h: Holder): boolean => (me.agent !== undefined ? h.agent === me.agent : holderId(h) === holderId({ thread: me.thread }));
  return signs
    .filter((s) =>
      kind === 'agent' ? s.agent === name : kind === 'thread' ? s.thread === name : kind === 'type' ? s.agentType === name : true,
    )
    .filter((s) => kind === 'agent' || kind === 'thread' || !isMe(s))
    .map((s) => (s.agent !== undefined ? { agent: s.agent, thread: s.thread } : { thread: s.thread }));
}

/**
 * The mailbox keys (by sequence number) a message's recipients get. Mail to a thread goes to the thread; a named
 * agent's other mail to the agent, read in whichever thread it reads (one entry however many of its threads are on
 * the roster), so an agent that comes back in a new thread has it.
 */
export function mailboxesOf(keys: Keys, recipients: Holder[], kind: ToKind): Array<(seq: number) => string> {
  const boxes = new Map<string, (seq: number) => string>();
  for (const r of recipients) {
    const box = kind === 'thread' || r.agent === undefined ? r.thread : AGENT_MAILBOX;
    boxes.set(holderId({ agent: r.agent, thread: box }), (seq) => keys.mailbox(r.agent, box, seq));
  }
  return [...boxes.values()];
}

/** NOT_FOUND for a message no roster entry matches, with the closest agent name. */
export function noRecipient(to: string, kind: ToKind, names: string[]): BlackboardError {
  const near = kind === 'agent' ? nearestName(to, names) : undefined;
  const nobody = kind === 'all' ? 'Nobody else is on the roster' : `No agent on the roster matches "${to}"`;
  return new BlackboardError(
    'NOT_FOUND',
    `${nobody}${near ? `: did you mean "${near}"?` : '.'} Nothing was sent.${kind === 'all' ? '' : ' To keep the message for an agent that has not arrived yet, pass waitForRecipient: true.'} See who is here with {tool:team_list}.`,
    { to, ...(near ? { suggestion: near } : {}) },
  );
}
