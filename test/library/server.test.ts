// createBlackboardServer: the command's MCP server in-process, over an in-memory transport, sharing a store with the library.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { afterEach, describe, expect, it } from 'vitest';
import { createBlackboardServer, openBlackboard, openStore, BlackboardError } from '../../src/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Agent, CLI, newClient } from '../helpers.js';
import { InMemoryTransport as ModernInMemoryTransport } from '@modelcontextprotocol/client';

const opened: Array<{ close(): Promise<void> }> = [];
afterEach(async () => {
  for (const thing of opened.splice(0).reverse()) await thing.close().catch(() => {});
});

async function client(server: Awaited<ReturnType<typeof createBlackboardServer>>): Promise<Agent> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await server.connect(serverSide);
  const c = new Client({ name: 'in-process', version: '1.0.0' });
  await c.connect(clientSide);
  opened.push(c);
  return new Agent(c);
}

describe('createBlackboardServer', () => {
  it('serves a 2026-07-28 client too, whose subscriptions/listen hears writes made elsewhere on the store', async () => {
    const store = await openStore('memory://');
    opened.push(store);
    const server = await createBlackboardServer({ store, agent: 'model', tools: ['all'] });
    opened.push(server);
    const [clientSide, serverSide] = ModernInMemoryTransport.createLinkedPair();
    await server.connect(serverSide);
    const client = newClient('modern', 'in-process'); // pinned: it fails unless the server offers 2026-07-28
    await client.connect(clientSide);
    opened.push(client);
    const mcp = new Agent(client);
    expect(await mcp.ok('state_set', { key: 'mine', value: 1 })).toMatchObject({ version: 1 });
    // it sends no initialize: the roster has its name from its requests
    expect((await mcp.ok('team_list')).agents).toMatchObject([{ agent: 'model', client: 'in-process' }]);
    const updates: Array<{ uri: string; _meta?: Record<string, unknown> }> = [];
    client.setNotificationHandler('notifications/resources/updated', (n) => void updates.push(n.params as never));
    const uri = 'blackboard://_default/global/shared';
    // a malformed URI is refused, and nothing of that listen is followed
    await expect(client.listen({ resourceSubscriptions: [uri, 'blackboard://_default/nosuch/k'] })).rejects.toThrow(/Nothing is followed/);
    await client.listen({ resourceSubscriptions: [uri] });
    const code = await openBlackboard({ store, agent: 'code' });
    opened.push(code);
    const { revision } = await code.kv.set({ key: 'shared', value: 'from code' });
    await code.kv.set({ key: 'not-listened', value: 1 });
    await expect.poll(() => updates.length, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(updates).toEqual([expect.objectContaining({ uri, _meta: expect.objectContaining({ 'blackboard/revision': revision }) })]);
  });

  it('serves the same tools as the command, and shares a store handle with openBlackboard', async () => {
    const store = await openStore('memory://');
    opened.push(store);
    const server = await createBlackboardServer({ store, agent: 'model', allowBudgetAdmin: true });
    opened.push(server);
    const mcp = await client(server);
    // The command with the same flags serves the same tools with the same instructions.
    const command = new Client({ name: 'reference', version: '1.0.0' });
    await command.connect(
      new StdioClientTransport({
        command: process.execPath,
        args: [CLI, '--store', 'memory://', '--allow-budget-admin'],
        stderr: 'ignore',
      }),
    );
    opened.push(command);
    const names = (await mcp.client.listTools()).tools.map((t) => t.name);
    expect((await command.listTools()).tools).toEqual((await mcp.client.listTools()).tools);
    expect(mcp.client.getInstructions()).toBe(command.getInstructions());
    expect(server.tools).toEqual(names);

    const bb = await openBlackboard({ store, agent: 'code' });
    opened.push(bb);
    await mcp.ok('state_set', { key: 'k', value: 'from the model' });
    expect(await bb.kv.get({ key: 'k' })).toMatchObject({ value: 'from the model', updatedBy: 'model' });
    const { version } = await bb.kv.set({ key: 'k', value: 'from code', ifVersion: 1 });
    expect(await mcp.ok('state_get', { key: 'k' })).toMatchObject({ value: 'from code', version });
    // Closing a server over a shared handle leaves the store open for the others.
    await server.close();
    expect((await bb.kv.get({ key: 'k' })).value).toBe('from code');
  });

  it('takes the server options: tool families, read-only, namespace', async () => {
    const server = await createBlackboardServer({ store: 'memory://', namespace: 'team', tools: ['kv'], readOnly: true });
    opened.push(server);
    const mcp = await client(server);
    const names = (await mcp.client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('team_state_get');
    expect(names.some((n) => n.includes('plan'))).toBe(false);
    expect((await mcp.err('team_state_set', { key: 'k', value: 1 })).code).toBe('FORBIDDEN');
    await expect(createBlackboardServer({ store: 'memory://', tools: ['kvv' as never] })).rejects.toBeInstanceOf(BlackboardError);
  });
});
