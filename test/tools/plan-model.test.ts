// A model-based test of plan editing while agents hold claims: seeded random plan_create, plan_claim (the next step or
// a named one, some in concurrent pairs), plan_step (with right, stale and foreign fences), plan_update (title, status,
// stepUpdates of text, note, blockers, owner and status, whole-list replaces that add, drop, reorder and re-text steps,
// with current and stale ifVersion) and plan_delete, by a planner and two workers — one a child process on a shared
// backend — speaking 2025-11-25 and 2026-07-28. A simple model of each plan says what every call must answer; after
// every call the stored plan (read by any client) is the model's: statuses, owners, holders and fences, blockers, notes,
// version, done/total. The rules held: a step has at most one holder and is done at most once by plan_step; a late
// holder is told CLAIM_LOST (its step reassigned) or NOT_FOUND (its step removed) and changes nothing; `unblocked` is
// exactly the pending steps whose last blocker finished; a stale ifVersion and every refusal change nothing; an update
// that changes nothing keeps the version; a deleted plan is gone for everyone; no claim goes to a blocked step.
import { describe, expect, it } from 'vitest';
import { MemoryBackend } from '../../src/store/memory/backend.js';
import { openBackend } from '../../src/store/open.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { agentsClosedAfterEach, spawnAgent, type Agent, type ToolError } from '../helpers.js';
import { closedAfterEachTest, rng } from '../model.js';
import { sharedStores } from '../stores.js';

const connect = agentsClosedAfterEach();
const closing = closedAfterEachTest();

// `BLACKBOARD_PLAN_MODEL=full`: 5 seeds of 800 operations per backend; by default one (BLACKBOARD_PLAN_SEED) of 400
const FULL = process.env.BLACKBOARD_PLAN_MODEL === 'full';
const SEEDS = FULL ? [1, 2, 3, 4, 5] : [Number(process.env.BLACKBOARD_PLAN_SEED ?? 1)];
const OPS = FULL ? 800 : 400;

// biome-ignore lint/suspicious/noExplicitAny: replies read field by field
type Body = Record<string, any>;
type Reply = { ok: Body } | { err: ToolError };
type Want = { ok: Body } | { err: { code: string; details?: Body } };

const ACTORS = ['p', 'w1', 'w2'] as const;
type Actor = (typeof ACTORS)[number];
const THREAD: Record<Actor, string> = { p: 'TP', w1: 'T1', w2: 'T2' };
type Status = 'pending' | 'in_progress' | 'completed' | 'skipped' | 'blocked';

interface MStep {
  id: string;
  content: string;
  status: Status;
  owner?: string;
  blockedBy?: string[];
  note?: string;
  /** the live claim: its holder and fence */
  holder?: Actor;
  fence?: number;
  /** holders whose claim was taken by a reassignment, with its fence: their moves of the step are CLAIM_LOST */
  lost: Partial<Record<Actor, number>>;
}
interface MPlan {
  planId: string;
  title: string;
  status: 'active' | 'completed' | 'abandoned';
  version: number;
  fence: number;
  next: number;
  steps: MStep[];
}
type Item = string | { id?: string; content: string; blockedBy?: string[]; status?: Status };
type Change = { id: string; content?: string; status?: Status; owner?: string; blockedBy?: string[]; note?: string };
type Op =
  | { kind: 'claim'; who: Actor; planId: string; stepId?: string }
  | { kind: 'step'; who: Actor; planId: string; stepId: string; status: Status; note?: string; fence?: number }
  | { kind: 'edit'; who: Actor; planId: string; ifVersion?: number; change: Change }
  | { kind: 'replace'; who: Actor; planId: string; ifVersion: number; steps: Item[] }
  | { kind: 'meta'; who: Actor; planId: string; ifVersion?: number; title?: string; status?: MPlan['status'] }
  | { kind: 'delete'; who: Actor; planId: string; ifVersion?: number };

const finished = (s: { status: string } | undefined): boolean => s?.status === 'completed' || s?.status === 'skipped';
class Refused extends Error {
  constructor(
    readonly code: string,
    readonly details?: Body,
  ) {
    super(code);
  }
}
const refuse = (code: string, details?: Body): never => {
  throw new Refused(code, details);
};
const who = (a: Actor) => ({ agent: a, thread: THREAD[a] });

/** The pending steps (free or someone's) all of whose blockers are finished now and were not all finished before. */
function unblockedOf(before: Map<string, Status>, plan: MPlan): string[] {
  const byId = new Map(plan.steps.map((s) => [s.id, s]));
  return plan.steps
    .filter((s) => s.status === 'pending' && (s.blockedBy?.length ?? 0) > 0)
    .filter(
      (s) => s.blockedBy!.every((b) => finished(byId.get(b))) && !s.blockedBy!.every((b) => finished({ status: before.get(b) ?? '' })),
    )
    .map((s) => s.id);
}

/** Whether `a` may move `step` (README, Holders and fences): `holder`, or `free`; CLAIM_LOST or FORBIDDEN otherwise. */
function mover(step: MStep, a: Actor, fence?: number): 'holder' | 'free' {
  const claimLost = () =>
    refuse('CLAIM_LOST', {
      stepId: step.id,
      holder: step.holder ? who(step.holder) : null,
      fence: step.holder ? step.fence : null,
    });
  if (step.holder === a) return fence === undefined || fence === step.fence ? 'holder' : claimLost();
  const ended = step.lost[a] !== undefined && (fence === undefined || step.lost[a]! >= fence);
  if (step.holder && ended) return claimLost();
  if (step.holder) return refuse('FORBIDDEN', { stepId: step.id, holder: who(step.holder), fence: step.fence });
  if (ended || fence !== undefined) return claimLost();
  return 'free';
}

function grant(plan: MPlan, step: MStep, a: Actor): void {
  plan.fence += 1;
  Object.assign(step, { holder: a, fence: plan.fence, owner: a, status: 'in_progress' });
}

/** No step may start or complete (by this call) while a blocker of it is unfinished. */
function checkStarts(plan: MPlan, before: Map<string, Status>): void {
  const byId = new Map(plan.steps.map((s) => [s.id, s]));
  for (const s of plan.steps) {
    if ((s.status !== 'in_progress' && s.status !== 'completed') || before.get(s.id) === s.status) continue;
    if ((s.blockedBy ?? []).some((b) => !finished(byId.get(b)))) refuse('INVALID_TRANSITION');
  }
}

const counts = (plan: MPlan) => ({ done: plan.steps.filter(finished).length, total: plan.steps.length });
const stateOf = (plan: MPlan): string => JSON.stringify({ ...plan, version: 0 });

/** What `op` must answer on `plan` (changed in place when it succeeds; `undefined`: no such plan). */
function predict(plan: MPlan | undefined, op: Op): { want: Want; deleted?: boolean } {
  try {
    if (!plan) return refuse('NOT_FOUND');
    const a = op.who;
    const before = new Map(plan.steps.map((s) => [s.id, s.status]));
    const find = (id: string) => plan.steps.find((s) => s.id === id) ?? refuse('NOT_FOUND');
    if (op.kind === 'claim') {
      if (plan.status !== 'active') refuse('INVALID_TRANSITION');
      const byId = new Map(plan.steps.map((s) => [s.id, s]));
      const waiting = (s: MStep) => (s.blockedBy ?? []).some((b) => !finished(byId.get(b)));
      const mine = (s: MStep) => s.owner === undefined || s.owner === a;
      let step: MStep | undefined;
      if (op.stepId !== undefined) {
        step = find(op.stepId);
        if (step.holder === a) return { want: { ok: { claimed: true, step: step.id, fence: step.fence } } };
        if (!finished(step) && (step.status === 'in_progress' || !mine(step)))
          return { want: { ok: { claimed: false, step: step.id, reason: 'taken' } } };
        if (step.status !== 'pending' || waiting(step)) refuse('INVALID_TRANSITION');
      } else {
        step = plan.steps.find((s) => s.status === 'pending' && mine(s) && !waiting(s));
        if (!step) {
          const open = plan.steps.filter((s) => !finished(s));
          const blocked = open.some((s) => s.status === 'blocked' || (s.status === 'pending' && mine(s)));
          return { want: { ok: { claimed: false, reason: open.length === 0 ? 'all_done' : blocked ? 'all_blocked' : 'all_taken' } } };
        }
      }
      grant(plan, step, a);
      plan.version += 1;
      return { want: { ok: { claimed: true, step: step.id, fence: plan.fence } } };
    }
    if (op.kind === 'step') {
      const step = find(op.stepId);
      const m = mover(step, a, op.fence);
      if (finished(step) && !(step.status === op.status && step.owner === a)) refuse('INVALID_TRANSITION');
      if (m !== 'holder' && step.owner !== undefined && step.owner !== a && (step.status === 'in_progress' || op.status !== 'pending'))
        refuse('FORBIDDEN');
      if (op.status === 'in_progress') {
        if (m !== 'holder') {
          if (step.status !== 'pending') refuse('INVALID_TRANSITION');
          grant(plan, step, a);
        }
      } else {
        Object.assign(step, { holder: undefined, fence: undefined, status: op.status });
        if (op.status === 'pending') delete step.owner;
        else step.owner = a;
        delete step.lost[a];
      }
      if (op.note !== undefined) step.note = op.note;
      checkStarts(plan, before);
      plan.version += 1;
      const s = { id: step.id, status: step.status, owner: step.owner };
      return { want: { ok: { version: plan.version, step: s, ...counts(plan), unblocked: unblockedOf(before, plan) } } };
    }
    if (op.kind === 'delete') {
      if (op.ifVersion !== undefined && op.ifVersion !== plan.version) refuse('VERSION_CONFLICT', { currentVersion: plan.version });
      const theirs = plan.steps.filter(
        (s) => (s.holder && s.holder !== a) || (s.status === 'completed' && s.owner !== undefined && s.owner !== a),
      );
      if (theirs.length > 0) refuse('INVALID_TRANSITION', { planId: plan.planId, steps: theirs.map((s) => s.id) });
      return { want: { ok: { deleted: true } }, deleted: true };
    }
    // plan_update
    if (op.ifVersion !== undefined && op.ifVersion !== plan.version) refuse('VERSION_CONFLICT', { currentVersion: plan.version });
    const was = stateOf(plan);
    const changed = new Set<string>();
    let removed: string[] | undefined;
    if (op.kind === 'meta') {
      if (op.title !== undefined) plan.title = op.title;
      if (op.status !== undefined) plan.status = op.status;
    } else if (op.kind === 'replace') {
      const old = new Map(plan.steps.map((s) => [s.id, s]));
      const used = new Set<string>();
      const out: MStep[] = op.steps.map((input) => {
        const item = typeof input === 'string' ? { content: input } : input;
        const match = item.id !== undefined ? old.get(item.id)! : plan.steps.find((s) => !used.has(s.id) && s.content === item.content);
        if (!match) {
          const step: MStep = { id: `s${plan.next++}`, content: item.content, status: item.status ?? 'pending', lost: {} };
          if (item.blockedBy?.length) step.blockedBy = item.blockedBy;
          return step;
        }
        used.add(match.id);
        const step: MStep = { ...structuredClone(match), content: item.content };
        if (item.blockedBy !== undefined) step.blockedBy = item.blockedBy;
        return step;
      });
      for (const s of out) {
        if (s.blockedBy && used.has(s.id)) s.blockedBy = s.blockedBy.filter((b) => out.some((o) => o.id === b));
        if (s.blockedBy?.length === 0) delete s.blockedBy;
      }
      const dropped = plan.steps.filter((s) => !used.has(s.id) && (s.status === 'in_progress' || s.status === 'completed'));
      if (dropped.length > 0) refuse('INVALID_ARGUMENT', { steps: dropped.map((s) => s.id), path: 'steps' });
      for (const s of out) {
        const w = old.get(s.id);
        if (w && w.content === s.content && `${w.blockedBy ?? []}` === `${s.blockedBy ?? []}`) continue;
        if (w?.holder && w.holder !== a) mover(w, a);
        changed.add(s.id);
      }
      for (const s of out) if (s.status === 'in_progress' && !old.has(s.id)) grant(plan, s, a);
      removed = [...old.keys()].filter((id) => !out.some((s) => s.id === id));
      plan.steps = out;
    } else {
      const c = op.change;
      const step = find(c.id);
      const reassign = c.owner !== undefined;
      const revoking = step.holder !== undefined && step.holder !== a && reassign;
      const moving = !reassign && c.status !== undefined && c.status !== step.status;
      const renote = c.note !== undefined && c.note !== (step.note ?? '');
      if (finished(step) && step.owner !== undefined && step.owner !== a && (moving || reassign || renote)) refuse('INVALID_TRANSITION');
      if (!revoking) mover(step, a);
      // a reassignment puts the step back to pending for its new owner: a step the caller holds itself too, unless
      // given to itself (README: "the step goes back to pending for that owner")
      const releasing = step.holder === a && reassign && c.owner !== a;
      if (revoking || releasing) {
        if (revoking) step.lost[step.holder!] = step.fence!;
        Object.assign(step, { holder: undefined, fence: undefined });
        if (step.status === 'in_progress') step.status = 'pending';
      }
      const wasStatus = step.status;
      if (c.content !== undefined) step.content = c.content;
      if (c.status !== undefined) step.status = c.status;
      if (c.owner === '') delete step.owner;
      else if (c.owner !== undefined) step.owner = c.owner;
      if (c.note === '') delete step.note;
      else if (c.note !== undefined) step.note = c.note;
      if (c.blockedBy?.length === 0) delete step.blockedBy;
      else if (c.blockedBy !== undefined) step.blockedBy = c.blockedBy;
      if (step.status !== wasStatus) {
        if (step.status === 'in_progress') grant(plan, step, a);
        else Object.assign(step, { holder: undefined, fence: undefined });
        // (a step finished here keeps the owner it had, none for a free one; plan_step records its finisher)
        if (step.status === 'pending' && !reassign) delete step.owner;
        if (reassign && c.owner !== '') step.owner = c.owner;
      }
      changed.add(step.id);
    }
    checkStarts(plan, before);
    if (stateOf(plan) !== was) plan.version += 1;
    const reply = {
      version: plan.version,
      status: plan.status,
      changed: plan.steps.filter((s) => changed.has(s.id)).map((s) => s.id),
      ...(removed?.length ? { removed } : {}),
      ...counts(plan),
      unblocked: unblockedOf(before, plan),
    };
    return { want: { ok: reply } };
  } catch (e) {
    if (e instanceof Refused) return { want: { err: { code: e.code, ...(e.details ? { details: e.details } : {}) } } };
    throw e;
  }
}

/** The part of a reply the model predicts. */
function shapeOf(op: Op, reply: Reply): Want {
  if ('err' in reply) return { err: { code: reply.err.code, ...(reply.err.details ? { details: reply.err.details } : {}) } };
  const b = reply.ok;
  if (op.kind === 'claim')
    return {
      ok: {
        claimed: b.claimed,
        ...(b.step ? { step: b.step.id } : {}),
        ...(b.claim ? { fence: b.claim.fence } : {}),
        ...(b.reason ? { reason: b.reason } : {}),
      },
    };
  if (op.kind === 'step') {
    const { version, step, done, total, unblocked } = b;
    return { ok: { version, step: { id: step.id, status: step.status, owner: step.owner }, done, total, unblocked } };
  }
  if (op.kind === 'delete') return { ok: b };
  const { version, status, changed, removed, done, total, unblocked } = b;
  return { ok: { version, status, changed: changed.map((s: Body) => s.id), ...(removed ? { removed } : {}), done, total, unblocked } };
}

/** Whether a reply is what the model wants: an error's details only where the model names them. */
function fits(got: Want, want: Want): boolean {
  if ('ok' in want) return 'ok' in got && JSON.stringify(got.ok) === JSON.stringify(JSON.parse(JSON.stringify(want.ok)));
  if (!('err' in got) || got.err.code !== want.err.code) return false;
  return Object.entries(want.err.details ?? {}).every(([k, v]) => JSON.stringify(got.err.details?.[k]) === JSON.stringify(v));
}

const stores: Array<{ name: string; fresh?: () => string }> = [{ name: 'memory' }, ...sharedStores()];

describe.each(stores.map((s) => [s.name, s] as const))('plan editing under claims against a model on %s', (_name, spec) => {
  it.each(SEEDS)('seed %i: every reply and the stored plan are the model’s', async (seed) => {
    console.log(`plan model: seed ${seed} on ${spec.name} (replay: BLACKBOARD_PLAN_SEED=${seed})`);
    const r = rng(seed);
    const int = (n: number) => Math.floor(r() * n);
    const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
    const chance = (p: number) => r() < p;
    const log: string[] = [];
    const note = (line: string) => {
      log.push(line);
      if (log.length > 40) log.shift();
    };
    const fail = (what: string): never => {
      throw new Error(`seed ${seed} on ${spec.name}: ${what}\n--- last operations:\n${log.join('\n')}`);
    };

    // p (the planner) in this process speaks 2025-11-25; w1 in this process 2026-07-28; w2 a child process (2026)
    // on a shared backend, in this process (2025) on memory://
    const url = spec.fresh?.();
    const open = async () => {
      const store = new VersionedStore(url ? await openBackend(url) : new MemoryBackend(), { sweepIntervalMs: 0 });
      closing.push(() => store.close());
      return store;
    };
    const shared = await open();
    const clients = {} as Record<Actor, Agent>;
    clients.p = await connect({ store: shared, era: 'legacy', config: { agent: 'p', thread: THREAD.p } });
    clients.w1 = await connect({ store: url ? await open() : shared, era: 'modern', config: { agent: 'w1', thread: THREAD.w1 } });
    if (url) {
      const w2 = await spawnAgent(['--store', url, '--agent', 'w2', '--thread', THREAD.w2], {}, undefined, 'modern');
      closing.push(() => w2.close());
      clients.w2 = w2;
    } else clients.w2 = await connect({ store: shared, era: 'legacy', config: { agent: 'w2', thread: THREAD.w2 } });

    const call = async (a: Actor, name: string, args: Body): Promise<Reply> => {
      const result = await clients[a].raw(name, args);
      const text = (result.content[0] as { text: string }).text;
      if (result.isError) return { err: (JSON.parse(text) as { error: ToolError }).error };
      expect(JSON.parse(text)).toEqual(result.structuredContent);
      return { ok: result.structuredContent as Body };
    };
    const argsOf = (op: Op): [string, Body] => {
      const { kind, who: _w, ...rest } = op;
      if (kind === 'edit') {
        const { change, ...others } = rest as { change: Change };
        return ['plan_update', { ...others, stepUpdates: [change] }];
      }
      const tool = { claim: 'plan_claim', step: 'plan_step', replace: 'plan_update', meta: 'plan_update', delete: 'plan_delete' }[kind];
      return [tool, rest];
    };

    const plans = new Map<string, MPlan>();
    const seen = new Map<string, number>(); // how often each kind of operation got each answer
    const gone: string[] = []; // deleted plans
    const removedIds = new Map<string, string[]>();
    let texts = 0;
    const text = () => `t${++texts}`;

    const create = async (a: Actor) => {
      const n = 2 + int(6);
      const steps: Item[] = [];
      for (let i = 0; i < n; i++) {
        const earlier = Array.from({ length: i }, (_, j) => `s${j + 1}`).filter(() => chance(0.25));
        steps.push(earlier.length > 0 ? { content: text(), blockedBy: earlier } : text());
      }
      const reply = await call(a, 'plan_create', { title: text(), steps });
      if (!('ok' in reply)) return fail(`plan_create failed: ${JSON.stringify(reply)}`);
      const { planId, version } = reply.ok;
      const model: MPlan = { planId, title: '', status: 'active', version, fence: 0, next: n + 1, steps: [] };
      model.steps = steps.map((s, i) => {
        const item = typeof s === 'string' ? { content: s } : s;
        return {
          id: `s${i + 1}`,
          content: item.content,
          status: 'pending',
          ...(item.blockedBy ? { blockedBy: item.blockedBy } : {}),
          lost: {},
        };
      });
      model.title = (await clients.p.ok('plan_get', { planId })).plan.title;
      expect(reply.ok).toMatchObject({ stepIds: model.steps.map((s) => s.id), ...counts(model) });
      plans.set(planId, model);
      removedIds.set(planId, []);
      note(`${a} created ${planId}: ${JSON.stringify(steps)}`);
    };

    /** The stored plan, read by any client, is the model's; a deleted one is NOT_FOUND for every client. */
    const verify = async (planId: string, what: string) => {
      const model = plans.get(planId);
      if (!model) {
        for (const a of ACTORS) {
          const got = await call(a, 'plan_get', { planId });
          if (!('err' in got) || got.err.code !== 'NOT_FOUND') fail(`${what}: deleted ${planId} is still there for ${a}`);
        }
        return;
      }
      const got = await call(pick(ACTORS), 'plan_get', { planId, detail: 'full' });
      if (!('ok' in got)) return fail(`${what}: plan_get failed: ${JSON.stringify(got)}`);
      const p = got.ok.plan;
      const stored = {
        title: p.title,
        status: p.status,
        version: p.version,
        done: p.done,
        total: p.total,
        steps: p.steps.map((s: Body) => ({
          id: s.id,
          content: s.content,
          status: s.status,
          owner: s.owner,
          blockedBy: s.blockedBy,
          note: s.note,
          claim: s.claim ? { thread: s.claim.thread, fence: s.claim.fence } : undefined,
        })),
      };
      const want = {
        title: model.title,
        status: model.status,
        version: model.version,
        ...counts(model),
        steps: model.steps.map((s) => ({
          id: s.id,
          content: s.content,
          status: s.status,
          owner: s.owner,
          blockedBy: s.blockedBy,
          note: s.note,
          claim: s.holder ? { thread: THREAD[s.holder], fence: s.fence } : undefined,
        })),
      };
      if (JSON.stringify(stored) !== JSON.stringify(want))
        fail(`${what}: the stored plan is not the model's\n  stored ${JSON.stringify(stored)}\n  model  ${JSON.stringify(want)}`);
      // whatever the model says: a held step is in progress, and a step in progress is held (by one holder)
      for (const s of p.steps) {
        if (s.claim && s.status !== 'in_progress') fail(`${what}: ${s.id} is held but ${s.status}`);
        if (s.status === 'in_progress' && !s.claim) fail(`${what}: ${s.id} is in progress with no holder`);
      }
    };

    const randomOp = (): Op => {
      const a = pick(ACTORS);
      const alive = [...plans.values()];
      const planId = alive.length === 0 || (gone.length > 0 && chance(0.05)) ? pick(gone) : pick(alive).planId;
      const plan = plans.get(planId);
      const steps = plan?.steps ?? [];
      const held = steps.filter((s) => s.holder === a || s.lost[a] !== undefined);
      const stepId = (): string => {
        const removed = removedIds.get(planId) ?? [];
        if (removed.length > 0 && chance(0.1)) return pick(removed);
        if (held.length > 0 && chance(0.6)) return pick(held).id;
        return steps.length > 0 ? pick(steps).id : 's1';
      };
      const version = plan?.version ?? 1;
      const ifVersion = () => (chance(0.15) ? Math.max(1, version - 1 - int(3)) : version);
      /** blockers for step `id`: only steps of a lower number, so never a cycle */
      const blockers = (id: string) => {
        const n = Number(id.slice(1));
        return steps.filter((s) => Number(s.id.slice(1)) < n && chance(0.3)).map((s) => s.id);
      };
      const roll = r();
      const worker = a !== 'p';
      if (roll < (worker ? 0.3 : 0.1)) return { kind: 'claim', who: a, planId, ...(chance(0.3) ? { stepId: stepId() } : {}) };
      if (roll < (worker ? 0.7 : 0.25)) {
        const id = stepId();
        const mine = steps.find((s) => s.id === id);
        const fence = chance(0.6) ? undefined : mine?.holder === a && chance(0.6) ? mine.fence : Math.max(1, (plan?.fence ?? 1) - int(3));
        const status = pick(['completed', 'completed', 'skipped', 'pending', 'in_progress'] as const);
        return {
          kind: 'step',
          who: a,
          planId,
          stepId: id,
          status,
          ...(chance(0.3) ? { note: pick(['', text()]) } : {}),
          ...(fence ? { fence } : {}),
        };
      }
      if (roll < (worker ? 0.85 : 0.6)) {
        const id = stepId();
        const change: Change = { id };
        const current = steps.find((s) => s.id === id);
        if (chance(0.3)) change.content = chance(0.2) && current ? current.content : text();
        if (chance(0.3)) change.note = pick(['', text(), current?.note ?? '']);
        if (chance(0.25)) change.blockedBy = blockers(id);
        if (chance(0.35)) change.owner = pick(['', 'w1', 'w2', 'p', 'ghost']);
        if (chance(0.35)) change.status = pick(['pending', 'in_progress', 'completed', 'skipped', 'blocked'] as const);
        return { kind: 'edit', who: a, planId, ...(chance(0.5) ? { ifVersion: ifVersion() } : {}), change };
      }
      if (roll < (worker ? 0.9 : 0.8)) {
        const items: Item[] = [];
        const kept = steps.filter((s) => !finished(s) || s.status === 'completed' || chance(0.7)).filter(() => chance(0.85));
        const order = chance(0.3) ? kept.sort(() => r() - 0.5) : kept;
        for (const s of order) {
          const content = chance(0.15) ? text() : s.content;
          if (content === s.content && chance(0.3)) items.push(content);
          else items.push({ id: s.id, content, ...(chance(0.2) ? { blockedBy: blockers(s.id) } : {}) });
        }
        for (let i = int(3); i > 0; i--) {
          const on = kept.filter(() => chance(0.3)).map((s) => s.id);
          items.splice(int(items.length + 1), 0, {
            content: text(),
            ...(on.length ? { blockedBy: on } : {}),
            ...(chance(0.1) ? { status: 'skipped' as const } : {}),
          });
        }
        return { kind: 'replace', who: a, planId, ifVersion: ifVersion(), steps: items };
      }
      if (roll < 0.95) {
        const title = chance(0.5) && plan ? plan.title : text();
        return {
          kind: 'meta',
          who: a,
          planId,
          ...(chance(0.5) ? { ifVersion: ifVersion() } : {}),
          title,
          ...(chance(0.3) ? { status: pick(['active', 'active', 'active', 'completed', 'abandoned'] as const) } : {}),
        };
      }
      return { kind: 'delete', who: a, planId, ...(chance(0.5) ? { ifVersion: ifVersion() } : {}) };
    };

    await create('p');
    for (let i = 0; i < OPS; i++) {
      if (plans.size === 0 || (plans.size < 2 && chance(0.03))) await create(pick(ACTORS));
      const op = randomOp();
      // now and then the two workers claim the next step of one plan at once: their replies are those of some order
      if (op.kind === 'claim' && op.stepId === undefined && chance(0.3)) {
        const ops: Op[] = (['w1', 'w2'] as const).map((w) => ({ kind: 'claim', who: w, planId: op.planId }));
        const replies = await Promise.all(ops.map((o) => call(o.who, ...argsOf(o))));
        note(`w1, w2 at once: claim ${op.planId} → ${replies.map((x) => JSON.stringify(shapeOf(ops[0], x))).join(' | ')}`);
        const orders = [
          [0, 1],
          [1, 0],
        ].map((order) => {
          const model = structuredClone(plans.get(op.planId));
          const wants = new Map(order.map((k) => [k, predict(model, ops[k]).want]));
          return { model, fits: ops.every((o, k) => fits(shapeOf(o, replies[k]), wants.get(k)!)) };
        });
        const order = orders.find((o) => o.fits) ?? fail('concurrent claims: no order of them gives these replies');
        if (order.model) plans.set(op.planId, order.model);
        const got = replies.filter((x) => 'ok' in x && x.ok.claimed).map((x) => ('ok' in x ? x.ok.step.id : ''));
        if (got.length === 2 && got[0] === got[1]) fail(`two holders of ${got[0]}`);
        await verify(op.planId, `step ${i}`);
        continue;
      }
      const model = structuredClone(plans.get(op.planId));
      const { want, deleted } = predict(model, op);
      const reply = await call(op.who, ...argsOf(op));
      const got = shapeOf(op, reply);
      note(`${i} ${JSON.stringify(op)} → ${JSON.stringify(got)}`);
      const outcome = `${op.kind} ${'err' in got ? got.err.code : op.kind === 'claim' ? (got.ok.reason ?? 'claimed') : 'ok'}`;
      seen.set(outcome, (seen.get(outcome) ?? 0) + 1);
      if (!fits(got, want)) fail(`step ${i}: ${JSON.stringify(op)}\n  got  ${JSON.stringify(reply)}\n  want ${JSON.stringify(want)}`);
      // the rules again, from the reply alone: no claim of a step with an unfinished blocker; no step done twice
      const was = plans.get(op.planId);
      if ('ok' in reply && op.kind === 'claim' && reply.ok.claimed && was) {
        const byId = new Map(was.steps.map((s) => [s.id, s]));
        const step = byId.get(reply.ok.step.id);
        // (a claim of a step the caller holds already is its claim as it stands, blockers added since or not)
        if (step?.holder !== op.who && (step?.blockedBy ?? []).some((b) => !finished(byId.get(b))))
          fail(`${step?.id} claimed while blocked`);
      }
      // a plan_step that finishes a step finds it open, or finished already by the caller as it reports it again
      if ('ok' in reply && op.kind === 'step' && finished(reply.ok.step) && was) {
        const before = was.steps.find((s) => s.id === op.stepId);
        if (finished(before) && (before?.owner !== op.who || before?.status !== reply.ok.step.status))
          fail(`${op.planId} ${op.stepId} done twice: ${before?.status} by ${before?.owner}, then ${reply.ok.step.status} by ${op.who}`);
      }
      if (model && 'ok' in want) {
        if (deleted) {
          plans.delete(op.planId);
          gone.push(op.planId);
        } else {
          const before = plans.get(op.planId)!;
          const ids = new Set(model.steps.map((s) => s.id));
          removedIds.get(op.planId)!.push(...before.steps.filter((s) => !ids.has(s.id)).map((s) => s.id));
          plans.set(op.planId, model);
        }
      }
      await verify(op.planId, `step ${i} (${op.kind} by ${op.who})`);
    }
    console.log(
      `plan model: seed ${seed} on ${spec.name}: ${[...seen]
        .sort()
        .map(([k, n]) => `${k} ×${n}`)
        .join(', ')}`,
    );
  });
});
