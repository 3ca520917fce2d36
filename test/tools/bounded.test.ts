import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import { describe, expect, it } from 'vitest';
import { deepFreeze } from '../../src/store/frozen.js';
import { jsonBytes } from '../../src/store/json-text.js';
import { boundValue } from '../../src/tools/bounds.js';
import { BoardReader, readOnlyView } from '../../src/ui/board-reader.js';
import { agentsClosedAfterEach, memoryStore } from '../helpers.js';

// Replies that do not grow with the data: every default reply stays under about 16 KiB of text.
const agent = agentsClosedAfterEach();
const textOf = (r: CallToolResult): string => (r.content[0] as { text: string }).text;

describe('bounded replies', () => {
  it('a 900 KB value: state_get, watch and final_answer_get answer under 16 KiB with a preview, truncated and bytes', async () => {
    const a = await agent({ config: { thread: 'T' } });
    const big = 'é'.repeat(450_000); // 900,000 bytes of UTF-8
    await a.ok('state_set', { key: 'big', value: big });
    await a.ok('state_set', { key: 'obj', value: { rows: Array.from({ length: 20_000 }, (_, i) => ({ i, text: 'row' })) } });
    await a.ok('final_answer_set', { content: big, metadata: { notes: 'n'.repeat(5000) } });
    for (const [tool, args] of [
      ['state_get', { key: 'big' }],
      ['watch', { key: 'big' }],
      ['final_answer_get', {}],
      ['state_get', { key: 'obj' }],
    ] as const) {
      const reply = await a.raw(tool, args);
      expect(textOf(reply).length, tool).toBeLessThan(16 * 1024 + 512);
      expect(Buffer.byteLength(textOf(reply)), tool).toBeLessThan(17 * 1024 + 512);
    }
    const got = await a.ok('state_get', { key: 'big' });
    expect(got).toMatchObject({ found: true, version: 1, truncated: true, bytes: 900_002 });
    expect(big.startsWith((got.value as string).slice(0, -1))).toBe(true);
    const obj = await a.ok('state_get', { key: 'obj' });
    expect(obj.truncated).toBe(true);
    expect(typeof obj.value).toBe('string');
    expect((obj.value as string).startsWith('{"rows":[{"i":0,')).toBe(true);
    const whole = await a.ok('state_get', { key: 'big', maxBytes: 1024 * 1024 });
    expect(whole.value).toBe(big);
    expect(whole).not.toHaveProperty('truncated');
    const answer = await a.ok('final_answer_get', { maxBytes: 1000 });
    expect(answer.answer).toMatchObject({ truncated: true, bytes: 900_000 });
    expect(Buffer.byteLength(answer.answer.content)).toBeLessThanOrEqual(1000);
    expect(typeof answer.answer.metadata).toBe('string');
    expect((await a.err('state_get', { key: 'big', maxBytes: 2 * 1024 * 1024 })).details).toMatchObject({ path: 'maxBytes' });
  });

  it('a value whose JSON escapes double or sextuple its text still previews as much as maxBytes holds', async () => {
    const a = await agent();
    for (const [key, value, perChar] of [
      ['quotes', '"'.repeat(20_000), 2],
      ['controls', '\u0001'.repeat(10_000), 6],
      ['object', { text: '"'.repeat(20_000) }, 3],
    ] as const) {
      await a.ok('state_set', { key, value });
      for (const maxBytes of [1024, 16_384]) {
        const got = await a.ok('state_get', { key, maxBytes });
        expect(got.truncated, key).toBe(true);
        const size = Buffer.byteLength(JSON.stringify(got.value));
        expect(size, `${key} ${maxBytes}`).toBeLessThanOrEqual(maxBytes);
        expect(size, `${key} ${maxBytes}`).toBeGreaterThan(maxBytes - 2 * perChar - 16);
      }
    }
  });

  it('state_update and state_batch echo a new value up to 2 KiB: past it a preview with truncated and bytes, the stored value whole', async () => {
    const a = await agent();
    const message = (i: number) => ({ role: 'user', content: `${i}: ${'m'.repeat(290)}`, id: `m-${i}` });
    for (let i = 0; i < 60; i++) await a.ok('state_update', { key: 'messages', op: 'append', value: message(i) });
    const small = await a.ok('state_update', { key: 'n', op: 'increment', value: 2 });
    expect(small).toEqual({ value: 2, version: 1, revision: small.revision });
    const reply = await a.raw('state_update', { key: 'messages', op: 'append', value: message(60) });
    expect(Buffer.byteLength(textOf(reply))).toBeLessThan(2.5 * 1024);
    // Up to 2 KiB the new value comes back whole.
    const merged = await a.ok('state_update', { key: 'doc', op: 'merge', value: { a: 'x'.repeat(1900) } });
    expect(merged).toEqual({ value: { a: 'x'.repeat(1900) }, version: 1, revision: merged.revision });
    const over = await a.ok('state_update', { key: 'doc', op: 'merge', value: { b: 'y'.repeat(200) } });
    expect(over).toMatchObject({ version: 2, truncated: true, bytes: JSON.stringify({ a: 'x'.repeat(1900), b: 'y'.repeat(200) }).length });
    expect(Buffer.byteLength(JSON.stringify(over.value))).toBeLessThanOrEqual(2048);
    const grown = await a.ok('state_update', { key: 'messages', op: 'append', value: message(61) });
    const whole = await a.ok('state_get', { key: 'messages', maxBytes: 1024 * 1024 });
    expect(whole.value).toHaveLength(62);
    expect(grown).toMatchObject({ version: 62, truncated: true, bytes: Buffer.byteLength(JSON.stringify(whole.value)) });
    expect(JSON.stringify(whole.value).startsWith((grown.value as string).slice(0, -1))).toBe(true);
    // A batch of updates shares one reply's worth: a value larger than its share (at least 256 bytes), or than an
    // update's echo (2 KiB), is left out.
    const ops = Array.from({ length: 4 }, (_, i) => ({ op: 'append', key: `list/${i}`, value: 'x'.repeat(5000) }));
    const batchReply = await a.raw('state_batch', { ops: [...ops, { op: 'set', key: 'plain', value: 1 }] });
    expect(Buffer.byteLength(textOf(batchReply))).toBeLessThan(17 * 1024);
    const batch = await a.ok('state_batch', {
      ops: [
        { op: 'append', key: 'list/0', value: 'y'.repeat(5000) },
        { op: 'append', key: 'list/1', value: 'z' },
        { op: 'increment', key: 'n', value: 1 },
        { op: 'append', key: 'short', value: 'w'.repeat(1500) },
      ],
    });
    expect(batch.results[0]).toEqual({ key: 'list/0', ok: true, version: 2 }); // 10,007 bytes, over a third of 16 KiB
    expect(batch.results[1]).toEqual({ key: 'list/1', ok: true, version: 2 }); // 5,008 bytes, over 2 KiB
    expect(batch.results[2]).toEqual({ key: 'n', ok: true, version: 2, value: 3 });
    expect(batch.results[3]).toEqual({ key: 'short', ok: true, version: 1, value: ['w'.repeat(1500)] });
    expect((await a.ok('state_get', { key: 'list/0', maxBytes: 1024 * 1024 })).value).toEqual(['x'.repeat(5000), 'y'.repeat(5000)]);
  });

  it('checkpoint_list with checkpointId pages a thread of many records: every reply within 16 KiB, every record once', async () => {
    const a = await agent({ config: { thread: 'T' } });
    for (let batch = 0; batch < 3; batch++) {
      const ops = Array.from({ length: 100 }, (_, i) => ({
        op: 'set',
        key: `k${String(batch * 100 + i).padStart(3, '0')}${'q'.repeat(200)}`,
        value: '"'.repeat(300),
        scope: 'thread',
      }));
      await a.ok('state_batch', { ops });
    }
    const { checkpointId } = await a.ok('checkpoint_save', {});
    const other = (await a.ok('checkpoint_save', {})).checkpointId;
    const seen: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page++) {
      const reply = await a.raw('checkpoint_list', { checkpointId, ...(cursor ? { cursor } : {}) });
      expect(Buffer.byteLength(textOf(reply))).toBeLessThanOrEqual(16 * 1024);
      const { state, nextCursor } = reply.structuredContent as { state: { records: Record<string, unknown> }; nextCursor?: string };
      seen.push(...Object.keys(state.records));
      if (page === 0) {
        expect(nextCursor).toBeDefined();
        // a cursor goes on only the checkpoint it came from
        expect((await a.err('checkpoint_list', { checkpointId: other, cursor: nextCursor })).details).toMatchObject({ path: 'cursor' });
      }
      cursor = nextCursor;
      if (!cursor) break;
    }
    expect(seen.filter((key) => key.includes('q'.repeat(200)))).toHaveLength(300);
    expect(new Set(seen).size).toBe(seen.length);
    expect((await a.err('checkpoint_list', { checkpointId, cursor: 'bogus' })).code).toBe('INVALID_ARGUMENT');
  });

  it('checkpoint_list with checkpointId answers a thread of large values under 16 KiB: previews with truncated and bytes', async () => {
    const a = await agent({ config: { thread: 'T' } });
    const messages = Array.from({ length: 400 }, (_, i) => ({ content: `${i}: ${'m'.repeat(290)}`, role: 'user' })); // keys in order, as saved
    await a.ok('state_set', { key: 'messages', value: messages, scope: 'thread' });
    await a.ok('state_set', { key: 'step', value: 7, scope: 'thread' });
    await a.ok('state_set', { key: 'doc', value: 'é'.repeat(20_000), scope: 'thread' });
    const { checkpointId } = await a.ok('checkpoint_save', {});
    const reply = await a.raw('checkpoint_list', { checkpointId });
    expect(Buffer.byteLength(textOf(reply))).toBeLessThan(17 * 1024);
    const { state } = await a.ok('checkpoint_list', { checkpointId });
    const byKey = Object.fromEntries(
      Object.entries(state.records as Record<string, { v: unknown; ver: number; truncated?: true; bytes?: number }>).map(([k, r]) => [
        k.split('\x1f').pop(),
        r,
      ]),
    );
    expect(byKey.step).toMatchObject({ v: 7, ver: 1 });
    expect(byKey.step).not.toHaveProperty('truncated');
    expect(byKey.messages).toMatchObject({ ver: 1, truncated: true, bytes: Buffer.byteLength(JSON.stringify(messages)) });
    expect(JSON.stringify(messages).startsWith((byKey.messages.v as string).slice(0, -1))).toBe(true);
    expect(byKey.doc).toMatchObject({ truncated: true, bytes: 40_002 });
    expect('é'.repeat(20_000).startsWith((byKey.doc.v as string).slice(0, -1))).toBe(true);
    // The checkpoint itself is whole: restoring it brings every value back as it was saved.
    await a.ok('state_set', { key: 'messages', value: [], scope: 'thread' });
    await a.ok('checkpoint_restore', { checkpointId });
    expect((await a.ok('state_get', { key: 'messages', scope: 'thread', maxBytes: 1024 * 1024 })).value).toEqual(messages);
  });

  it('a state_snapshot reply fits maxBytes whole: entries, cursor and skipped list, with long keys too', async () => {
    const a = await agent();
    for (let i = 0; i < 40; i++)
      await a.ok('state_set', { key: `${String(i).padStart(2, '0')}${'k'.repeat(500)}`, value: 'v'.repeat(300) });
    for (let i = 0; i < 5; i++) await a.ok('state_set', { key: `big${i}${'k'.repeat(500)}`, value: 'x'.repeat(5000) });
    for (const maxBytes of [undefined, 4096, 2048]) {
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 100; page++) {
        const reply = await a.raw('state_snapshot', { ...(maxBytes ? { maxBytes } : {}), ...(cursor ? { cursor } : {}) });
        expect(Buffer.byteLength(textOf(reply)), `maxBytes ${maxBytes}`).toBeLessThanOrEqual(maxBytes ?? 16 * 1024);
        const snap = reply.structuredContent as { entries: Record<string, unknown>; skipped?: Array<{ key: string }>; nextCursor?: string };
        seen.push(...Object.keys(snap.entries), ...(snap.skipped ?? []).map((s) => s.key));
        cursor = snap.nextCursor;
        if (!cursor) break;
      }
      expect(seen, `maxBytes ${maxBytes}`).toHaveLength(45);
    }
  });

  it('texts of quotes and control characters are cut by the size of their JSON, which escapes make up to 6 times their own', async () => {
    const a = await agent({ config: { thread: 'T' } });
    for (const [i, text] of ['"'.repeat(40_000), '\u0001'.repeat(40_000), '\\'.repeat(40_000)].entries()) {
      await a.ok('history_append', { kind: 'note', content: text });
      await a.ok('agent_state_set', { state: i % 2 === 0 ? 'running' : 'paused', reason: text });
      for (const [tool, args] of [
        ['history_list', { limit: 1 }],
        ['agent_state_get', {}],
      ] as const) {
        const size = Buffer.byteLength(textOf(await a.raw(tool, args)));
        expect(size, `${tool} of ${JSON.stringify(text.slice(0, 1))}`).toBeLessThan(tool === 'agent_state_get' ? 3 * 1024 : 16 * 1024);
      }
      expect((await a.ok('history_list', { limit: 1 })).entries[0].content).toMatch(/…$/);
    }
  });

  it('history_list pages within 16 KiB and cuts an event alone over it; agent_state_get cuts a long reason; the board cuts long texts', async () => {
    const a = await agent({ config: { thread: 'T' } });
    const big = 'x'.repeat(100_000);
    for (let i = 0; i < 5; i++) await a.ok('history_append', { kind: 'note', content: `${i}${big}`, data: { big } });
    for (let i = 0; i < 30; i++) await a.ok('history_append', { kind: 'small', content: `event ${i} ${'s'.repeat(1000)}` });
    await a.ok('agent_state_set', { state: 'running', reason: big });
    const { planId } = await a.ok('plan_create', {
      title: 'long steps',
      steps: Array.from({ length: 10 }, (_, i) => ({ content: `step ${i} ${'c'.repeat(3000)}`, note: 'n'.repeat(3000) })),
    });
    for (const [tool, args] of [
      ['history_list', {}],
      ['history_list', { order: 'asc' }],
      ['agent_state_get', {}],
      ['agent_state_set', { state: 'waiting', reason: big }],
    ] as const) {
      expect(Buffer.byteLength(textOf(await a.raw(tool, args))), tool).toBeLessThan(17 * 1024);
    }
    // Newest first: the small events fill a page within 16 KiB; paging on reaches every event, each long one cut.
    const seen: number[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 40; page++) {
      const got = await a.ok('history_list', { limit: 100, ...(cursor ? { cursor } : {}) });
      expect(got.entries.length).toBeGreaterThan(0);
      for (const e of got.entries) {
        seen.push(e.seq);
        if (e.kind === 'note') {
          expect(e.content.endsWith('…')).toBe(true);
          expect(`${e.seq - 1}${big}`.startsWith(e.content.slice(0, -1))).toBe(true);
          expect(typeof e.data).toBe('string');
        } else expect(e.content).toMatch(/^event \d+ s{1000}$/);
      }
      cursor = got.nextCursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(Array.from({ length: 35 }, (_, i) => 35 - i));
    expect((await a.ok('agent_state_get', {})).reason).toMatch(/^x+…$/);
    await a.ok('history_append', { kind: 'long', content: 'L'.repeat(5000), data: { big } });
    await a.ok('final_answer_set', { content: big, metadata: { big } });
    const reply = await a.raw('board_show', {});
    expect(Buffer.byteLength(JSON.stringify([reply.content, reply.structuredContent]))).toBeLessThan(17 * 1024);
    // board_show cut these texts shorter still, to stay within its bound; the web board's reader cuts them as below.
    const step = (reply.structuredContent as { plans: Array<{ steps: Array<{ content: string }> }> }).plans[0].steps[0];
    expect(step.content).toMatch(/^step 0 c+…$/);
    expect(step.content.length).toBeLessThan(1000);
    type Shown = {
      plans: Array<{ planId: string; steps: Array<{ content: string; note?: string }> }>;
      threads: Array<{
        thread: string;
        reason?: string;
        history: Array<{ kind: string; content: string; data?: unknown }>;
        finalAnswer?: { content: string; metadata?: unknown };
      }>;
    };
    const shown = (await new BoardReader(readOnlyView(a.store)).board('-', ['plans', 'threads'])) as unknown as Shown;
    const plan = shown.plans.find((p) => p.planId === planId)!;
    expect(plan.steps[0].content).toBe(`step 0 ${'c'.repeat(993)}…`);
    expect(plan.steps[0].note).toBe(`${'n'.repeat(1000)}…`);
    const thread = shown.threads.find((t) => t.thread === 'T')!;
    expect(thread.reason).toBe(`${'x'.repeat(1000)}…`);
    const long = thread.history.find((e) => e.kind === 'long')!;
    expect(long.content).toBe(`${'L'.repeat(1000)}…`);
    expect(long.data).toBe(`${JSON.stringify({ big }).slice(0, 1000)}…`);
    expect(thread.finalAnswer).toEqual({
      ...thread.finalAnswer,
      content: `${'x'.repeat(4000)}…`,
      metadata: `${JSON.stringify({ big }).slice(0, 1000)}…`,
    });
    // The stored texts stay whole.
    expect((await a.ok('plan_get', { planId, detail: 'full' })).plan.steps[0].content).toBe(`step 0 ${'c'.repeat(3000)}`);
  });

  it('every read tool answers within about 16 KiB by default on a store crowded with long names and values', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'T0', agent: 'a0' } });
    const long = (c: string, i: number) => `${c}${i}-${c.repeat(110)}`;
    for (let i = 0; i < 120; i++) await a.ok('state_set', { key: long('k', i), value: 'v'.repeat(2000) });
    await a.ok('state_set', { key: 'big', value: 'x'.repeat(200_000) });
    let planId = '';
    for (let p = 0; p < 60; p++) {
      const steps = Array.from({ length: 200 }, (_, i) => ({ content: `${i} ${'c'.repeat(1000)}`, note: 'n'.repeat(1000) }));
      planId = (await a.ok('plan_create', { title: `${p} ${'t'.repeat(150)}`, steps })).planId;
    }
    for (let i = 0; i < 120; i++) await a.ok('checkpoint_save', { label: `${i} ${'l'.repeat(190)}` });
    for (let i = 0; i < 30; i++) await a.ok('history_append', { kind: 'note', content: 'h'.repeat(5000), data: { d: 'd'.repeat(5000) } });
    for (let i = 0; i < 20; i++) await a.ok('scratchpad_write', { kind: 'observation', value: 's'.repeat(5000) });
    await a.ok('scratchpad_write', { kind: 'variable', name: 'notes', value: 's'.repeat(100_000) });
    await a.ok('final_answer_set', { content: 'f'.repeat(100_000) });
    await a.ok('agent_state_set', { state: 'running', reason: 'r'.repeat(50_000) });
    for (let t = 1; t < 60; t++) {
      const other = await agent({ store, config: { thread: long('t', t), agent: long('a', t) } });
      await other.ok('message_send', { to: 'a0', content: 'm'.repeat(16_000) });
    }
    for (const [tool, args] of [
      ['state_get', { key: 'big' }],
      ['watch', { key: 'big', waitMs: 0 }],
      ['state_list', {}],
      ['state_snapshot', {}],
      ['state_changes', { waitMs: 0 }],
      ['plan_get', { planId }],
      ['plan_list', {}],
      ['scratchpad_read', {}],
      ['final_answer_get', {}],
      ['budget_status', {}],
      ['agent_state_get', {}],
      ['whoami', {}],
      ['history_list', {}],
      ['checkpoint_list', {}],
      ['board_show', {}],
      ['team_list', {}],
      ['inbox', { waitMs: 0 }],
    ] as const) {
      const reply = await a.raw(tool, args);
      expect(reply.isError, tool).toBeFalsy();
      expect(Buffer.byteLength(textOf(reply)), tool).toBeLessThan(17 * 1024);
      expect(Buffer.byteLength(JSON.stringify(reply.structuredContent)), tool).toBeLessThan(17 * 1024);
    }
  }, 60_000);

  it('board_show stays within about 16 KiB when one thread holds hundreds of steps, counting the holds it left out', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'hog', agent: 'hog' } });
    for (let p = 0; p < 2; p++) {
      const { planId } = await a.ok('plan_create', { title: `p${p}`, steps: Array.from({ length: 150 }, (_, i) => `step ${i}`) });
      for (let i = 1; i <= 150; i++) await a.ok('plan_claim', { planId, stepId: `s${i}` });
    }
    for (const section of [undefined, 'threads'] as const) {
      const reply = await a.raw('board_show', section ? { section } : {});
      expect(Buffer.byteLength(JSON.stringify({ content: reply.content, structuredContent: reply.structuredContent }))).toBeLessThan(
        17 * 1024,
      );
      // biome-ignore lint/suspicious/noExplicitAny: read field by field
      const board = reply.structuredContent as any;
      const hog = board.threads.find((t: { thread: string }) => t.thread === 'hog');
      expect(hog.holds.length).toBeGreaterThan(0);
      expect(hog.holds.length + hog.holdsHidden).toBe(300);
      const member = board.team.roster.find((m: { agent: string }) => m.agent === 'hog');
      expect(member.holding.length + member.holdingHidden).toBe(300);
    }
  }, 60_000);

  it('board_show answers within about 16 KiB on a crowded board, counting what it left out; its section views too', async () => {
    const store = memoryStore();
    const a = await agent({ store, config: { thread: 'T0', agent: 'a0' } });
    for (let i = 0; i < 150; i++) await a.ok('state_set', { key: `doc/${i}`, value: `${i} ${'v'.repeat(1000)}`, scope: 'global' });
    const planIds: string[] = [];
    for (let p = 0; p < 12; p++) {
      const steps = Array.from({ length: 30 }, (_, i) => ({ content: `plan ${p} step ${i} ${'c'.repeat(400)}`, note: 'n'.repeat(300) }));
      planIds.push((await a.ok('plan_create', { title: `plan ${p}`, steps })).planId);
    }
    // one plan at the most steps a plan can have, a third of them finished
    const big = await a.ok('plan_create', {
      title: 'big',
      steps: Array.from({ length: 200 }, (_, i) => ({
        content: `big step ${i} ${'b'.repeat(300)}`,
        ...(i < 70 ? { status: 'completed' } : {}),
      })),
    });
    for (let t = 1; t < 30; t++) {
      const other = await agent({ store, config: { thread: `T${t}`, agent: `a${t}` } });
      for (let e = 0; e < 8; e++) await other.ok('history_append', { kind: 'note', content: `event ${e} ${'h'.repeat(800)}` });
      await other.ok('message_send', { to: 'a0', content: `from ${t}: ${'m'.repeat(3000)}` });
    }
    const totalBytes = (r: CallToolResult) =>
      Buffer.byteLength(JSON.stringify({ content: r.content, structuredContent: r.structuredContent }));
    for (const section of [undefined, 'keys', 'plans', 'threads'] as const) {
      const reply = await a.raw('board_show', section ? { section } : {});
      expect(reply.isError, section).toBeFalsy();
      expect(totalBytes(reply), section ?? 'all').toBeLessThan(17 * 1024);
    }
    // biome-ignore lint/suspicious/noExplicitAny: read field by field
    const board = (await a.raw('board_show', {})).structuredContent as any;
    // biome-ignore lint/suspicious/noExplicitAny: read field by field
    const shownKeys = board.scopes.reduce((n: number, s: any) => n + s.keys.length, 0);
    expect(shownKeys).toBeGreaterThan(0);
    expect(shownKeys + board.hidden.keys).toBe(150);
    expect(board.plans.length + board.hidden.plans).toBe(13);
    expect(board.threads.length + board.hidden.threads).toBe(30);
    expect(board.team.messages.length + board.team.messagesHidden).toBe(29);
    // the newest keys are the ones kept
    // biome-ignore lint/suspicious/noExplicitAny: read field by field
    expect(board.scopes.flatMap((s: any) => s.keys.map((k: any) => k.key))).toContain('doc/149');
    // A plan shown with fewer steps keeps its counts; its finished steps go first.
    const plans = (await a.raw('board_show', { section: 'plans' })).structuredContent as {
      plans: Array<{ planId: string; steps: Array<{ id: string; status: string }>; stepCounts?: { total: number; done: number } }>;
      hidden: { plans: number };
    };
    expect(plans.plans.length + plans.hidden.plans).toBe(13);
    const shownBig = plans.plans.find((p) => p.planId === big.planId);
    if (shownBig) {
      expect(shownBig.stepCounts).toEqual({ total: 200, done: 70 });
      expect(shownBig.steps.length).toBeLessThan(200);
      expect(shownBig.steps.filter((s) => s.status === 'completed').length).toBeLessThan(70);
    }
    const summary = textOf(await a.raw('board_show', { section: 'plans' }));
    expect(summary).toContain('Plans (13)');
    if (shownBig && summary.includes(big.planId)) expect(summary).toMatch(/70\/200/);
    // A small board is shown whole.
    const small = await agent({ config: { thread: 'S' } });
    await small.ok('state_set', { key: 'k', value: 'x'.repeat(200) });
    const whole = (await small.raw('board_show', {})).structuredContent as {
      scopes: Array<{ keys: Array<{ value: string; cut: boolean }> }>;
      hidden: unknown;
    };
    expect(whole.scopes[0].keys[0]).toMatchObject({ value: JSON.stringify('x'.repeat(200)), cut: false });
    expect(whole.hidden).toEqual({ keys: 0, plans: 0, threads: 0 });
  });

  it("state_list gives each key's size; state_snapshot pages with nextCursor and lists values bigger than a page", async () => {
    const a = await agent();
    for (let i = 0; i < 30; i++) await a.ok('state_set', { key: `doc/${String(i).padStart(2, '0')}`, value: 'x'.repeat(1000) });
    await a.ok('state_set', { key: 'doc/15b', value: 'y'.repeat(20_000) });
    const listed = await a.ok('state_list', { prefix: 'doc/', limit: 2 });
    expect(listed.keys[0]).toMatchObject({ key: 'doc/00', bytes: 1002 });
    const seen: string[] = [];
    const skipped: string[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 10; page++) {
      const snap = await a.ok('state_snapshot', { prefix: 'doc/', maxBytes: 8 * 1024, ...(cursor ? { cursor } : {}) });
      seen.push(...Object.keys(snap.entries));
      skipped.push(...(snap.skipped ?? []).map((s: { key: string; bytes: number }) => `${s.key}:${s.bytes}`));
      cursor = snap.nextCursor;
      expect(snap.truncated).toBe(cursor !== undefined);
      if (!cursor) break;
    }
    expect(seen).toEqual(Array.from({ length: 30 }, (_, i) => `doc/${String(i).padStart(2, '0')}`));
    expect(skipped).toEqual(['doc/15b:20002']);
    expect((await a.err('state_snapshot', { prefix: 'other/', cursor: 'bogus' })).code).toBe('INVALID_ARGUMENT');
  });

  it('state_list ends a page of long keys within 16 KiB; nextCursor reaches every key once', async () => {
    const a = await agent();
    const keys = (chars: number, tag: string) =>
      Array.from({ length: 100 }, (_, i) => `${tag}/${String(i).padStart(3, '0')}/${'k'.repeat(chars)}`);
    for (const [tag, chars] of [
      ['mid', 100],
      ['long', 480],
    ] as const) {
      const all = keys(chars, tag);
      for (let i = 0; i < all.length; i += 50) {
        await a.ok('state_batch', { ops: all.slice(i, i + 50).map((key) => ({ op: 'set', key, value: 1 })) });
      }
      const seen: string[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < 20; page++) {
        const reply = await a.raw('state_list', { prefix: `${tag}/`, ...(cursor ? { cursor } : {}) });
        expect(textOf(reply).length, tag).toBeLessThanOrEqual(16 * 1024);
        const got = reply.structuredContent as { keys: Array<{ key: string }>; nextCursor?: string };
        expect(got.keys.length).toBeGreaterThan(0);
        seen.push(...got.keys.map((k) => k.key));
        cursor = got.nextCursor;
        if (!cursor) break;
      }
      expect(seen).toEqual(all);
    }
    // a limit below what fits is still the limit
    expect((await a.ok('state_list', { prefix: 'mid/', limit: 3 })).keys).toHaveLength(3);
  });

  it('state_batch answers 100 long keys within 16 KiB: results in the order of ops, long keys cut short with "…"', async () => {
    const a = await agent();
    const ops = Array.from({ length: 100 }, (_, i) => ({ op: 'set', key: `long/${i}/${'k'.repeat(400)}`, value: i }));
    const reply = await a.raw('state_batch', { ops });
    expect(textOf(reply).length).toBeLessThanOrEqual(16 * 1024);
    const { results } = reply.structuredContent as { results: Array<{ key: string; ok: boolean; version: number }> };
    expect(results).toHaveLength(100);
    results.forEach((result, i) => {
      expect(result).toMatchObject({ ok: true, version: 1 });
      expect(result.key.endsWith('…')).toBe(true);
      expect(ops[i].key.startsWith(result.key.slice(0, -1))).toBe(true);
      expect(result.key.startsWith(`long/${i}/`)).toBe(true);
    });
    // short keys come back whole; failures of a non-atomic batch with long keys stay within it too
    const small = await a.ok('state_batch', { ops: [{ op: 'set', key: 'a', value: 1 }] });
    expect(small.results).toEqual([{ key: 'a', ok: true, version: 1 }]);
    const failing = await a.raw('state_batch', { atomic: false, ops: ops.map((op) => ({ ...op, value: 'v'.repeat(1500), ifVersion: 7 })) });
    expect(textOf(failing).length).toBeLessThanOrEqual(16 * 1024);
    const failed = (failing.structuredContent as { results: Array<{ ok: boolean; error: { code: string } }> }).results;
    expect(failed.map((r) => `${r.ok}:${r.error.code}`)).toEqual(ops.map(() => 'false:VERSION_CONFLICT'));
  });

  it('state_changes pages within 16 KiB by bytes too, never skipping or repeating a change, a batch included', async () => {
    const a = await agent();
    const long = (tag: string, i: number) => `${tag}/${String(i).padStart(3, '0')}/${'k'.repeat(480)}`;
    const { revision: start } = await a.ok('state_changes', {});
    // One batch of 100 long keys: a single revision of 100 changes.
    const batch = await a.ok('state_batch', { ops: Array.from({ length: 100 }, (_, i) => ({ op: 'set', key: long('b', i), value: i })) });
    const reply = await a.raw('state_changes', { afterRevision: start });
    expect(textOf(reply).length).toBeLessThanOrEqual(16 * 1024);
    const whole = reply.structuredContent as { changes: Array<{ key: string; revision: number }>; revision: number };
    expect(whole.revision).toBe(batch.revision);
    expect(whole.changes).toHaveLength(100);
    whole.changes.forEach((change, i) => {
      expect(change.revision).toBe(batch.revision);
      expect(change.key.endsWith('…')).toBe(true);
      expect(long('b', i).startsWith(change.key.slice(0, -1))).toBe(true);
    });
    // Single writes around a batch: pages end at a revision boundary, and the pages join up exactly.
    const expected: string[] = [];
    for (let i = 0; i < 20; i++) expected.push(long('s', i));
    for (const key of expected) await a.ok('state_set', { key, value: 1 });
    const middle = Array.from({ length: 20 }, (_, i) => long('m', i));
    await a.ok('state_batch', { ops: middle.map((key) => ({ op: 'set', key, value: 1 })) });
    expected.push(...middle);
    for (let i = 20; i < 40; i++) {
      expected.push(long('s', i));
      await a.ok('state_set', { key: long('s', i), value: 1 });
    }
    const seen: string[] = [];
    let after = whole.revision;
    for (let pages = 0; pages < 20; pages++) {
      const page = await a.raw('state_changes', { afterRevision: after, waitMs: 0 });
      expect(textOf(page).length).toBeLessThanOrEqual(16 * 1024);
      const got = page.structuredContent as { changes: Array<{ key: string; revision: number }>; revision: number };
      if (got.changes.length === 0) break;
      expect(got.revision).toBeGreaterThanOrEqual(Math.max(...got.changes.map((c) => c.revision)));
      seen.push(...got.changes.map((c) => c.key));
      after = got.revision;
    }
    expect(seen).toEqual(expected);
  });

  it('checkpoint_list pages newest first with cursor', async () => {
    const a = await agent();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await a.ok('checkpoint_save', { label: `c${i}` })).checkpointId);
    const first = await a.ok('checkpoint_list', { limit: 2 });
    expect(first.checkpoints.map((c: { label: string }) => c.label)).toEqual(['c4', 'c3']);
    const second = await a.ok('checkpoint_list', { limit: 2, cursor: first.nextCursor });
    expect(second.checkpoints.map((c: { label: string }) => c.label)).toEqual(['c2', 'c1']);
    const last = await a.ok('checkpoint_list', { limit: 2, cursor: second.nextCursor });
    expect(last.checkpoints.map((c: { label: string }) => c.label)).toEqual(['c0']);
    expect(last.nextCursor).toBeUndefined();
  });

  it('VERSION_CONFLICT carries the current value when it is small, and only its version when it is not', async () => {
    const a = await agent();
    await a.ok('state_set', { key: 'cfg', value: { mode: 'fast' } });
    await a.ok('state_set', { key: 'cfg', value: { mode: 'safe' } });
    const conflict = await a.err('state_set', { key: 'cfg', value: { mode: 'mine' }, ifVersion: 1 });
    expect(conflict).toMatchObject({ code: 'VERSION_CONFLICT', details: { currentVersion: 2, current: { mode: 'safe' } } });
    await a.ok('state_set', { key: 'large', value: 'z'.repeat(3000) });
    const large = await a.err('state_update', { key: 'large', op: 'append', value: '!', ifVersion: 7 });
    expect(large.details).toEqual({ currentVersion: 1 });
  });

  it('a wait without a progress token is capped at 50 s, and says timedOut', async () => {
    // The cap itself is exercised for real in test/e2e/long-wait.test.ts; here: the reply shape of every blocking tool.
    const a = await agent();
    expect(await a.ok('watch', { key: 'never', waitMs: 20 })).toEqual({ found: false, timedOut: true });
    const { revision } = await a.ok('state_changes', {});
    expect(await a.ok('state_changes', { afterRevision: revision, waitMs: 20 })).toEqual({ changes: [], revision, timedOut: true });
    expect(await a.ok('final_answer_get', { waitMs: 20 })).toEqual({ isSet: false, timedOut: true });
  });
});

describe('previews of values the store froze', () => {
  const rows = (n: number) => Array.from({ length: n }, (_, i) => ({ i, text: `row ${i} `.padEnd(100, '.') }));

  it('are made once per size asked for, equal to those of an equal value of a caller, each within its size', () => {
    const held = deepFreeze(rows(2000));
    const first = boundValue(held);
    expect(boundValue(held)).toBe(first); // the same object: not made again
    expect(first).toEqual(boundValue(rows(2000)));
    expect(first).toMatchObject({ truncated: true, bytes: jsonBytes(held) });
    const small = boundValue(held, 2048);
    expect(small).not.toBe(first);
    expect(boundValue(held, 2048)).toBe(small);
    for (const [bounded, size] of [
      [first, 16 * 1024],
      [small, 2048],
    ] as const) {
      expect(Buffer.byteLength(JSON.stringify(bounded.value))).toBeLessThanOrEqual(size);
      expect(JSON.stringify(held).startsWith((bounded.value as string).slice(0, -1))).toBe(true);
    }
    expect(Object.isFrozen(first)).toBe(true);
  });

  it("are made afresh for a caller's own value, which may change between two reads", () => {
    const mine = rows(2000);
    const before = boundValue(mine);
    mine[0].text = 'changed';
    const after = boundValue(mine);
    expect(after).not.toBe(before);
    expect((after.value as string).startsWith('[{"i":0,"text":"changed"}')).toBe(true);
  });
});
