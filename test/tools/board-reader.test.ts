import { afterEach, describe, expect, it } from 'vitest';
import { keysPage } from '../../src/ui/board-keys.js';
import { MAX_NAMESPACES, PlanClaims } from '../../src/ui/board-claims.js';
import { BoardReader, readOnlyView } from '../../src/ui/board-reader.js';
import { HOLDS_SHOWN } from '../../src/ui/board-status.js';
import { teamKeys } from '../../src/ui/layout.js';
import { TEAM_SHOWN } from '../../src/ui/board-team.js';
import { timeline } from '../../src/ui/board-timeline.js';
import { STEPS_SHOWN } from '../../src/ui/board-views.js';
import { MemoryBackend } from '../../src/store/memory/backend.js';
import { VersionedStore } from '../../src/store/versioned-store.js';
import { type Connected, connect, memoryStore } from '../helpers.js';

// The board's reads over a store that real MCP clients wrote: what threads are doing, keys a page at a time with
// search across scopes, and the timeline.
const open: Connected[] = [];
afterEach(async () => {
  for (const a of open.splice(0)) await a.close();
});

async function agent(store: ReturnType<typeof memoryStore>, agentName: string, thread: string): Promise<Connected> {
  const a = await connect({ store, identity: { agent: agentName, thread } });
  open.push(a);
  return a;
}

/**
 * Counts how often the claims kept for the board read a namespace's plans whole: each such read starts by reading the
 * store's revision (a catch-up from the change feed does not).
 */
function countWholeReads(store: VersionedStore): { reads: number } {
  const whole = { reads: 0 };
  const revision = store.revision.bind(store);
  store.revision = async () => {
    whole.reads++;
    return revision();
  };
  return whole;
}

/**
 * Ten messages more than the team section shows: the first 5, from `brief`, expire after 2 s; the others, from `lead`,
 * are kept for the default week.
 */
async function sendHiddenTen(store: VersionedStore): Promise<{ brief: Connected; lead: Connected }> {
  const brief = await connect({ store, identity: { agent: 'brief', thread: 'tb' }, config: { messageRetentionSeconds: 2 } });
  open.push(brief);
  const lead = await agent(store, 'lead', 'tl');
  await lead.ok('whoami');
  for (let i = 0; i < 5; i++) await brief.ok('message_send', { to: 'lead', content: `short ${i}` });
  for (let i = 0; i < TEAM_SHOWN.messages + 5; i++) await lead.ok('message_send', { to: 'brief', content: `kept ${i}` });
  return { brief, lead };
}

describe('the board reader', () => {
  it('shows the team only once someone is on the roster: status, held step, unread, and the newest messages, bounded', async () => {
    const store = memoryStore();
    const reader = new BoardReader(readOnlyView(store));
    expect((await reader.board('-', ['plans', 'threads'])).team).toBeUndefined();
    // more agents than the board shows: the most recently seen are shown, all are counted
    const pause = () => new Promise((resolve) => setTimeout(resolve, 20));
    for (let i = 0; i < TEAM_SHOWN.agents; i++) {
      await (await agent(store, `x${i}`, `tx${i}`)).ok('whoami');
      if (i === 0) await pause(); // x0 is seen strictly least recently
    }
    await pause();
    const lead = await agent(store, 'lead', 'tl');
    const worker = await agent(store, 'w1', 't1');
    const { planId } = await lead.ok('plan_create', { title: 'P', steps: ['a', 'b'] });
    await worker.ok('plan_claim', { planId, stepId: 's2' });
    const total = TEAM_SHOWN.messages + 3;
    for (let i = 1; i <= total; i++) await lead.ok('message_send', { to: 'w1', content: `m${i}` });
    await lead.ok('message_send', { to: 'ghost', content: 'kept', waitForRecipient: true });
    const { team } = await reader.board('-', ['threads']);
    expect(team?.rosterTotal).toBe(TEAM_SHOWN.agents + 2);
    expect(team?.roster).toHaveLength(TEAM_SHOWN.agents);
    const byName = new Map(team?.roster.map((a) => [a.agent, a]));
    expect(byName.get('w1')).toMatchObject({ thread: 't1', status: 'active', holding: [{ planId, stepId: 's2' }], unread: total });
    expect(byName.get('lead')).toMatchObject({ status: 'active', holding: [], unread: 0 });
    expect(byName.has('x0')).toBe(false); // seen least recently: counted, not shown
    // the newest messages, oldest first; the earlier ones counted
    expect(team?.messages).toHaveLength(TEAM_SHOWN.messages);
    expect(team?.messagesHidden).toBe(total + 1 - TEAM_SHOWN.messages);
    expect(team?.messages.at(-1)).toMatchObject({ from: 'lead', to: 'ghost', content: 'kept', recipients: [], awaiting: 'ghost' });
    expect(team?.messages.at(-2)).toMatchObject({ to: 'w1', content: `m${total}`, recipients: [{ agent: 'w1', thread: 't1' }] });
    // a read of the keys alone leaves the team out
    expect((await reader.board('-', ['scopes'])).team).toBeUndefined();
  });

  it("derives a thread's activity from its claims, calls and answer; a claim-only worker is a thread", async () => {
    const store = memoryStore();
    const planner = await agent(store, 'planner', 'plan-thread');
    const worker = await agent(store, 'w1', 'worker-thread');
    const done = await agent(store, 'w2', 'done-thread');
    const { planId } = await planner.ok('plan_create', { title: 'P', steps: ['a', 'b'] });
    await worker.ok('plan_claim', { planId });
    await done.ok('final_answer_set', { content: 'finished' });
    await planner.ok('agent_state_set', { state: 'running' });
    await planner.ok('agent_state_set', { state: 'awaiting_user_input' });
    const board = await new BoardReader(readOnlyView(store)).board('-', ['threads']);
    const byId = Object.fromEntries((board.threads ?? []).map((t) => [t.thread, t]));
    expect(byId['worker-thread']).toMatchObject({ activity: 'working', agent: 'w1', holds: [{ planId, step: 's1' }] });
    expect(byId['done-thread'].activity).toBe('done');
    expect(byId['plan-thread'].activity).toBe('needs input');
    expect(board.plans).toBeUndefined(); // read for the claims, not shown
  });

  it("lists at most HOLDS_SHOWN of a thread's held steps and counts the others, with or without the claims kept current", async () => {
    const store = memoryStore();
    const planner = await agent(store, 'planner', 'plan-thread');
    const worker = await agent(store, 'w1', 'worker-thread');
    const held = HOLDS_SHOWN + 5;
    const { planId } = await planner.ok('plan_create', { title: 'P', steps: Array.from({ length: held + 1 }, (_, i) => `step ${i}`) });
    for (let i = 1; i <= held; i++) await worker.ok('plan_claim', { planId, stepId: `s${i}` });
    const source = readOnlyView(store);
    for (const reader of [new BoardReader(source), new BoardReader(source, undefined, new PlanClaims(source))]) {
      const board = await reader.board('-', ['plans', 'threads']);
      const thread = board.threads?.find((t) => t.thread === 'worker-thread');
      expect(thread?.holds?.map((h) => h.step)).toEqual(Array.from({ length: HOLDS_SHOWN }, (_, i) => `s${i + 1}`));
      expect(thread?.holdsHidden).toBe(5);
      // the leases they show are the plans'
      const claims = new Map(board.plans?.[0].steps.map((step) => [step.id, step.claim?.leaseUntil]));
      for (const h of thread?.holds ?? []) expect(h.leaseUntil).toBe(claims.get(h.step));
      expect(board.team?.roster.find((a) => a.agent === 'w1')?.holding).toHaveLength(held);
    }
  });

  it('keeps the claims of a bounded number of namespaces, the least recently asked dropped first', async () => {
    const store = memoryStore();
    const planner = await connect({ store, config: { namespace: 'n1' }, identity: { agent: 'planner', thread: 'tp' } });
    open.push(planner);
    const { planId } = await planner.ok('plan_create', { title: 'P', steps: ['a'] });
    await planner.ok('plan_claim', { planId });
    const whole = countWholeReads(store);
    const claims = new PlanClaims(readOnlyView(store));
    // any namespace name a page asks for, holding records or not
    for (let i = 0; i < MAX_NAMESPACES; i++) await claims.plans(`n${i}`);
    expect(whole.reads).toBe(MAX_NAMESPACES);
    await claims.plans('n0'); // kept: n1 is now the least recently asked
    await claims.plans(`n${MAX_NAMESPACES}`);
    expect(whole.reads).toBe(MAX_NAMESPACES + 1);
    await claims.plans('n0');
    expect(whole.reads).toBe(MAX_NAMESPACES + 1);
    // n1's were dropped: read whole again, with its claim
    expect((await claims.plans('n1')).map((p) => p.claims.map((c) => c.stepId))).toEqual([['s1']]);
    expect(whole.reads).toBe(MAX_NAMESPACES + 2);
  });

  it("follows the change feed from its last look even while a namespace's plans do not change", async () => {
    // the change log keeps entries for 200 ms
    const store = new VersionedStore(new MemoryBackend(), { sweepIntervalMs: 0, changeRetentionMs: 200 });
    const worker = await agent(store, 'w1', 't1');
    const { planId } = await worker.ok('plan_create', { title: 'P', steps: ['a'] });
    await worker.ok('plan_claim', { planId });
    const whole = countWholeReads(store);
    const claims = new PlanClaims(readOnlyView(store));
    await claims.plans('-');
    // other writes, then a look that finds no plan changed
    for (let i = 0; i < 5; i++) await worker.ok('state_set', { key: `k${i}`, value: i });
    await claims.plans('-');
    expect(whole.reads).toBe(1);
    // the change log loses those writes: nothing the claims need was in it, so they are not read whole again
    await new Promise((r) => setTimeout(r, 300));
    await store.sweep();
    expect((await claims.plans('-')).map((p) => p.planId)).toEqual([planId]);
    expect(whole.reads).toBe(1);
  });

  it('counts the earlier messages it hides by reading only those sent since the last read, until one expires', async () => {
    const store = memoryStore();
    const { lead } = await sendHiddenTen(store);
    // the messages the board reads, counted at the store
    const messages = teamKeys('-').messageRange();
    let messagesRead = 0;
    const list = store.list.bind(store);
    store.list = async (query) => {
      const page = await list(query);
      messagesRead += page.entries.filter(([key]) => key >= messages.lo && key < messages.hi).length;
      return page;
    };
    const reader = new BoardReader(readOnlyView(store));
    const hidden = async (): Promise<number | undefined> => (await reader.board('-', ['threads'])).team?.messagesHidden;
    expect(await hidden()).toBe(10);
    messagesRead = 0;
    expect(await hidden()).toBe(10);
    expect(messagesRead).toBe(TEAM_SHOWN.messages); // the ones shown, none of the hidden ones again
    await lead.ok('message_send', { to: 'brief', content: 'one more' });
    messagesRead = 0;
    expect(await hidden()).toBe(11);
    expect(messagesRead).toBe(TEAM_SHOWN.messages + 1);
    // once the first sender's messages expire they are no longer counted
    await new Promise((r) => setTimeout(r, 2100));
    expect(await hidden()).toBe(6);
  });

  it('counts again the earlier messages a namespace import brought back', async () => {
    // another store, where the same numbers hold messages kept for the default week
    const elsewhere = await agent(memoryStore(), 'lead', 'tl');
    await elsewhere.ok('whoami');
    for (let i = 0; i < TEAM_SHOWN.messages + 10; i++) await elsewhere.ok('message_send', { to: 'lead', content: `kept ${i}` });
    const { doc } = await elsewhere.bb.services.bundles.exportNamespace();
    // here the first 5 expire after 2 s
    const store = memoryStore();
    const { lead } = await sendHiddenTen(store);
    const reader = new BoardReader(readOnlyView(store));
    const hidden = async (): Promise<number | undefined> => (await reader.board('-', ['threads'])).team?.messagesHidden;
    expect(await hidden()).toBe(10);
    await new Promise((r) => setTimeout(r, 2100));
    expect(await hidden()).toBe(5);
    // the import puts the other store's messages 1 to 50 in their places: all 10 earlier ones are kept again
    await lead.bb.services.bundles.import(doc, { replace: true });
    expect((await new BoardReader(readOnlyView(store)).board('-', ['threads'])).team?.messagesHidden).toBe(10);
    expect(await hidden()).toBe(10);
  });

  it('shows a bounded number of steps however large the plans, finished ones left out first, and counts them all', async () => {
    const store = memoryStore();
    const lead = await agent(store, 'lead', 'tl');
    const worker = await agent(store, 'w1', 't1');
    // 12 plans of 200 steps with 1,000-character texts: 4.8 MB of steps, were they all shown
    const text = (i: number) => `${'x'.repeat(995)}${String(i).padStart(5, '0')}`;
    const ids: string[] = [];
    for (let p = 0; p < 12; p++) {
      const steps = Array.from({ length: 200 }, (_, i) => ({
        content: text(i),
        note: text(i),
        ...(p === 0 && i < 150 ? { status: 'completed' } : {}),
      }));
      ids.push((await lead.ok('plan_create', { title: `plan ${p}`, steps })).planId);
    }
    // a claim on a step the board leaves out is still shown as held
    await worker.ok('plan_claim', { planId: ids[5], stepId: 's200' });
    const board = await new BoardReader(readOnlyView(store)).board('-', ['plans', 'threads']);
    const plans = board.plans ?? [];
    expect(plans).toHaveLength(12);
    const shown = plans.reduce((n, p) => n + p.steps.length, 0);
    expect(shown).toBe(STEPS_SHOWN.total);
    for (const p of plans) {
      expect(p.steps.length).toBeLessThanOrEqual(STEPS_SHOWN.plan);
      expect(p.stepCounts?.total).toBe(200);
    }
    expect(Buffer.byteLength(JSON.stringify(board))).toBeLessThan(STEPS_SHOWN.total * 2200 + 100_000);
    // the plan with 150 steps done shows its 50 open steps and the last of the finished ones, in plan order
    const first = plans.find((p) => p.planId === ids[0])!;
    expect(first.stepCounts).toEqual({ total: 200, done: 150 });
    const open = first.steps.filter((s) => s.status !== 'completed');
    expect(open.map((s) => s.id)).toEqual(Array.from({ length: 50 }, (_, i) => `s${151 + i}`));
    const finished = first.steps.filter((s) => s.status === 'completed').map((s) => s.id);
    expect(finished.at(-1)).toBe('s150');
    expect(first.steps.map((s) => s.id)).toEqual([...finished, ...open.map((s) => s.id)]);
    const held = plans.find((p) => p.planId === ids[5])!;
    expect(held.steps.some((s) => s.id === 's200')).toBe(false);
    expect(board.threads?.find((t) => t.thread === 't1')?.holds).toEqual([expect.objectContaining({ planId: ids[5], step: 's200' })]);
    expect(board.team?.roster.find((a) => a.agent === 'w1')?.holding).toEqual([{ planId: ids[5], stepId: 's200' }]);
  });

  it('makes views of only the most recently changed keys when asked for a few (board_show), counting them all', async () => {
    const store = memoryStore();
    const a = await agent(store, 'writer', 't1');
    const pause = () => new Promise((resolve) => setTimeout(resolve, 20));
    await a.ok('state_batch', {
      ops: Array.from({ length: 30 }, (_, i) => ({ op: 'set', key: `k${i}`, value: { text: 'v'.repeat(5000) } })),
    });
    await pause();
    await a.ok('state_set', { key: 'late', value: 1, scope: 'thread:other' });
    await pause();
    await a.ok('state_set', { key: 'k3', value: 'again' });
    const view = await new BoardReader(readOnlyView(store)).board('-', ['scopes'], { recentKeys: 2 });
    expect(view.keysTotal).toBe(31);
    expect(view.scopes?.map((s) => [s.scope, s.keys.map((k) => k.key)])).toEqual([
      ['global', ['k3']],
      ['thread:other', ['late']],
    ]);
    // without the option, every key (the browser's read of the keys section)
    expect((await new BoardReader(readOnlyView(store)).board('-', ['scopes'])).scopes?.flatMap((s) => s.keys)).toHaveLength(31);
  });

  it('pages keys across scopes with search and counts, and lists recent changes with who and when', async () => {
    const store = memoryStore();
    const a = await agent(store, 'writer', 't1');
    const ops = Array.from({ length: 30 }, (_, i) => ({
      op: 'set',
      key: `k${String(i).padStart(2, '0')}`,
      value: i,
      scope: i < 20 ? 'global' : 'thread:other',
    }));
    await a.ok('state_batch', { ops });
    await a.ok('state_set', { key: 'needle', value: 'in a haystack', scope: 'thread:other' });
    const source = readOnlyView(store);
    const first = await keysPage(source, '-', { limit: 10 });
    expect(first).toMatchObject({ total: 31, matched: 31, offset: 0, truncated: false });
    expect(first.keys).toHaveLength(10);
    expect(first.scopes).toEqual([
      { scope: 'global', keys: 20 },
      { scope: 'thread:other', keys: 11 },
    ]);
    const last = await keysPage(source, '-', { limit: 10, offset: 30 });
    expect(last.keys.map((k) => k.key)).toHaveLength(1);
    // search matches scope, key or value; every word must match
    expect((await keysPage(source, '-', { q: 'HAYSTACK' })).keys.map((k) => `${k.scope}/${k.key}`)).toEqual(['thread:other/needle']);
    expect((await keysPage(source, '-', { q: 'other k2' })).matched).toBe(10);
    expect((await keysPage(source, '-', { scope: 'global' })).matched).toBe(20);

    await a.ok('state_set', { key: 'k00', value: 'changed' });
    const recent = await timeline(source, '-', 3);
    expect(recent.items.map((c) => c.what)).toEqual(['global/k00', 'thread:other/needle', expect.stringMatching(/^thread:other\/k\d\d$/)]);
    expect(recent.items[0]).toMatchObject({ kind: 'key', version: 2, deleted: false, by: 'writer' });
    const one = await timeline(source, '-', 10, { scope: 'global', key: 'k00' });
    expect(one.items.map((c) => [c.version, c.by ?? 'replaced'])).toEqual([
      [2, 'writer'],
      [1, 'replaced'],
    ]);
  });
});
