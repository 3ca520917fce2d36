// The team across processes: a killed stdio agent is gone at once, a killed server idle after the lease, a recipient
// killed before its ack reads the message again, and an inbox listener in one process hears a send from another.
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { CLI, sleep, spawnAgent, type Spawned } from '../helpers.js';

const open: Spawned[] = [];
const killLater: Array<() => void> = [];
afterEach(async () => {
  for (const kill of killLater.splice(0)) kill();
  await Promise.all(open.splice(0).map((a) => a.close().catch(() => {})));
});
const db = (): string => `sqlite://${join(tempDir(), 'team.db')}`;
async function agentProcess(store: string, name: string, extra: string[] = []): Promise<Spawned> {
  const a = await spawnAgent(['--store', store, '--agent', name, '--thread', `t-${name}`, ...extra]);
  open.push(a);
  return a;
}
const byName = async (viewer: Spawned) =>
  Object.fromEntries(((await viewer.ok('team_list')).agents as Array<{ agent: string; status: string }>).map((a) => [a.agent, a]));

describe('the team across processes (SQLite file)', () => {
  it('an agent process killed with kill -9 is gone within 2 s: its stdio server sees the pipe close', async () => {
    const store = db();
    const viewer = await agentProcess(store, 'viewer');
    const child = spawn(
      process.execPath,
      [join(import.meta.dirname, '..', 'fixtures', 'stdio-agent.mjs'), CLI, '--store', store, '--agent', 'doomed', '--thread', 't-doomed'],
      {
        stdio: ['ignore', 'pipe', 'inherit'],
        env: { ...process.env, BLACKBOARD_TOOLS: 'all' },
      },
    );
    killLater.push(() => child.kill('SIGKILL'));
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('ready') && resolve());
      child.on('exit', () => reject(new Error('the agent process exited early')));
    });
    expect((await byName(viewer)).doomed.status).toBe('active');
    child.kill('SIGKILL');
    const killed = Date.now();
    let status = 'active';
    while (status !== 'gone' && Date.now() - killed < 2000) {
      await sleep(100);
      status = (await byName(viewer)).doomed.status;
    }
    expect(status).toBe('gone');
  });

  it('a stdio client of either revision is on the roster under its own name (2026-07-28 sends it in each request)', async () => {
    const store = db();
    const modern = await spawnAgent(['--store', store, '--agent', 'm', '--thread', 't-m'], {}, undefined, 'modern');
    const legacy = await spawnAgent(['--store', store, '--agent', 'l', '--thread', 't-l'], {}, undefined, 'legacy');
    open.push(modern, legacy);
    await modern.ok('whoami');
    await legacy.ok('whoami');
    const team = (await byName(modern)) as Record<string, { client?: string }>;
    expect(team.m.client).toBe('test-process');
    expect(team.l.client).toBe('test-process');
  });

  it('a server process killed with kill -9 turns idle after the claim lease, still showing the step it holds', async () => {
    const store = db();
    const worker = await agentProcess(store, 'w', ['--claim-lease', '2']);
    const viewer = await agentProcess(store, 'viewer', ['--claim-lease', '2']);
    const { planId } = await viewer.ok('plan_create', { title: 'p', steps: ['one'] });
    await worker.ok('plan_claim', { planId });
    expect((await byName(viewer)).w).toMatchObject({ status: 'active', holding: [{ planId, stepId: 's1' }] });
    worker.kill();
    await sleep(2600);
    expect((await byName(viewer)).w.status).toBe('idle');
  });

  it('a recipient killed before its ack reads the message again after restart, and only then moves on', async () => {
    const store = db();
    const lead = await agentProcess(store, 'lead');
    let w1 = await agentProcess(store, 'w1');
    await w1.ok('whoami');
    const sent = await lead.ok('message_send', { to: 'w1', content: 'change of plan' });
    const first = await w1.ok('inbox', { waitMs: 0 });
    expect(first.messages).toMatchObject([{ id: sent.messageId, content: 'change of plan', from: 'lead' }]);
    w1.kill();
    w1 = await agentProcess(store, 'w1');
    const again = await w1.ok('inbox', { waitMs: 0 });
    expect(again.messages.map((m: { id: string }) => m.id)).toEqual([sent.messageId]);
    const after = await w1.ok('inbox', { waitMs: 0, ack: again.cursor });
    expect(after).toMatchObject({ messages: [], unread: 0 });
  });

  it('a blocking inbox in one process wakes on a send through another; a listener hears of it on its inbox URI', async () => {
    const store = db();
    const w1 = await agentProcess(store, 'w1');
    const listener = await spawnAgent(['--store', store, '--agent', 'watcher'], {}, undefined, 'modern');
    open.push(listener);
    const lead = await agentProcess(store, 'lead');
    await w1.ok('whoami');
    const updates: string[] = [];
    listener.client.setNotificationHandler('notifications/resources/updated', (n) => void updates.push(n.params.uri));
    await listener.client.listen({ resourceSubscriptions: ['blackboard://_default/inbox/w1'] });
    const waiting = w1.ok('inbox', { waitMs: 20_000 });
    await sleep(200);
    const sentAt = Date.now();
    await lead.ok('message_send', { to: 'w1', content: 'wake up' });
    const got = await waiting;
    expect(Date.now() - sentAt).toBeLessThan(2000);
    expect(got.messages.map((m: { content: string }) => m.content)).toEqual(['wake up']);
    for (const end = Date.now() + 5000; updates.length === 0 && Date.now() < end; ) await sleep(50);
    expect(updates).toContain('blackboard://_default/inbox/w1');
    const read = await listener.client.readResource({ uri: 'blackboard://_default/inbox/w1' });
    expect(JSON.parse((read.contents[0] as { text: string }).text).messages).toMatchObject([{ content: 'wake up' }]);
  });

  it('a listener on the inbox URI of an agent not here yet hears of mail kept for it, and reads it', async () => {
    const store = db();
    const listener = await spawnAgent(['--store', store, '--agent', 'watcher'], {}, undefined, 'modern');
    open.push(listener);
    const lead = await agentProcess(store, 'lead');
    const uri = 'blackboard://_default/inbox/late';
    const updates: string[] = [];
    listener.client.setNotificationHandler('notifications/resources/updated', (n) => void updates.push(n.params.uri));
    await listener.client.listen({ resourceSubscriptions: [uri] });
    await sleep(200);
    await lead.ok('message_send', { to: 'late', content: 'for when you come', waitForRecipient: true });
    for (const end = Date.now() + 5000; updates.length === 0 && Date.now() < end; ) await sleep(50);
    expect(updates).toContain(uri);
    const read = await listener.client.readResource({ uri });
    expect(JSON.parse((read.contents[0] as { text: string }).text).messages).toMatchObject([{ content: 'for when you come' }]);
  });
});
