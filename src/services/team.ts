// The team: the roster paged for team_list with each agent's unread count, and the view the board shows.
import { notOurCursor } from './cursor.js';
import { keysOf, type Keys } from '../keyspace.js';
import { jsonBytes } from '../store/json-text.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { MessageRecord, lastMessageSeq, messageView, unreadOf, type Message } from './mailbox.js';
import { fitPage } from './page-fit.js';
import { holderId } from './presence.js';
import { listAll, readRoster, type RosterEntry, type RosterTimes } from './roster.js';
import type { Session } from './session.js';

export const TEAM_PAGE = 50;
/** How many bytes of agents (as JSON) one page carries at most (its first agent always comes). */
const PAGE_BYTES = 16 * 1024;
/** What an agent's `"unread":N` adds to it, at most. */
const UNREAD_BYTES = 24;

export type TeamMember = RosterEntry & { unread: number };

/** The roster for a caller: pages of {@link TEAM_PAGE}, most recently seen first. */
export class TeamService {
  constructor(
    private readonly store: VersionedStore,
    private readonly session: Session,
    readonly times: RosterTimes,
  ) {}

  async list(args: { cursor?: string }): Promise<{ agents: TeamMember[]; nextCursor?: string }> {
    const keys = this.session.keys;
    const roster = await readRoster(this.store, keys, this.times);
    let start = 0;
    if (args.cursor !== undefined) {
      const after = decodeTeamCursor(args.cursor);
      const at = roster.findIndex((e) => e.lastSeen < after.t || (e.lastSeen === after.t && holderId(e) > after.h));
      start = at < 0 ? roster.length : at;
    }
    // A page also ends before an agent that would take it over PAGE_BYTES (long names, many steps held).
    const { kept: page } = fitPage(roster.slice(start, start + TEAM_PAGE), PAGE_BYTES, (entry) => jsonBytes(entry) + UNREAD_BYTES);
    const agents = await withUnread(this.store, keys, page);
    const last = page[page.length - 1];
    return {
      agents,
      ...(start + page.length < roster.length && last ? { nextCursor: encodeTeamCursor(last.lastSeen, holderId(last)) } : {}),
    };
  }
}

/** Roster entries with their unread counts (the board reads them for the agents it shows only). */
export async function withUnread(store: VersionedStore, keys: Keys, entries: RosterEntry[]): Promise<TeamMember[]> {
  return Promise.all(entries.map(async (e) => ({ ...e, unread: await unreadOf(store, keys, e) })));
}

const encodeTeamCursor = (t: string, h: string): string => Buffer.from(JSON.stringify({ t, h }), 'utf8').toString('base64url');
function decodeTeamCursor(cursor: string): { t: string; h: string } {
  try {
    const parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { t?: unknown; h?: unknown };
    if (typeof parsed.t === 'string' && typeof parsed.h === 'string') return { t: parsed.t, h: parsed.h };
  } catch {
    // falls through to the refusal
  }
  throw notOurCursor();
}

/** A message as the board's timeline shows it: who sent it to whom, and who it reached. */
export type TimelineMessage = Message & { recipients: Array<{ agent?: string; thread: string }>; awaiting?: string };

/**
 * What the board shows of a namespace's team: the roster (status, steps held, last seen, unread) and the newest
 * `messages` messages, oldest first. Read-only; for the board (`src/ui`), which has no session.
 */
export async function teamView(
  store: VersionedStore,
  namespace: string | undefined,
  options: RosterTimes & { messages?: number },
): Promise<{ roster: TeamMember[]; messages: TimelineMessage[] }> {
  const keys = keysOf(namespace);
  const roster = await withUnread(store, keys, await readRoster(store, keys, options));
  const from = Math.max(0, (await lastMessageSeq(store, keys)) - (options.messages ?? 50));
  const log = await listAll(store, { ...keys.messageRange(), lo: keys.message(from + 1) }, options.messages ?? 50);
  const messages = log.flatMap(([, entry]) => {
    const parsed = MessageRecord.safeParse(entry.value);
    if (!parsed.success) return [];
    const m = parsed.data;
    return [{ ...messageView(m), recipients: m.recipients, ...(m.awaited !== undefined ? { awaiting: m.awaited.slice(2) } : {}) }];
  });
  return { roster, messages };
}
