import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Session } from '../../src/services/session.js';
import type { Era } from '../helpers.js';
import {
  bearer,
  httpAgent,
  MCP_HEADERS,
  raw,
  rawInitialize,
  sha256hex,
  startHttp,
  writeAuthFile,
  type HttpAgent,
  type Served,
} from './http-helpers.js';

// One server with an auth file and three clients, used by several real SDK clients at once.
const PLANNER = 'planner-token-0123456789';
const CODER = 'coder-token-0123456789ab';
const AUDITOR = 'auditor-token-0123456789';

let s: Served;
const open: HttpAgent[] = [];
const agent = async (path: string, headers: Record<string, string>, prefix = '', era?: Era): Promise<HttpAgent> => {
  const a = await httpAgent(`${s.base}${path}`, headers, prefix, era);
  open.push(a);
  return a;
};

beforeAll(async () => {
  const file = writeAuthFile([
    { token: PLANNER, agent: 'planner', agentType: 'planner', namespaces: ['team'], access: 'readwrite' },
    { tokenSha256: sha256hex(CODER), agent: 'coder', namespaces: ['*'], access: 'readwrite' },
    { token: AUDITOR, agent: 'auditor', namespaces: ['*'], access: 'read' },
  ]);
  s = await startHttp({ authFile: file });
});
afterAll(async () => {
  await Promise.all(open.map((a) => a.close().catch(() => {})));
  await s?.close();
});

describe('HTTP with an auth file: each client is its own agent', () => {
  it('whoami, updatedBy and the profile scope follow the token; /mcp/NS prefixes the tools', async () => {
    const planner = await agent('/mcp/team', bearer(PLANNER), 'team_');
    const coder = await agent('/mcp/team', { ...bearer(CODER), 'X-Blackboard-Agent-Type': 'reviewer' }, 'team_');
    expect((await planner.client.listTools()).tools.map((t) => t.name)).toContain('team_state_set');
    expect(await planner.ok('whoami')).toMatchObject({ namespace: 'team', agent: 'planner', agentType: 'planner' });
    expect(await coder.ok('whoami')).toMatchObject({ namespace: 'team', agent: 'coder', agentType: 'reviewer' });

    await planner.ok('state_set', { key: 'task', value: 'write the parser' });
    expect(await coder.ok('state_get', { key: 'task' })).toMatchObject({ value: 'write the parser', updatedBy: 'planner' });
    await coder.ok('state_set', { key: 'task', value: 'parser written', ifVersion: 1 });
    expect(await planner.ok('state_get', { key: 'task' })).toMatchObject({ version: 2, updatedBy: 'coder' });

    // profile is each agent's own
    await planner.ok('state_set', { key: 'style', value: 'terse', scope: 'profile' });
    await coder.ok('state_set', { key: 'style', value: 'verbose', scope: 'profile' });
    expect((await planner.ok('state_get', { key: 'style', scope: 'profile' })).value).toBe('terse');
    expect((await coder.ok('state_get', { key: 'style', scope: 'profile' })).value).toBe('verbose');
    expect((await coder.ok('state_get', { key: 'style', scope: 'profile:planner' })).value).toBe('terse');
  });

  it('a read-only client can read and watch, and every write fails with FORBIDDEN, changing nothing', async () => {
    const planner = await agent('/mcp/team', bearer(PLANNER), 'team_');
    const auditor = await agent('/mcp/team', bearer(AUDITOR), 'team_');
    await planner.ok('state_set', { key: 'audited', value: { n: 1 } });
    const before = await auditor.ok('state_get', { key: 'audited' });
    expect(before).toMatchObject({ value: { n: 1 }, version: 1, updatedBy: 'planner' });

    const writes: [string, Record<string, unknown>][] = [
      ['state_set', { key: 'audited', value: 'tampered' }],
      ['state_delete', { key: 'audited' }],
      ['state_update', { key: 'audited', op: 'merge', value: { n: 2 } }],
      ['state_batch', { ops: [{ op: 'set', key: 'audited', value: 3 }] }],
      ['plan_create', { title: 'sneaky', steps: [{ content: 'x' }] }],
      ['history_append', { kind: 'note', content: 'x' }],
      ['run_start', {}],
    ];
    for (const [tool, args] of writes) {
      const error = await auditor.err(tool, args);
      expect(error.code, tool).toBe('FORBIDDEN');
      expect(error.message).toContain(`team_${tool}`);
    }
    expect(await planner.ok('state_get', { key: 'audited' })).toEqual(before);
    expect((await auditor.ok('plan_list')).plans).toEqual([]);
    expect((await auditor.ok('history_list')).entries ?? []).toEqual([]);

    // reads, watch and resources work
    const watching = auditor.ok('watch', { key: 'audited', afterVersion: 1, waitMs: 10_000 });
    await planner.ok('state_set', { key: 'audited', value: { n: 2 } });
    expect(await watching).toMatchObject({ value: { n: 2 }, version: 2, timedOut: false });
    const resource = await auditor.client.readResource({ uri: 'blackboard://team/global/audited' });
    expect(JSON.parse((resource.contents[0] as { text: string }).text)).toMatchObject({ n: 2 });
  });

  it('a namespace the client was not given is refused with 403; "*" reaches them all', async () => {
    const plannerDefault = await rawInitialize(s.port, bearer(PLANNER), '/mcp');
    expect(plannerDefault.status).toBe(403);
    expect(plannerDefault.body).toContain('may not use the default namespace');
    expect((await rawInitialize(s.port, bearer(PLANNER), '/mcp/other')).status).toBe(403);
    expect((await rawInitialize(s.port, bearer(PLANNER), '/mcp/team')).status).toBe(200);
    expect((await rawInitialize(s.port, bearer(CODER), '/mcp')).status).toBe(200);
    expect((await rawInitialize(s.port, bearer(AUDITOR), '/mcp/other')).status).toBe(200);
    expect((await rawInitialize(s.port, bearer(AUDITOR), '/mcp/Not-A-Namespace')).status).toBe(404);
    // namespaces never leak into each other
    const inOther = await agent('/mcp/team', bearer(CODER), 'team_');
    const inDefault = await agent('/mcp', bearer(CODER));
    await inOther.ok('state_set', { key: 'ns-check', value: 'team' });
    expect((await inDefault.ok('state_get', { key: 'ns-check' })).found).toBe(false);
  });

  it('identity headers: another agent name is 403, a malformed one is 400, thread and parent are taken', async () => {
    const claimed = await rawInitialize(s.port, { ...bearer(PLANNER), 'X-Blackboard-Agent': 'coder' }, '/mcp/team');
    expect(claimed.status).toBe(403);
    expect(claimed.body).toContain('belongs to agent \\"planner\\"');
    expect((await rawInitialize(s.port, { ...bearer(PLANNER), 'X-Blackboard-Agent-Type': 'coder' }, '/mcp/team')).status).toBe(403);
    expect((await rawInitialize(s.port, { ...bearer(PLANNER), 'X-Blackboard-Agent': 'planner' }, '/mcp/team')).status).toBe(200);
    const bad = await rawInitialize(s.port, { ...bearer(PLANNER), 'X-Blackboard-Thread': 'no spaces allowed' }, '/mcp/team');
    expect(bad.status).toBe(400);
    expect(bad.body).toContain('X-Blackboard-Thread');

    const parent = await agent('/mcp/team', { ...bearer(PLANNER), 'X-Blackboard-Thread': 'lead-1' }, 'team_');
    await parent.ok('state_set', { key: 'goal', value: 'ship', scope: 'thread' });
    const child = await agent(
      '/mcp/team',
      { ...bearer(CODER), 'X-Blackboard-Thread': 'child-1', 'X-Blackboard-Parent-Thread': 'lead-1' },
      'team_',
    );
    expect(await child.ok('whoami')).toMatchObject({ thread: 'child-1', parentThread: 'lead-1', delegateLevel: 1 });
    expect((await child.ok('state_get', { key: 'goal', scope: 'thread:lead-1' })).value).toBe('ship');
    const again = await agent('/mcp/team', { ...bearer(PLANNER), 'X-Blackboard-Thread': 'lead-1' }, 'team_');
    expect((await again.ok('state_get', { key: 'goal', scope: 'thread' })).value).toBe('ship');
    // in the tree it joined, another agent's child writes the tree's shared scope (as the README warns), not its threads
    await child.ok('state_set', { key: 'note', value: 'from the child', scope: 'parent' });
    expect((await again.ok('state_get', { key: 'note', scope: 'parent' })).value).toBe('from the child');
    expect(await child.err('state_set', { key: 'goal', value: 'x', scope: 'thread:lead-1' })).toMatchObject({ code: 'FORBIDDEN' });
    // a thread of one's own with no parent yet joins the same way; one with a parent keeps it
    const own = await agent('/mcp/team', { ...bearer(CODER), 'X-Blackboard-Thread': 'own-1' }, 'team_');
    await own.ok('state_set', { key: 'mine', value: 1, scope: 'thread' });
    const joined = await agent(
      '/mcp/team',
      { ...bearer(CODER), 'X-Blackboard-Thread': 'own-1', 'X-Blackboard-Parent-Thread': 'lead-1' },
      'team_',
    );
    expect(await joined.ok('whoami')).toMatchObject({ thread: 'own-1', parentThread: 'lead-1' });
    const moved = await agent(
      '/mcp/team',
      { ...bearer(CODER), 'X-Blackboard-Thread': 'own-1', 'X-Blackboard-Parent-Thread': 'child-1' },
      'team_',
    );
    expect(await moved.ok('whoami')).toMatchObject({ thread: 'own-1', parentThread: 'lead-1' });
  });

  it("a thread is a handle, not a credential: a client naming another's thread as its own reads it and writes nothing", async () => {
    const owner = await agent('/mcp/team', { ...bearer(PLANNER), 'X-Blackboard-Thread': 'plan-t9' }, 'team_');
    await owner.ok('state_set', { key: 'secret', value: 'planner only', scope: 'thread' });
    for (const era of ['modern', 'legacy'] as const) {
      // a thread the planner made, and the planner's default thread (which it never used)
      for (const thread of ['plan-t9', 'agent:planner']) {
        const intruder = await agent('/mcp/team', { ...bearer(CODER), 'X-Blackboard-Thread': thread }, 'team_', era);
        for (const [tool, args] of [
          ['state_set', { key: 'secret', value: 'coder was here', scope: 'thread' }],
          ['state_delete', { key: 'secret', scope: 'thread' }],
          ['final_answer_set', { content: 'hijacked' }],
          ['scratchpad_write', { kind: 'observation', value: 'x' }],
        ] as const) {
          expect(await intruder.err(tool, args), `${era} ${thread} ${tool}`).toMatchObject({
            code: 'FORBIDDEN',
            details: { thread, owner: 'planner' },
          });
        }
        if (thread === 'plan-t9') expect((await intruder.ok('state_get', { key: 'secret', scope: 'thread' })).value).toBe('planner only');
      }
    }
    expect((await owner.ok('state_get', { key: 'secret', scope: 'thread' })).value).toBe('planner only');
    const planner = await agent('/mcp/team', { ...bearer(PLANNER), 'X-Blackboard-Thread': 'agent:planner' }, 'team_');
    expect((await planner.ok('final_answer_get', { waitMs: 0 })).isSet).toBe(false);
    await planner.ok('final_answer_set', { content: 'mine' });
  });

  it("an agent type the auth file sets cannot be changed through a request's _meta: in a 2025 session, or in a batch", async () => {
    const meta = { 'blackboard/agentType': 'worker' };
    for (const era of ['modern', 'legacy'] as const) {
      const planner = await agent('/mcp/team', bearer(PLANNER), 'team_', era);
      // a 2026-07-28 request carries its identity itself; refused the same way as in a session: an error a model reads
      const r = await planner.client.callTool({ name: 'team_whoami', arguments: {}, _meta: meta });
      expect(r.isError, era).toBe(true);
      expect(JSON.parse((r.content as Array<{ text: string }>)[0].text).error).toMatchObject({ code: 'FORBIDDEN' });
      expect(await planner.ok('whoami')).toMatchObject({ agentType: 'planner' });
    }
    // a 2025 request without a session, as a one-item batch
    const call = { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'team_whoami', arguments: {}, _meta: meta } };
    const headers = { ...MCP_HEADERS, ...bearer(PLANNER), 'mcp-protocol-version': '2025-11-25' };
    const res = await raw(s.port, { path: '/mcp/team', headers, body: JSON.stringify([call]) });
    expect(res.body).not.toMatch(/"agentType\\?":\\?"worker/);
    expect(res.body).toMatch(/FORBIDDEN/);
  });

  it('an agent type the auth file sets cannot be changed by run_start either: FORBIDDEN, and mail to another type stays away', async () => {
    const worker = await agent('/mcp/team', { ...bearer(CODER), 'X-Blackboard-Agent-Type': 'worker' }, 'team_');
    await worker.ok('message_send', { to: 'agentType:worker', content: 'for workers only', waitForRecipient: true });
    for (const era of ['modern', 'legacy'] as const) {
      const planner = await agent('/mcp/team', bearer(PLANNER), 'team_', era);
      expect(await planner.err('run_start', { agentType: 'worker' }), era).toMatchObject({ code: 'FORBIDDEN' });
      expect(await planner.ok('whoami'), era).toMatchObject({ agentType: 'planner' });
      expect((await planner.ok('inbox', { waitMs: 0 })).messages, era).toEqual([]);
      // naming its own type is no change
      expect((await planner.ok('run_start', { agentType: 'planner' })).run, era).toBeTruthy();
    }
  });

  it('a session follows at most 1,000 resources: one client cannot make the server hold a watch per URI without end', async () => {
    const auditor = await agent('/mcp/team', bearer(AUDITOR), 'team_', 'legacy');
    const uri = (i: number) => `blackboard://team/global/followed-${i}`;
    for (let i = 0; i < 1000; i += 100) {
      await Promise.all(Array.from({ length: 100 }, (_, j) => auditor.client.subscribeResource({ uri: uri(i + j) })));
    }
    await auditor.client.subscribeResource({ uri: uri(0) }); // one already followed is no more
    await expect(auditor.client.subscribeResource({ uri: uri(1000) })).rejects.toThrow(/follows 1000 resources.*resources\/unsubscribe/);
    await auditor.client.unsubscribeResource({ uri: uri(0) });
    await auditor.client.subscribeResource({ uri: uri(1000) });
  }, 60_000);

  it("a client holds at most 32 listen streams: one client cannot take the server's listen capacity from the others", async () => {
    const auditor = await agent('/mcp/team', bearer(AUDITOR), 'team_', 'modern');
    const uris = ['blackboard://team/global/listened'];
    const streams = await Promise.all(Array.from({ length: 32 }, () => auditor.client.listen({ resourceSubscriptions: uris })));
    await expect(auditor.client.listen({ resourceSubscriptions: uris })).rejects.toThrow(/32 listen streams/);
    // another client still listens, and the first may again once one of its streams ends
    const planner = await agent('/mcp/team', bearer(PLANNER), 'team_', 'modern');
    const other = await planner.client.listen({ resourceSubscriptions: uris });
    await streams[0].close();
    for (let i = 0; ; i++) {
      const again = await auditor.client.listen({ resourceSubscriptions: uris }).catch(() => undefined);
      if (again) {
        streams.push(again);
        break;
      }
      expect(i).toBeLessThan(50);
      await new Promise((r) => setTimeout(r, 50));
    }
    await Promise.all([...streams.slice(1), other].map((x) => x.close()));
  });

  it('401 carries WWW-Authenticate: Bearer; a session is bound to its token and its path', async () => {
    for (const headers of [{}, bearer('not-a-token-of-this-server'), { authorization: 'Basic abc' }]) {
      const res = await rawInitialize(s.port, headers, '/mcp/team');
      expect(res.status).toBe(401);
      expect(String(res.headers['www-authenticate'])).toMatch(/^Bearer /);
    }
    const { sessionId } = await rawInitialize(s.port, bearer(PLANNER), '/mcp/team');
    expect(sessionId).toBeTruthy();
    const list = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    const headers = { ...MCP_HEADERS, 'mcp-session-id': sessionId!, 'mcp-protocol-version': '2025-11-25' };
    expect((await raw(s.port, { path: '/mcp/team', headers: { ...headers, ...bearer(CODER) }, body: list })).status).toBe(403);
    expect((await raw(s.port, { path: '/mcp', headers: { ...headers, ...bearer(PLANNER) }, body: list })).status).toBe(400);
    expect((await raw(s.port, { path: '/mcp/team', headers: { ...headers, ...bearer(PLANNER) }, body: list })).status).toBe(200);
  });

  it('a 2026-07-28 client whose thread is recorded writes nothing when it only reads (each request opens its connection)', async () => {
    const writer = await agent('/mcp/team', bearer(CODER), 'team_', 'modern');
    await writer.ok('state_set', { key: 'read-often', value: 1 });
    const revision = await s.store.revision();
    for (let i = 0; i < 5; i++) expect((await writer.ok('state_get', { key: 'read-often' })).value).toBe(1);
    await writer.ok('whoami');
    expect(await s.store.revision()).toBe(revision);
  });

  it('a session that only connected and read leaves no thread record; its first write records it', async () => {
    const reader = await agent('/mcp/team', bearer(AUDITOR), 'team_', 'legacy');
    const writer = await agent('/mcp/team', bearer(CODER), 'team_', 'legacy');
    const threadRecord = async (who: HttpAgent) => {
      const id = await who.ok('whoami');
      const probe = new Session(s.store, { namespace: 'team', thread: id.thread, run: id.run, rootThread: id.thread, delegateLevel: 0 });
      return { id, record: await s.store.get(probe.threadKey(id.thread)) };
    };
    expect((await threadRecord(reader)).record).toBeUndefined();
    const before = await threadRecord(writer);
    expect(before.record).toBeUndefined();
    await writer.ok('state_set', { key: 'note', value: 1, scope: 'run' });
    const after = await threadRecord(writer);
    expect(after.record?.value).toMatchObject({ run: before.id.run, runs: 1 });
    expect(after.id.run).toBe(before.id.run); // the run it reported before writing is the run it wrote to
    expect((await writer.ok('state_get', { key: 'note', scope: 'run' })).value).toBe(1);
  });
});
