// The team roster: who called within the roster window, read from signs of life, with status and the steps held.
import type { KeyRange, Keys } from '../keyspace.js';
import type { Entry, VersionedStore } from '../store/versioned-store.js';
import { claimAlive, holderId, PresenceRecord } from './presence.js';
import { copiesComplete } from './presence-index.js';
import { PlanRecordSchema } from './plan-steps.js';
import { editDistance } from '../edit-distance.js';

/** How many signs of life and plans a roster reads at most (a roster beyond this lists the most recently written). */
const MAX_RECORDS = 10_000;

export type RosterStatus = 'active' | 'idle' | 'gone';

/** One agent (an agent name in a thread) as the roster shows it. */
export interface RosterEntry {
  agent?: string;
  agentType?: string;
  thread: string;
  /** the MCP client's name (`clientInfo`), when it gave one */
  client?: string;
  /** ISO time of its last sign of life */
  lastSeen: string;
  status: RosterStatus;
  holding: Array<{ planId: string; stepId: string }>;
}

/** The roster's clocks: `--claim-lease` (active within it) and `--roster-window` (listed within it). */
export interface RosterTimes {
  leaseMs: number;
  windowMs: number;
}

/** A holder's identity as a map key. */
/** Every live record of a range, page by page, up to `max`. */
export async function listAll(store: VersionedStore, range: KeyRange, max = MAX_RECORDS): Promise<Array<[string, Entry]>> {
  const out: Array<[string, Entry]> = [];
  let after: string | undefined;
  for (;;) {
    const limit = Math.min(1000, max - out.length);
    if (limit <= 0) break;
    const { entries } = await store.list({ ...range, ...(after !== undefined ? { after } : {}), limit });
    out.push(...entries);
    if (entries.length < limit) break;
    after = entries[entries.length - 1][0];
  }
  return out;
}

/** What a sign of life says of its holder's status at `now`. */
export function statusOf(sign: PresenceRecord, now: number, times: RosterTimes): RosterStatus {
  if (sign.gone !== undefined && sign.gone >= sign.lastSeen) return 'gone';
  if (now - sign.lastSeen > times.windowMs) return 'gone';
  return now - sign.lastSeen <= times.leaseMs ? 'active' : 'idle';
}

/**
 * Signs of life within the window, by holder id (unreadable records are left out, never fatal to a listing): all of
 * the namespace's, or those of `range` (one thread's, `keys.presenceRange(thread)`).
 */
export async function readSigns(
  store: VersionedStore,
  keys: Keys,
  now: number,
  times: RosterTimes,
  range: KeyRange = keys.presenceRange(),
): Promise<Map<string, PresenceRecord>> {
  const signs = new Map<string, PresenceRecord>();
  for (const [, entry] of await listAll(store, range)) {
    const parsed = PresenceRecord.safeParse(entry.value);
    if (!parsed.success || now - parsed.data.lastSeen > times.windowMs) continue;
    signs.set(holderId(parsed.data), parsed.data);
  }
  return signs;
}

/** A claim on a plan step, as the roster judges it: who holds it, since when and for how long. */
export interface HeldClaim {
  planId: string;
  stepId: string;
  agent?: string;
  thread: string;
  at: number;
  leaseMs: number;
}

/** The claims of a stored plan's steps in progress, and the plan's status (undefined when the record is unreadable). */
export function claimsOfPlan(planId: string, value: unknown): { status: string; claims: HeldClaim[] } | undefined {
  const plan = PlanRecordSchema.safeParse(value);
  if (!plan.success) return undefined;
  const claims: HeldClaim[] = [];
  for (const step of plan.data.steps) {
    const claim = step.claim;
    if (!claim || step.status !== 'in_progress') continue;
    const { agent, thread, at, leaseMs } = claim;
    claims.push({ planId, stepId: step.id, ...(agent !== undefined ? { agent } : {}), thread, at, leaseMs });
  }
  return { status: plan.data.status, claims };
}

/**
 * The signs of life within the window of an agent name's threads or of a type's members, in the order of the whole
 * roster's, read from their copies (see `presence-index.ts`): `undefined` while signs of life written before the
 * copies began may still be within the window (read them all then, with {@link readSigns}).
 */
export async function readSignsBy(
  store: VersionedStore,
  keys: Keys,
  by: 'agent' | 'type',
  name: string,
  now: number,
  times: RosterTimes,
): Promise<PresenceRecord[] | undefined> {
  if (!(await copiesComplete(store, keys, times.windowMs))) return undefined;
  const signs: Array<{ key: string; sign: PresenceRecord }> = [];
  for (const [, entry] of await listAll(store, keys.presenceByRange(by, name))) {
    const parsed = PresenceRecord.safeParse(entry.value);
    if (!parsed.success || now - parsed.data.lastSeen > times.windowMs) continue;
    if ((by === 'agent' ? parsed.data.agent : parsed.data.agentType) !== name) continue;
    signs.push({ key: keys.presence(parsed.data.agent, parsed.data.thread), sign: parsed.data });
  }
  return signs.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0)).map(({ sign }) => sign);
}

/**
 * The roster: every holder seen within the window, most recently seen first, with its status and the plan steps it
 * holds by a live claim (a claim whose holder stopped is not shown as held, as the plan tools would lapse it).
 * `claims`: the claims of the plans in key order, when the caller keeps them (the board does); else the plans are read.
 */
export async function readRoster(store: VersionedStore, keys: Keys, times: RosterTimes, claims?: HeldClaim[]): Promise<RosterEntry[]> {
  const now = store.now();
  const signs = await readSigns(store, keys, now, times);
  const holding = new Map<string, Array<{ planId: string; stepId: string }>>();
  const all =
    claims ??
    (await listAll(store, keys.planRange())).flatMap(
      ([storage, entry]) => claimsOfPlan(storage.slice(keys.plan('').length), entry.value)?.claims ?? [],
    );
  for (const claim of all) {
    const id = holderId(claim);
    if (!claimAlive(claim.at, claim.leaseMs, signs.get(id), now)) continue;
    const held = holding.get(id);
    if (held) held.push({ planId: claim.planId, stepId: claim.stepId });
    else holding.set(id, [{ planId: claim.planId, stepId: claim.stepId }]);
  }
  const entries = [...signs.values()].sort((a, b) => b.lastSeen - a.lastSeen);
  return entries.map((sign) => ({
    ...(sign.agent !== undefined ? { agent: sign.agent } : {}),
    ...(sign.agentType !== undefined ? { agentType: sign.agentType } : {}),
    thread: sign.thread,
    ...(sign.client !== undefined ? { client: sign.client } : {}),
    lastSeen: new Date(sign.lastSeen).toISOString(),
    status: statusOf(sign, now, times),
    holding: holding.get(holderId(sign)) ?? [],
  }));
}

/** The roster name closest to `name` by edit distance (case and `_`/`-` ignored), for a NOT_FOUND's suggestion. */
export function nearestName(name: string, names: string[]): string | undefined {
  const norm = (s: string): string => s.toLowerCase().replace(/[_-]/g, '');
  let best: { name: string; distance: number } | undefined;
  for (const candidate of new Set(names)) {
    const distance = editDistance(norm(name), norm(candidate));
    if (!best || distance < best.distance) best = { name: candidate, distance };
  }
  return best?.name;
}
