import { describe, expect, it } from 'vitest';
import { agentsClosedAfterEach, memoryStore, sleep } from '../helpers.js';

const agent = agentsClosedAfterEach();

describe('finalizer tools', () => {
  it('the first answer wins; a second fails with MULTIPLE_FINAL_ANSWERS carrying the first', async () => {
    const a = await agent({ config: { agent: 'solver' } });
    expect(await a.ok('final_answer_get', { waitMs: 0 })).toEqual({ isSet: false, timedOut: true });
    const { answer } = await a.ok('final_answer_set', { content: '42', metadata: { confidence: 0.9 } });
    expect(answer).toMatchObject({ content: '42', metadata: { confidence: 0.9 }, setBy: 'solver' });
    const second = await a.err('final_answer_set', { content: '43' });
    expect(second.code).toBe('MULTIPLE_FINAL_ANSWERS');
    expect(second.details).toEqual({ answer });
    expect(await a.ok('final_answer_get')).toEqual({ isSet: true, answer, timedOut: false });
    expect((await a.err('final_answer_set', { content: '' })).code).toBe('INVALID_ARGUMENT');
  });

  it("a long answer is set whole; its reply and a second set's refusal carry a preview within a read's size", async () => {
    const a = await agent({ config: { maxValueBytes: 2_000_000 } });
    const content = 'é'.repeat(60_000);
    const set = await a.raw('final_answer_set', { content });
    expect(set.isError).toBeFalsy();
    const text = (set.content as Array<{ text: string }>)[0].text;
    expect(text.length).toBeLessThan(17 * 1024);
    expect((set.structuredContent as { answer: unknown }).answer).toMatchObject({ truncated: true, bytes: 120_000 });
    const refused = await a.raw('final_answer_set', { content: 'again' });
    const body = (refused.content as Array<{ text: string }>)[0].text;
    expect(body.length).toBeLessThan(17 * 1024);
    expect(JSON.parse(body).error).toMatchObject({
      code: 'MULTIPLE_FINAL_ANSWERS',
      details: { answer: { truncated: true, bytes: 120_000 } },
    });
    // the answer itself is whole
    expect((await a.ok('final_answer_get', { maxBytes: 1024 * 1024 })).answer.content).toBe(content);
  });

  it('of many concurrent setters in one run exactly one wins', async () => {
    const a = await agent();
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => a.raw('final_answer_set', { content: `a${i}` })));
    expect(results.filter((r) => !r.isError)).toHaveLength(1);
    const winner = (results.find((r) => !r.isError)!.structuredContent as { answer: { content: string } }).answer.content;
    expect((await a.ok('final_answer_get')).answer.content).toBe(winner);
  });

  it("a parent waits for a child thread's answer with waitMs", async () => {
    const store = memoryStore();
    const parent = await agent({ store, config: { thread: 'parent' } });
    const child = await agent({ store, config: { thread: 'child', parentThread: 'parent' } });
    expect(await parent.ok('final_answer_get', { thread: 'child', waitMs: 50 })).toEqual({ isSet: false, timedOut: true });
    const waiting = parent.ok('final_answer_get', { thread: 'child', waitMs: 10_000 });
    await sleep(50);
    await child.ok('final_answer_set', { content: 'child result' });
    expect(await waiting).toMatchObject({ isSet: true, timedOut: false, answer: { content: 'child result', thread: 'child' } });
    expect((await parent.err('final_answer_get', { waitMs: 700_000 })).code).toBe('INVALID_ARGUMENT');
  });

  it("after run_start the new run has no answer, and other threads read the old run's until the new one answers", async () => {
    const store = memoryStore();
    const parent = await agent({ store, config: { thread: 'parent' } });
    const child = await agent({ store, config: { thread: 'child', parentThread: 'parent' } });
    await child.ok('final_answer_set', { content: 'first run' });
    await child.ok('run_start', {});
    expect(await child.ok('final_answer_get', { waitMs: 0 })).toEqual({ isSet: false, timedOut: true });
    expect(await parent.ok('final_answer_get', { thread: 'child', waitMs: 0 })).toMatchObject({
      isSet: true,
      answer: { content: 'first run' },
    });
    await child.ok('final_answer_set', { content: 'second run' });
    expect(await parent.ok('final_answer_get', { thread: 'child', waitMs: 0 })).toMatchObject({
      isSet: true,
      answer: { content: 'second run' },
    });
  });
});
