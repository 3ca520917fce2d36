// A model-based test of plan claims: seeded random claims, step moves, notes, reassignments and bursts by workers in
// this process and in two child processes sharing one store, some going silent or killed with SIGKILL (and started
// again) so their claims lapse under a 1 s lease. After every operation the replies and the stored plan are held to
// the rules: one holder per step, a lapsed and superseded holder is refused (CLAIM_LOST) and changes nothing, a silent
// holder's step is free again within the lease (with a generous margin), every step is finished exactly once, and a
// reply never says a write happened that did not, or the reverse.
import { describe, expect, it } from 'vitest';
import { openBackend } from '../../src/store/open.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { agentsClosedAfterEach, sleep, spawnAgent, type Agent, type ToolError } from '../helpers.js';
import { closedAfterEachTest, rng } from '../model.js';
import { sharedStores } from '../stores.js';

const connect = agentsClosedAfterEach();
const closing = closedAfterEachTest();

// `BLACKBOARD_CLAIMS_MODEL=full`: 3 seeds of 30 s of operations per backend; by default one of 8 s (BLACKBOARD_CLAIMS_SEED)
const FULL = process.env.BLACKBOARD_CLAIMS_MODEL === 'full';
const SEEDS = FULL ? [1, 2, 3] : [Number(process.env.BLACKBOARD_CLAIMS_SEED ?? 1)];
const RUN_MS = FULL ? 30_000 : 8_000;
const LEASE_MS = 1000;
/** min(5 s, lease / 4): how often a sign of life is written, and how far past the lease a claim may live */
const INTERVAL_MS = 250;
/** How late past lease + interval a silent holder's claim may still be seen alive (slow machines; no tight timing). */
const MARGIN_MS = 1500;
/** How long before the lease ends a claim may already be seen lapsed (a sign of life written late under load). */
const SLACK_MS = 300;
/**
 * A reply waits for its sign of life at most half a second: one slower than that may have come back before its sign
 * of life was written (a store slowed by a busy machine), and until it is, the claim can already be seen lapsed.
 */
const UNSURE_REPLY_MS = 450;
/** How long after such a reply its sign of life is surely written. */
const UNSURE_FOR_MS = 2000;
const STEPS = 8;

// biome-ignore lint/suspicious/noExplicitAny: tests read results field by field
type Body = Record<string, any>;
type Reply = { ok: true; body: Body; t0: number; t1: number } | { ok: false; error: ToolError; t0: number; t1: number };

interface Worker {
  name: string;
  thread: string;
  spawned: boolean;
  agent?: Agent & { kill?: () => void };
  /** when its last successful call was sent, and when its reply came (bounds of its last sign of life) */
  lastSend: number;
  lastDone: number;
  /** until when a slow reply's sign of life may still be unwritten (see UNSURE_REPLY_MS) */
  unsureUntil?: number;
  /** not calling until then (silent), or killed and started again then */
  quietUntil: number;
  dead: boolean;
  /** back from a silence or a restart: it first reports the work it had (the late write the fence is for) */
  returning?: boolean;
  /** its process being started again */
  starting?: Promise<void>;
}

interface MStep {
  id: string;
  blockedBy: string[];
  done?: { by: string; status: 'completed' | 'skipped' };
  /**
   * the step's latest grant, until given back, finished or reassigned; `lapsed` once known to have lapsed, `maybe`
   * when its holder was silent for about a lease since (it may have lapsed, and stays so once it has)
   */
  holder?: { w: number; fence: number; lapsed?: boolean; maybe?: boolean };
  /** set by a reassignment: pending for this owner */
  assigned?: string;
  /** workers whose claim ended (lapsed or reassigned) and went to another since: their moves are CLAIM_LOST */
  superseded: Set<number>;
  /** every fence granted on the step, by worker */
  fences: Map<number, number[]>;
  attempts: number;
  note?: string;
}

interface MPlan {
  planId: string;
  steps: MStep[];
  version: number;
  maxFence: number;
}

describe.each(sharedStores().map((s) => [s.name, s] as const))('plan claims against a model on %s', (_name, shared) => {
  it.each(SEEDS)(
    'seed %i: one holder per step, fenced late writes, lapses within the lease, every step done once',
    async (seed) => {
      const r = rng(seed);
      const int = (n: number): number => Math.floor(r() * n);
      const chance = (p: number): boolean => r() < p;
      const pick = <T>(xs: readonly T[]): T => xs[int(xs.length)];
      const url = shared.fresh();
      const log: string[] = [];
      const note = (line: string): void => {
        log.push(`${(Date.now() - started) / 1000}s ${line}`);
        if (log.length > 60) log.shift();
      };
      const fail = (what: string): never => {
        throw new Error(`${what}\n--- last operations:\n${log.join('\n')}`);
      };
      const check = (ok: boolean, what: string): void => {
        if (!ok) fail(what);
      };
      const started = Date.now();

      const inProcess = async (name: string, thread: string): Promise<Agent> => {
        const store = new VersionedStore(await openBackend(url), { sweepIntervalMs: 0 });
        closing.push(() => store.close());
        return connect({ store, config: { agent: name, thread, claimLeaseSeconds: LEASE_MS / 1000 } });
      };
      const spawnWorker = async (w: Worker): Promise<void> => {
        const a = await spawnAgent(['--store', url, '--agent', w.name, '--thread', w.thread, '--claim-lease', String(LEASE_MS / 1000)]);
        closing.push(() => a.close());
        w.agent = a;
      };
      const planner = await inProcess('planner', 't-planner');
      const workers: Worker[] = ['w0', 'w1', 'w2', 'w3'].map((name, i) => ({
        name,
        thread: `t-${name}`,
        spawned: i >= 2,
        lastSend: 0,
        lastDone: 0,
        quietUntil: 0,
        dead: false,
      }));
      for (const w of workers) {
        if (w.spawned) await spawnWorker(w);
        else w.agent = await inProcess(w.name, w.thread);
      }

      /** One tool call: the reply (its text and structured content checked equal), and when it was sent and came back. */
      const call = async (agent: Agent, name: string, args: Record<string, unknown>): Promise<Reply> => {
        const t0 = Date.now();
        const result = await agent.raw(name, args);
        const t1 = Date.now();
        const text = (result.content[0] as { text: string }).text;
        if (result.isError) {
          const { error } = JSON.parse(text) as { error: ToolError };
          return { ok: false, error, t0, t1 };
        }
        expect(JSON.parse(text)).toEqual(result.structuredContent);
        return { ok: true, body: result.structuredContent as Body, t0, t1 };
      };
      const work = async (i: number, name: string, args: Record<string, unknown>): Promise<Reply> => {
        const w = workers[i];
        const reply = await call(w.agent!, name, args);
        // a failed call is no sign of life; a successful one after a silence of about a lease or more starts a new
        // stretch of life, and the claims granted before it stay lapsed
        if (reply.ok) {
          const surely = reply.t0 > w.lastDone + LEASE_MS + INTERVAL_MS + MARGIN_MS;
          const maybe = reply.t1 > w.lastSend + LEASE_MS - SLACK_MS;
          for (const p of plans)
            for (const s of p.steps) {
              if (s.holder?.w !== i) continue;
              if (surely) s.holder.lapsed = true;
              else if (maybe) s.holder.maybe = true;
            }
          w.lastSend = reply.t0;
          w.lastDone = reply.t1;
          if (reply.t1 - reply.t0 >= UNSURE_REPLY_MS) w.unsureUntil = reply.t1 + UNSURE_FOR_MS;
        }
        note(
          `${w.name} ${name} ${JSON.stringify(args)} → ${reply.ok ? JSON.stringify(reply.body) : `${reply.error.code}: ${reply.error.message}`}`,
        );
        return reply;
      };

      // a holder's claim between t0 and t1 (an operation's send and reply): surely alive, surely lapsed, or either
      const surelyAlive = (w: number, t0: number, t1: number): boolean =>
        t1 < workers[w].lastSend + LEASE_MS - SLACK_MS && t0 > (workers[w].unsureUntil ?? 0);
      const surelyLapsed = (w: number, t0: number): boolean => t0 > workers[w].lastDone + LEASE_MS + INTERVAL_MS + MARGIN_MS;
      /** Whether the claim on `s` is alive, lapsed, or could be either, for an operation between t0 and t1. */
      const life = (s: MStep, t0: number, t1: number): 'alive' | 'lapsed' | 'either' => {
        const h = s.holder!;
        if (h.lapsed || surelyLapsed(h.w, t0)) return 'lapsed';
        return !h.maybe && surelyAlive(h.w, t0, t1) ? 'alive' : 'either';
      };
      const isDone = (p: MPlan, id: string): boolean => p.steps.find((s) => s.id === id)!.done !== undefined;
      const blockersDone = (p: MPlan, s: MStep): boolean => s.blockedBy.every((b) => isDone(p, b));
      const stats = {
        grants: 0,
        lapses: 0,
        takeovers: 0,
        fenced: 0,
        retaken: 0,
        kills: 0,
        silences: 0,
        bursts: 0,
        reassigned: 0,
        finished: 0,
      };

      const plans: MPlan[] = [];
      const newPlan = async (): Promise<MPlan> => {
        const steps = Array.from({ length: STEPS }, (_, i) => {
          const blockedBy = i > 0 && chance(0.3) ? [`s${1 + int(i)}`] : [];
          return { content: `step ${i + 1} of plan ${plans.length + 1}`, ...(blockedBy.length > 0 ? { blockedBy } : {}) };
        });
        const created = await planner.ok('plan_create', { title: `model ${plans.length + 1}`, steps });
        const plan: MPlan = {
          planId: created.planId,
          version: created.version,
          maxFence: 0,
          steps: steps.map((s, i) => ({
            id: `s${i + 1}`,
            blockedBy: s.blockedBy ?? [],
            superseded: new Set(),
            fences: new Map(),
            attempts: 0,
          })),
        };
        plans.push(plan);
        note(`planner created ${plan.planId}`);
        return plan;
      };

      /** The stored plan (as the planner reads it) against the model; `unchanged`: an operation that must have written nothing. */
      const observe = async (p: MPlan, t0: number, what: string, unchanged = false): Promise<void> => {
        const { plan } = await planner.ok('plan_get', { planId: p.planId, detail: 'full' });
        const t1 = Date.now();
        if (unchanged)
          check(plan.version === p.version, `${what}: refused, yet the plan went from version ${p.version} to ${plan.version}`);
        check(plan.version >= p.version, `${what}: the plan's version went back`);
        p.version = plan.version;
        const done = p.steps.filter((s) => s.done).length;
        check(plan.done === done && plan.total === STEPS, `${what}: plan counts ${plan.done}/${plan.total}, model ${done}/${STEPS}`);
        for (const s of p.steps) {
          const got = plan.steps.find((x: { id: string }) => x.id === s.id);
          const where = `${what}: ${p.planId} ${s.id} is ${JSON.stringify(got)}`;
          check((got.attempts ?? 0) >= s.attempts, `${where}: its attempts went down from ${s.attempts}`);
          s.attempts = got.attempts ?? 0;
          if (s.note !== undefined) check(got.note === s.note, `${where}: its note should be ${JSON.stringify(s.note)}`);
          if (s.done) {
            check(
              got.status === s.done.status && got.owner === s.done.by && !got.claim,
              `${where}: it was ${s.done.status} by ${s.done.by}`,
            );
            continue;
          }
          const held = got.status === 'in_progress';
          const free = got.status === 'pending' && got.owner === s.assigned && !got.claim;
          if (s.holder) {
            const h = workers[s.holder.w];
            const asHeld =
              held && got.owner === h.name && got.claim?.thread === h.thread && got.claim?.fence === s.holder.fence && !s.assigned;
            const now = life(s, t0, t1);
            if (now === 'alive') check(asHeld, `${where}: ${h.name} holds it (fence ${s.holder.fence}), alive`);
            else if (now === 'lapsed') {
              check(
                free,
                `${where}: ${h.name}'s claim (fence ${s.holder.fence}) should have lapsed (last call ${(h.lastDone - started) / 1000}s)`,
              );
            } else check(asHeld || free, `${where}: ${h.name} holds it (fence ${s.holder.fence}) or it lapsed`);
            // a lapse is for good: the holder takes the step back only by a write
            if (free && !s.holder.lapsed) stats.lapses++;
            if (free) s.holder.lapsed = true;
          } else check(free, `${where}: nobody holds it${s.assigned ? `; it is pending for ${s.assigned}` : ''}`);
        }
      };

      /** A claim granted to worker `i` (fence `fence`) on `s` between t0 and t1: it had to be free for the taking. */
      const granted = (p: MPlan, i: number, s: MStep, fence: number, t0: number, t1: number, what: string): void => {
        check(!s.done, `${what}: granted ${s.id}, which was already ${s.done?.status} by ${s.done?.by}`);
        check(blockersDone(p, s), `${what}: granted ${s.id}, blocked by unfinished ${s.blockedBy}`);
        check(s.assigned === undefined || s.assigned === workers[i].name, `${what}: granted ${s.id}, pending for ${s.assigned}`);
        stats.grants++;
        if (s.holder && s.holder.w !== i) {
          const was = life(s, t0, t1);
          check(was !== 'alive', `${what}: granted ${s.id} while ${workers[s.holder.w].name} held it and was alive: two holders`);
          s.superseded.add(s.holder.w);
          if (was === 'lapsed') stats.takeovers++;
        }
        if (s.holder?.w === i && fence === s.holder.fence) {
          // its own claim, still current (or taken back)
        } else {
          check(fence > p.maxFence, `${what}: fence ${fence} is not above the plan's latest ${p.maxFence}`);
          p.maxFence = fence;
          s.fences.set(i, [...(s.fences.get(i) ?? []), fence]);
        }
        s.holder = { w: i, fence };
        s.superseded.delete(i);
        s.assigned = undefined;
      };

      /** What `plan_claim` may answer `claimed: false` with: nothing surely free for worker `i`. */
      const surelyFree = (p: MPlan, i: number, s: MStep, t0: number): boolean =>
        !s.done &&
        blockersDone(p, s) &&
        (s.assigned === undefined || s.assigned === workers[i].name) &&
        (s.holder === undefined || life(s, t0, t0) === 'lapsed');

      const claim = async (p: MPlan, i: number, stepId?: string): Promise<void> => {
        const what = `${workers[i].name} plan_claim ${stepId ?? ''}`;
        const reply = await work(i, 'plan_claim', { planId: p.planId, ...(stepId ? { stepId } : {}) });
        await settleClaim(p, i, stepId, reply, what);
        await observe(p, reply.t0, what, !reply.ok);
      };
      const settleClaim = async (p: MPlan, i: number, stepId: string | undefined, reply: Reply, what: string): Promise<void> => {
        if (!reply.ok) {
          // a named step that is not pending (finished) is INVALID_TRANSITION, a blocked one too; nothing else
          const s = stepId ? p.steps.find((x) => x.id === stepId)! : undefined;
          check(
            reply.error.code === 'INVALID_TRANSITION' && s !== undefined && (s.done !== undefined || !blockersDone(p, s)),
            `${what}: refused ${reply.error.code}`,
          );
          return;
        }
        const body = reply.body;
        if (body.claimed) {
          const s = p.steps.find((x) => x.id === body.step.id)!;
          check(stepId === undefined || s.id === stepId, `${what}: granted ${s.id}`);
          check(body.step.status === 'in_progress' && body.step.owner === workers[i].name, `${what}: the step in the reply is not its`);
          granted(p, i, s, body.claim.fence, reply.t0, reply.t1, what);
        } else if (body.reason === 'all_done') {
          check(
            p.steps.every((s) => s.done),
            `${what}: all_done with steps open`,
          );
        } else {
          const targets = stepId ? p.steps.filter((s) => s.id === stepId) : p.steps;
          const free = targets.filter((s) => surelyFree(p, i, s, reply.t0));
          check(free.length === 0, `${what}: claimed nothing (${body.reason}) though ${free.map((s) => s.id)} was free to take`);
          if (stepId) {
            const s = targets[0];
            check(body.reason === 'taken' && !s.done, `${what}: ${body.reason} on ${s.id}`);
            check(s.holder?.w !== i || life(s, reply.t0, reply.t1) === 'either', `${what}: taken, though it holds ${s.id} itself`);
          }
        }
      };

      /** `plan_step` (or a note through plan_update) by worker `i` on `s`. */
      const move = async (p: MPlan, i: number, s: MStep, status: string, fence?: number): Promise<void> => {
        const w = workers[i];
        const what = `${w.name} plan_step ${s.id} ${status}${fence ? ` fence ${fence}` : ''}`;
        const before = { holder: s.holder, done: s.done };
        const mine = s.holder?.w === i;
        const lost = s.superseded.has(i);
        const staleFence = fence !== undefined && !(mine && fence === s.holder!.fence);
        const reply = await work(i, 'plan_step', { planId: p.planId, stepId: s.id, status, ...(fence ? { fence } : {}) });
        if (!reply.ok) {
          const { code, message } = reply.error;
          check(/Nothing was changed/.test(message) || code === 'INVALID_TRANSITION', `${what}: ${code} without "Nothing was changed"`);
          // the holder of the step's latest grant, its fence right (or none), moves an open step whether its claim lapsed or not
          check(!(mine && !staleFence && !s.done), `${what}: refused ${code}, yet it holds the step's latest grant`);
          if (lost || staleFence) {
            check(code === 'CLAIM_LOST' || (s.done !== undefined && code === 'INVALID_TRANSITION'), `${what}: ${code}, not CLAIM_LOST`);
            if (code === 'CLAIM_LOST') stats.fenced++;
          } else if (s.done) check(code === 'INVALID_TRANSITION' || code === 'CLAIM_LOST', `${what}: ${code} on a finished step`);
          else check(['FORBIDDEN', 'CLAIM_LOST', 'INVALID_TRANSITION'].includes(code), `${what}: ${code}`);
          if (code === 'FORBIDDEN' && s.holder && !s.assigned)
            check(life(s, reply.t0, reply.t1) !== 'lapsed', `${what}: FORBIDDEN by a holder whose claim lapsed`);
          if (code === 'INVALID_TRANSITION' && !s.done) check(!blockersDone(p, s) && status !== 'pending', `${what}: ${code}`);
          return observe(p, reply.t0, what, true);
        }
        const got = reply.body.step;
        check(got.id === s.id && got.status === status, `${what}: the reply's step is ${JSON.stringify(got)}`);
        check(reply.body.version > p.version, `${what}: succeeded without a new version`);
        // the fence: a superseded holder, or a fence that is not the step's latest grant, never moves it
        check(!lost, `${what}: moved the step though its claim lapsed and went to another (fence breach)`);
        check(!staleFence, `${what}: moved the step with fence ${fence}, which is not its latest grant (${JSON.stringify(s.holder)})`);
        if (s.holder && !mine)
          check(life(s, reply.t0, reply.t1) !== 'alive', `${what}: moved a step ${workers[s.holder.w].name} holds, alive`);
        if (s.done) check(s.done.by === w.name && s.done.status === status, `${what}: finished twice (${s.done.status} by ${s.done.by})`);
        check(s.assigned === undefined || s.assigned === w.name || status === 'pending', `${what}: moved a step pending for ${s.assigned}`);
        if (mine && s.holder && life(s, reply.t0, reply.t1) === 'lapsed') stats.retaken++;
        if (status === 'in_progress') {
          check(got.owner === w.name && got.claim?.fence !== undefined, `${what}: no claim in the reply`);
          granted(p, i, s, got.claim.fence, reply.t0, reply.t1, what);
        } else if (status === 'pending') {
          check(got.owner === undefined, `${what}: given back, still owned by ${got.owner}`);
          s.assigned = undefined;
          // given back by another, a lapsed claim is still its holder's to take back
          if (s.holder && !mine) s.holder.lapsed = true;
          else s.holder = undefined;
        } else {
          if (s.holder && !mine) s.superseded.add(s.holder.w);
          s.holder = undefined;
          check(got.owner === w.name, `${what}: finished, owned by ${got.owner}`);
          if (!before.done) stats.finished++;
          s.done = { by: w.name, status: status as 'completed' | 'skipped' };
          s.assigned = undefined;
        }
        await observe(p, reply.t0, what);
      };

      const writeNote = async (p: MPlan, i: number, s: MStep): Promise<void> => {
        const w = workers[i];
        const text = `note ${int(1000)} by ${w.name}`;
        const what = `${w.name} note on ${s.id}`;
        const reply = await work(i, 'plan_update', { planId: p.planId, stepUpdates: [{ id: s.id, note: text }] });
        if (!reply.ok) {
          const { code } = reply.error;
          check(['CLAIM_LOST', 'FORBIDDEN', 'INVALID_TRANSITION'].includes(code), `${what}: ${code}`);
          check(!(s.holder?.w === i && !s.done), `${what}: refused ${code}, yet it holds the step's latest grant`);
          if (s.superseded.has(i) && !s.done) check(code === 'CLAIM_LOST', `${what}: ${code}, not CLAIM_LOST`);
          return observe(p, reply.t0, what, true);
        }
        check(!s.superseded.has(i), `${what}: a superseded holder's note landed`);
        check(!(s.done && s.done.by !== w.name), `${what}: a note landed on ${s.done?.by}'s finished step`);
        if (s.holder && s.holder.w !== i) {
          check(life(s, reply.t0, reply.t1) !== 'alive', `${what}: a note landed on a step ${workers[s.holder.w].name} holds, alive`);
          // it lapsed, and is still its holder's to take back
          s.holder.lapsed = true;
        }
        s.note = text;
        await observe(p, reply.t0, what);
      };

      const reassign = async (p: MPlan, s: MStep, to: number): Promise<void> => {
        const what = `planner reassigns ${s.id} to ${workers[to].name}`;
        const t0 = Date.now();
        const body = await planner.ok('plan_update', { planId: p.planId, stepUpdates: [{ id: s.id, owner: workers[to].name }] });
        note(`${what} → ${JSON.stringify(body)}`);
        // the old holder's next move of it is CLAIM_LOST, also when it is the new owner
        if (s.holder) s.superseded.add(s.holder.w);
        s.holder = undefined;
        s.assigned = workers[to].name;
        stats.reassigned++;
        await observe(p, t0, what);
      };

      const kill = async (i: number, midCall: boolean): Promise<void> => {
        const w = workers[i];
        const p = plans[plans.length - 1];
        stats.kills++;
        if (midCall) {
          // kill -9 while a claim is on its way: it may or may not have been granted
          const t0 = Date.now();
          const pending = w.agent!.raw('plan_claim', { planId: p.planId }).catch(() => undefined);
          await sleep(int(30));
          w.agent!.kill!();
          await pending;
          // its last sign of life may be this call, written up to now (and a moment more)
          w.lastDone = Date.now() + 300;
          await sleep(300);
          // what it was granted, if anything, is in the store
          const { plan } = await planner.ok('plan_get', { planId: p.planId, detail: 'full' });
          p.version = plan.version;
          for (const got of plan.steps) {
            const s = p.steps.find((x) => x.id === got.id)!;
            if (got.claim?.thread === w.thread && !(s.holder?.w === i && s.holder.fence === got.claim.fence)) {
              w.lastSend = t0;
              granted(p, i, s, got.claim.fence, t0, Date.now(), `${w.name} claim cut by kill -9`);
            }
          }
        } else w.agent!.kill!();
        note(`${w.name} killed with SIGKILL${midCall ? ' during plan_claim' : ''}`);
        w.dead = true;
        w.returning = true;
        w.quietUntil = Date.now() + 1500 + int(2500);
      };

      /** Every active worker claims at once: never one step to two of them. */
      const burst = async (active: number[]): Promise<void> => {
        stats.bursts++;
        const t0 = Date.now();
        const replies = await Promise.all(active.map((a) => work(a, 'plan_claim', { planId: plan.planId })));
        const steps = replies.filter((rp) => rp.ok && rp.body.claimed).map((rp) => (rp as { body: Body }).body.step.id);
        check(new Set(steps).size === steps.length, `burst: one step granted twice: ${steps}`);
        // the grants first, in fence order, then the answers that took nothing (the grants are in the model by then)
        const fenceOf = (k: number): number => (replies[k].ok && replies[k].body.claimed ? replies[k].body.claim.fence : Infinity);
        const order = [...replies.keys()].sort((a, b) => fenceOf(a) - fenceOf(b));
        for (const k of order) await settleClaim(plan, active[k], undefined, replies[k], `${workers[active[k]].name} plan_claim (burst)`);
        await observe(plan, t0, 'burst');
      };
      const script: Array<{ at: number; what: 'kill' | 'silent' | 'kill mid-call' | 'burst' }> = [
        { at: 0.1, what: 'kill' },
        { at: 0.2, what: 'silent' },
        { at: 0.4, what: 'kill mid-call' },
        { at: 0.6, what: 'burst' },
      ];
      let plan = await newPlan();
      let ops = 0;
      const running = Date.now();
      while (Date.now() - running < RUN_MS) {
        // a killed worker is started again (same agent and thread: the same holder) while the others go on
        for (const w of workers) {
          if (w.dead && !w.starting && Date.now() >= w.quietUntil) {
            w.starting = spawnWorker(w).then(() => {
              w.dead = false;
              w.starting = undefined;
              note(`${w.name} started again`);
            });
          }
        }
        const active = workers.map((_, i) => i).filter((i) => !workers[i].dead && Date.now() >= workers[i].quietUntil);
        if (active.length === 0) {
          await sleep(50);
          continue;
        }
        // a worker at work calls now and then (any call keeps its claims), so its claims are surely alive
        for (const a of active) {
          if (Date.now() - workers[a].lastDone < 400) continue;
          const reply = await work(a, 'state_get', { key: 'anything' });
          check(reply.ok, `${workers[a].name} state_get failed`);
        }
        ops++;
        if (plan.steps.every((s) => s.done)) plan = await newPlan();
        const p = chance(0.9) || plans.length === 1 ? plan : pick(plans);
        const i = pick(active);
        const w = workers[i];
        const open = p.steps.filter((s) => !s.done);
        const held = p.steps.filter((s) => s.holder?.w === i && !s.done);
        const lost = p.steps.filter((s) => s.superseded.has(i));
        const x = r();
        const late = [...held, ...lost];
        const lapsed = open.filter((s) => s.holder && s.holder.w !== i && life(s, Date.now(), Date.now()) === 'lapsed');
        const due = script.findIndex((e) => Date.now() - running >= e.at * RUN_MS);
        if (due >= 0) {
          // set pieces, so every run has them: a holder killed, a holder gone silent, a kill during a claim, a burst
          const [event] = script.splice(due, 1);
          // on an active worker (a child process for a kill), while another is active to take its step over
          const fit = active.filter((a) => event.what === 'burst' || event.what === 'silent' || workers[a].spawned);
          if (active.length < 2 || fit.length === 0) script.push({ ...event, at: event.at + 0.02 });
          else if (event.what === 'burst') await burst(active);
          else {
            const v = pick(fit);
            if (!plan.steps.some((s) => s.holder?.w === v && !s.done)) await claim(plan, v);
            if (event.what === 'silent') {
              workers[v].quietUntil = Date.now() + 4500; // past the lease and the margin, then some: others take its step
              workers[v].returning = true;
              stats.silences++;
              note(`${workers[v].name} goes silent for 4500 ms`);
            } else await kill(v, event.what === 'kill mid-call');
          }
        } else if (lapsed.length > 0 && chance(0.5)) {
          // a step whose holder surely lapsed must be free for the taking
          await claim(p, i, pick(lapsed).id);
        } else if (w.returning && late.length > 0) {
          w.returning = false;
          const s = pick(late);
          const fence = chance(0.5) ? s.fences.get(i)?.at(-1) : undefined;
          await move(p, i, s, pick(['completed', 'completed', 'skipped', 'pending', 'in_progress']), fence);
        } else if (x < 0.22) await claim(p, i);
        else if (x < 0.3) {
          // often a step another worker holds: it is not to be had while its holder is alive
          const others = open.filter((s) => s.holder && s.holder.w !== i);
          await claim(p, i, (others.length > 0 && chance(0.6) ? pick(others) : pick(p.steps)).id);
        } else if (x < 0.6 && held.length > 0) {
          const s = pick(held);
          const status = pick(['completed', 'completed', 'completed', 'skipped', 'pending', 'in_progress', 'in_progress']);
          const mineFences = s.fences.get(i) ?? [];
          const y = r();
          const fence = y < 0.5 ? s.holder!.fence : y < 0.6 && mineFences.length > 1 ? pick(mineFences.slice(0, -1)) : undefined;
          await move(p, i, s, status, fence);
        } else if (x < 0.68 && lost.length > 0) {
          // a late holder writes over work that is no longer its own
          const s = pick(lost);
          const fences = s.fences.get(i) ?? [];
          await move(
            p,
            i,
            s,
            pick(['completed', 'completed', 'skipped', 'pending', 'in_progress']),
            chance(0.5) ? fences.at(-1) : undefined,
          );
        } else if (x < 0.72) {
          // a step it does not hold, finished ones too: never finished twice, never taken from a live holder
          await move(p, i, pick(chance(0.5) && open.length > 0 ? open : p.steps), pick(['completed', 'skipped', 'in_progress', 'pending']));
        } else if (x < 0.79) await writeNote(p, i, pick(p.steps));
        else if (x < 0.83) {
          const reply = await work(i, 'state_get', { key: 'anything' });
          check(reply.ok, `${w.name} state_get failed`);
        } else if (x < 0.86) {
          w.quietUntil = Date.now() + 1000 + int(2500);
          w.returning = true;
          stats.silences++;
          note(`${w.name} goes silent for ${w.quietUntil - Date.now()} ms`);
        } else if (x < 0.88 && w.spawned && active.length > 2) await kill(i, chance(0.5));
        else if (x < 0.9) {
          const taken = open.filter((s) => s.holder && !s.done);
          if (taken.length > 0) await reassign(p, pick(taken), pick(active));
        } else if (x < 0.98 && active.length > 1) await burst(active);
      }

      // the end: every worker back, and the open steps finished by whoever takes them (silent holders' claims lapse)
      for (const w of workers) {
        if (w.dead && !w.starting) await spawnWorker(w);
        await w.starting;
        w.dead = false;
        w.quietUntil = 0;
      }
      const endBy = Date.now() + 20_000;
      for (const p of plans) {
        for (;;) {
          check(Date.now() < endBy, `the end: ${p.planId} is not finished within 20 s`);
          if (p.steps.every((s) => s.done)) break;
          let progress = false;
          for (const [i] of workers.entries()) {
            for (const s of p.steps.filter((x) => x.holder?.w === i && !x.done)) {
              await move(p, i, s, 'completed', s.holder!.fence);
              progress = true;
            }
            const assigned = p.steps.find((s) => s.assigned === workers[i].name && !s.done && blockersDone(p, s));
            await claim(p, i, assigned?.id);
          }
          if (!progress) await sleep(200);
        }
      }
      for (const p of plans) {
        await observe(p, Date.now(), 'the end');
        const { plan: got } = await planner.ok('plan_get', { planId: p.planId });
        check(got.done === STEPS, `the end: ${p.planId} has ${got.done} of ${STEPS} done`);
      }
      console.log(`seed ${seed} on ${_name}: ${ops} operations, ${plans.length} plans, ${JSON.stringify(stats)}`);
      // the run exercised what it is about
      expect(stats.finished).toBe(plans.length * STEPS);
      // late writes were fenced off and holders killed (how many lapses a plan_get happens to see between a silence and
      // the holder's return rides on the machine's timing, 0-4 a run, so it is reported above, not required)
      expect(stats.fenced).toBeGreaterThan(0);
      expect(stats.kills).toBeGreaterThan(0);
    },
    90_000,
  );
});
