// The board's team section: the roster (most recently seen first) and the newest messages, each cut to a bound.
import { MessageRecord, messageView } from '../services/mailbox.js';
import { readRoster, type HeldClaim, type RosterTimes } from '../services/roster.js';
import { withUnread, type TeamMember, type TimelineMessage } from '../services/team.js';
import type { RangeQuery } from '../store/types.js';
import type { Entry, VersionedStore } from '../store/versioned-store.js';
import { teamKeys } from './layout.js';

/** How many agents and messages the board shows, and how many earlier messages it counts at most. */
export const TEAM_SHOWN = { agents: 50, messages: 40, countedEarlier: 1000, contentChars: 2000 } as const;

/** The namespace's team as the board shows it. */
export interface TeamView {
  /**
   * the most recently seen agents first, at most {@link TEAM_SHOWN}.agents, with their unread counts (`holdingHidden`:
   * how many more steps one holds than `holding` lists, in a board within a tool reply's bound)
   */
  roster: Array<TeamMember & { holdingHidden?: number }>;
  /** how many agents the roster holds in all */
  rosterTotal: number;
  /** the newest messages, oldest first (a content longer than TEAM_SHOWN.contentChars is cut, with `cut`) */
  messages: Array<TimelineMessage & { cut?: true }>;
  /** how many earlier messages are kept but not shown (counted up to TEAM_SHOWN.countedEarlier) */
  messagesHidden: number;
}

/** What the team section reads through: ranges and the change feed of the store (the board's read-only view). */
export interface TeamSource {
  list(query: Omit<RangeQuery, 'now'>): Promise<{ entries: Array<[string, Entry]>; revision: number }>;
  changes(query: { after: number; lo: string; hi: string; limit: number }): Promise<{
    changes: unknown[];
    revision: number;
    compacted: number;
  }>;
}

/**
 * The roster and mail functions take a store but read only through `list`, `get` and `now`: this gives them those,
 * over the board's read-only view (a `get` is a one-key range), so the board still cannot write.
 */
function readsOf(source: TeamSource): VersionedStore {
  const reads: Pick<VersionedStore, 'list' | 'get' | 'now'> = {
    list: (query) => source.list(query),
    get: async (key) => (await source.list({ lo: key, hi: `${key}\u0000`, limit: 1 })).entries[0]?.[1],
    now: () => Date.now(),
  };
  return reads as VersionedStore;
}

/**
 * The namespace's team, or undefined when nobody is on its roster and it keeps no messages. `claims`: the claims on its
 * plans, when the caller keeps them current (else every plan is read for the steps each agent holds).
 */
export async function readTeam(
  source: TeamSource,
  namespace: string,
  times: RosterTimes,
  claims?: HeldClaim[],
): Promise<TeamView | undefined> {
  const store = readsOf(source);
  const keys = teamKeys(namespace);
  const [roster, counter] = await Promise.all([readRoster(store, keys, times, claims), store.get(keys.messageCounter())]);
  const last = typeof counter?.value === 'number' ? counter.value : 0;
  const from = Math.max(0, last - TEAM_SHOWN.messages);
  const range = keys.messageRange();
  const [page, earlier] = await Promise.all([
    source.list({ ...range, lo: keys.message(from + 1), limit: TEAM_SHOWN.messages }),
    countEarlier(source, namespace, from),
  ]);
  const messages = page.entries.flatMap(([, entry]) => {
    const parsed = MessageRecord.safeParse(entry.value);
    if (!parsed.success) return [];
    const m = parsed.data;
    const view = messageView(m);
    const cut = view.content.length > TEAM_SHOWN.contentChars;
    return [
      {
        ...view,
        ...(cut ? { content: view.content.slice(0, TEAM_SHOWN.contentChars), cut: true as const } : {}),
        recipients: m.recipients,
        ...(m.awaited !== undefined ? { awaiting: m.awaited.slice(2) } : {}),
      },
    ];
  });
  if (roster.length === 0 && messages.length === 0) return undefined;
  return {
    roster: await withUnread(store, keys, roster.slice(0, TEAM_SHOWN.agents)),
    rosterTotal: roster.length,
    messages,
    messagesHidden: earlier,
  };
}

/** What was last counted of a namespace's messages up to `from`, at which revision, and when the first of them expires. */
interface Counted {
  from: number;
  count: number;
  at: number;
  expires: number;
}
const COUNTED = new WeakMap<TeamSource, Map<string, Counted>>();

/**
 * How many messages numbered up to `from` are kept (at most TEAM_SHOWN.countedEarlier). Messages come numbered after
 * the last and go when they expire; only a namespace import puts others in their places. What was counted for the
 * namespace stays true until one of them expires or the change feed shows a write to one of them (or lost what
 * changed), so only the messages numbered since are read (none while nobody sends, however often the team is read).
 */
async function countEarlier(source: TeamSource, namespace: string, from: number): Promise<number> {
  if (from <= 0) return 0;
  const keys = teamKeys(namespace);
  const counts = COUNTED.get(source) ?? new Map<string, Counted>();
  COUNTED.set(source, counts);
  const was = counts.get(namespace);
  let fresh = was !== undefined && was.from <= from && Date.now() < was.expires ? was : undefined;
  let at = Number.POSITIVE_INFINITY;
  if (fresh) {
    const range = { lo: keys.messageRange().lo, hi: keys.message(fresh.from + 1) };
    const page = await source.changes({ after: fresh.at, ...range, limit: 1 });
    if (page.changes.length > 0 || fresh.at < page.compacted) fresh = undefined;
    else at = page.revision;
  }
  if (fresh?.from === from) {
    counts.set(namespace, { ...fresh, at });
    return fresh.count;
  }
  const lo = fresh ? keys.message(fresh.from + 1) : keys.messageRange().lo;
  const page = await source.list({ lo, hi: keys.message(from + 1), limit: TEAM_SHOWN.countedEarlier });
  let expires = fresh?.expires ?? Number.POSITIVE_INFINITY;
  for (const [, entry] of page.entries) if (entry.expiresAt !== undefined && entry.expiresAt < expires) expires = entry.expiresAt;
  const count = Math.min(TEAM_SHOWN.countedEarlier, (fresh?.count ?? 0) + page.entries.length);
  counts.set(namespace, { from, count, at: Math.min(at, page.revision), expires });
  return count;
}
