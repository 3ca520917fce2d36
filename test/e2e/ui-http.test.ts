import type { ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { BlackboardError } from '../../src/errors.js';
import { openStore } from '../../src/store/open.js';
import { fileAuth } from '../../src/ui/auth.js';
import { createBoardHandler } from '../../src/ui/handler.js';
import { FAMILY, PLAN_OWNER, ofOwner } from '../../src/ui/layout.js';
import { tempDir } from '../contract/backends.js';
import { startUi as startBoard } from './ui-helpers.js';
import { agentsClosedAfterEach, memoryStore, runCli } from '../helpers.js';

// The board over real HTTP, without a browser: the token cookie, Host and Origin checks, the subcommand's flags, and
// the handler mounted in another server (as the HTTP transport mounts it at GET /).
const children: ChildProcess[] = [];
afterAll(() => {
  for (const child of children) child.kill();
});

async function startUi(args: string[]): Promise<string> {
  // The board never creates a store: make one first.
  const url = `sqlite://${join(tempDir(), 'ui.db')}`;
  await (await openStore(url)).close();
  const ui = await startBoard(['--store', url, '--port', '0', ...args]);
  children.push(ui.child);
  return ui.url;
}

/** The board's event stream read as it comes: `until` waits for what it has sent so far to match `pattern`. */
function eventStream(events: Response) {
  const reader = events.body!.getReader();
  let text = '';
  const until = async (pattern: RegExp | ((text: string) => boolean)): Promise<void> => {
    while (!(typeof pattern === 'function' ? pattern(text) : pattern.test(text))) {
      const { done, value } = await reader.read();
      if (done) throw new Error(`the stream ended before ${pattern}: ${text}`);
      text += new TextDecoder().decode(value);
    }
  };
  /** the data of each change event so far */
  const changes = (): Array<{ sections: string[] }> =>
    [...text.matchAll(/event: change\ndata: (\{[^\n]*\})/g)].map((m) => JSON.parse(m[1]));
  return { until, reader, changes };
}

/** A raw GET with exactly the headers given (fetch would not let a test set Host). */
function get(
  url: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { headers }, (res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('ui subcommand flags', () => {
  it('ui --help lists every flag; bad flags are one line and exit 2', async () => {
    const help = await runCli(['ui', '--help']);
    expect(help.code).toBe(0);
    for (const flag of ['--store', '--namespace', '--port', '--host', '--token', '--auth']) expect(help.stdout).toContain(flag);
    expect((await runCli(['--help'])).stdout).toContain('mcp-blackboard ui');

    for (const [args, message] of [
      [['ui', '--port', 'x'], '--port must be a whole number'],
      [['ui', '--namespace', 'Bad'], '--namespace "Bad" must match'],
      [['ui', '--bogus'], 'unknown flag --bogus. Run mcp-blackboard ui --help for the flags.'],
      [['ui', '--token', 'a', '--auth', 'f.json'], 'not both'],
      [['ui', '--host', '0.0.0.0'], '--host 0.0.0.0 reaches beyond this machine: give --token or --auth'],
    ] as const) {
      const run = await runCli([...args], undefined, { BLACKBOARD_TOKEN: '' });
      expect(run.code, args.join(' ')).toBe(2);
      expect(run.stderr).toContain(message);
      expect(run.stderr.trim().split('\n')).toHaveLength(1);
      expect(run.stdout).toBe('');
    }
  });

  it('a malformed auth file stops start-up with one line naming the problem', async () => {
    const file = join(tempDir(), 'auth.json');
    // The same parser as the MCP endpoint's --auth: a client without a token is named, at its place in the file.
    writeFileSync(file, JSON.stringify({ clients: [{ agent: 'a', namespaces: ['team'], access: 'read' }] }));
    const run = await runCli(['ui', '--auth', file, '--port', '0']);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('malformed at clients[0]: give exactly one of token and tokenSha256');
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });

  it('a port in use is one line and exit 1', async () => {
    const url = await startUi([]);
    const run = await runCli(['ui', '--port', new URL(url).port, '--store', 'memory://']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/port \d+ is in use/);
    expect(run.stderr.trim().split('\n')).toHaveLength(1);
  });
});

describe('ui token, Host and Origin checks', () => {
  it('with --token: 401 without it, ?token= once sets an HttpOnly SameSite=Strict cookie that is not the token', async () => {
    const token = 'board-secret-1';
    const url = await startUi(['--token', token]);
    const gate = await get(url);
    expect(gate.status).toBe(401);
    expect(gate.headers['www-authenticate']).toBe('Bearer');
    expect(gate.body).toContain('?token=');
    expect((await get(`${url}board/api/board?ns=-`)).status).toBe(401);
    expect((await get(`${url}?token=wrong`)).status).toBe(401);

    const login = await get(`${url}?token=${token}&ns=-`);
    expect(login.status).toBe(303);
    expect(login.headers.location).toBe('/?ns=-');
    const cookie = (login.headers['set-cookie'] as string[])[0];
    expect(cookie).toMatch(new RegExp(`^bb_board_${new URL(url).port}=[A-Za-z0-9_-]+; HttpOnly; SameSite=Strict; Path=/$`));
    const value = cookie.split(';')[0];
    expect(value).not.toContain(token);

    const page = await get(url, { cookie: value });
    expect(page.status).toBe(200);
    expect(page.headers['content-security-policy']).toContain("default-src 'none'");
    expect((await get(`${url}board/api/board?ns=-`, { cookie: value })).status).toBe(200);
    expect((await get(`${url}board/api/board?ns=-`, { cookie: `bb_board_${new URL(url).port}=AAAA` })).status).toBe(401);
    expect((await get(`${url}board/api/board?ns=-`, { authorization: `Bearer ${token}` })).status).toBe(200);
  });

  it('two boards on one host: signing in to one keeps you signed in to the other (a browser keeps cookies by host, not port)', async () => {
    const urls = [await startUi(['--token', 'board-one-secret']), await startUi(['--token', 'board-two-secret'])];
    // the browser's jar for this host: a cookie of the same name replaces the one before, whichever port set it
    const jar = new Map<string, string>();
    for (const [i, url] of urls.entries()) {
      const login = await get(`${url}?token=board-${i === 0 ? 'one' : 'two'}-secret&ns=-`);
      const [name, value] = (login.headers['set-cookie'] as string[])[0].split(';')[0].split('=');
      jar.set(name, value);
    }
    const cookie = [...jar].map(([name, value]) => `${name}=${value}`).join('; ');
    for (const url of urls) expect((await get(`${url}board/api/board?ns=-`, { cookie })).status, url).toBe(200);
  });

  it('with --auth: each client sees only its namespaces', async () => {
    const file = join(tempDir(), 'auth.json');
    const hashed = createHash('sha256').update('ops-token').digest('hex');
    writeFileSync(file, JSON.stringify({ clients: [{ tokenSha256: hashed, agent: 'auditor', namespaces: ['ops'], access: 'read' }] }));
    const url = await startUi(['--auth', file]);
    const auth = { authorization: 'Bearer ops-token' };
    expect((await get(`${url}board/api/board?ns=ops`, auth)).status).toBe(200);
    expect((await get(`${url}board/api/board?ns=team`, auth)).status).toBe(403);
    expect((await get(`${url}board/api/board?ns=-`, auth)).status).toBe(403);
    expect((await get(`${url}board/api/board?ns=Bad!`, auth)).status).toBe(400);
    // a client limited to some namespaces is not told where the store is
    const meta = JSON.parse((await get(`${url}board/api/namespaces`, auth)).body) as Record<string, unknown>;
    expect(meta).toHaveProperty('defaultNamespace');
    expect(meta).not.toHaveProperty('store');
    // its namespace holds nothing yet: the page still opens on it, not on a namespace the token cannot see
    expect(meta).toMatchObject({ namespaces: [], initial: 'ops' });
  });

  it('SIGHUP re-reads the auth file (a removed token is refused, a new one let in; a malformed file is not taken), and never stops the board', async () => {
    const file = join(tempDir(), 'auth.json');
    const entry = (token: string) => ({
      tokenSha256: createHash('sha256').update(token).digest('hex'),
      agent: 'auditor',
      namespaces: ['ops'],
      access: 'read',
    });
    writeFileSync(file, JSON.stringify({ clients: [entry('old-token-0123456789')] }));
    const url = await startUi(['--auth', file]);
    const child = children.at(-1)!;
    const status = async (token: string) => (await get(`${url}board/api/board?ns=ops`, { authorization: `Bearer ${token}` })).status;
    expect(await status('old-token-0123456789')).toBe(200);

    writeFileSync(file, JSON.stringify({ clients: [entry('new-token-0123456789')] }));
    child.kill('SIGHUP');
    for (let i = 0; i < 100 && (await status('new-token-0123456789')) !== 200; i++) await new Promise((r) => setTimeout(r, 50));
    expect(await status('new-token-0123456789')).toBe(200);
    expect(await status('old-token-0123456789')).toBe(401);

    writeFileSync(file, '{"clients": []}');
    child.kill('SIGHUP');
    await new Promise((r) => setTimeout(r, 300));
    expect(child.exitCode).toBeNull();
    expect(child.signalCode).toBeNull();
    expect(await status('new-token-0123456789')).toBe(200);
  });

  it('refuses a non-loopback Host and a foreign Origin on a loopback bind', async () => {
    const url = await startUi([]);
    const { port } = new URL(url);
    expect((await get(url)).status).toBe(200);
    expect((await get(url, { host: `localhost:${port}` })).status).toBe(200);
    expect((await get(url, { host: `evil.example:${port}` })).status).toBe(403);
    expect((await get(`${url}board/api/namespaces`, { origin: 'http://evil.example' })).status).toBe(403);
    const same = await get(`${url}board/api/namespaces`, { origin: `http://127.0.0.1:${port}` });
    expect(same.status).toBe(200);
    // a viewer who may see every namespace is told where the store is
    expect(JSON.parse(same.body).store).toMatch(/^sqlite:/);
    expect((await get(`${url}nothing-here`)).status).toBe(404);
  });
});

describe('createBoardHandler mounted in another server', () => {
  const connect = agentsClosedAfterEach();
  let server: Server | undefined;
  let close: (() => void) | undefined;
  afterEach(async () => {
    close?.();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
  });

  it('serves / and /board/…, leaves other paths to the server, and tells a stream about in-process writes', async () => {
    const store = memoryStore();
    const agent = await connect({ store, config: { namespace: 'team', agent: 'planner' } });
    const board = createBoardHandler({ store, namespace: 'team' });
    close = board.close;
    server = createServer((req, res) => {
      void board(req, res).then((handled) => {
        if (!handled) res.writeHead(418).end('mine');
      });
    });
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    expect((await fetch(`${base}/mcp`)).status).toBe(418);
    expect((await fetch(`${base}/`)).headers.get('content-type')).toContain('text/html');
    // every file of the page (its modules, styles and icon) is served beside it, whatever it is named; the page only at /
    const assets = join(import.meta.dirname, '..', '..', 'src', 'ui', 'assets');
    const types: Record<string, string> = { js: 'text/javascript', css: 'text/css', svg: 'image/svg+xml' };
    for (const file of readdirSync(assets).filter((f) => f !== 'index.html')) {
      const res = await fetch(`${base}/board/${file}`);
      expect([file, res.status, res.headers.get('content-type')]).toEqual([
        file,
        200,
        expect.stringContaining(types[file.split('.').pop()!]),
      ]);
      expect(await res.text()).toBe(readFileSync(join(assets, file), 'utf8'));
    }
    expect((await fetch(`${base}/board/index.html`)).status).toBe(404);
    const meta = (await (await fetch(`${base}/board/api/namespaces`)).json()) as { namespaces: string[]; initial: string };
    expect(meta).toMatchObject({ namespaces: ['team'], initial: 'team' });

    const events = await fetch(`${base}/board/api/events?ns=team`);
    expect(events.headers.get('content-type')).toContain('text/event-stream');
    const { until, reader } = eventStream(events);
    await until(/event: hello/);
    await agent.ok('state_set', { key: 'k', value: 1 });
    // (a caller's first call also records its sign of life, which the threads section shows)
    // the changed key comes with the event (a page patches that row and re-reads nothing)
    await until(
      /event: change\ndata: \{"revision":\d+,"sections":\[[^\]]*"scopes"[^\]]*\],"keys":\[\{"scope":"global","key":"k","value":"1"/,
    );
    await agent.ok('plan_create', { title: 'p', steps: ['a'] });
    await until(/"sections":\["plans"(,"threads")?\]/);
    await reader.cancel();

    const view = (await (await fetch(`${base}/board/api/board?ns=team&sections=scopes,plans`)).json()) as {
      scopes: Array<{ scope: string; keys: Array<{ key: string; value: string }> }>;
      plans: Array<{ title: string }>;
      threads?: unknown;
    };
    expect(view.scopes).toEqual([
      { scope: 'global', keys: [expect.objectContaining({ key: 'k', value: '1', version: 1, updatedBy: 'planner' })] },
    ]);
    expect(view.plans.map((p) => p.title)).toEqual(['p']);
    expect(view.threads).toBeUndefined();
  });

  it("re-reads plans on a caller's sign of life only when the caller holds a claim; threads and roster read no plan", async () => {
    const store = memoryStore();
    // a 4 s lease: each caller's sign of life is written at most once a second
    const config = { namespace: 'team', claimLeaseSeconds: 4 };
    const lead = await connect({ store, config: { ...config, agent: 'lead' } });
    const worker = await connect({ store, config: { ...config, agent: 'w1' } });
    const { planId } = await lead.ok('plan_create', { title: 'p', steps: ['a'] });
    await worker.ok('plan_claim', { planId, stepId: 's1' });
    const bystander = await connect({ store, config: { ...config, agent: 'by' } });
    await bystander.ok('whoami');
    // the board's reads of plans, counted at the store (a read of one changed plan counts too)
    const plans = ofOwner('team', FAMILY.plan, PLAN_OWNER);
    let planReads = 0;
    const list = store.list.bind(store);
    store.list = (query) => {
      if (query.lo >= plans.lo && query.lo < plans.hi) planReads++;
      return list(query);
    };
    const board = createBoardHandler({ store, namespace: 'team' });
    close = board.close;
    server = createServer((req, res) => void board(req, res));
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    type View = {
      team: { roster: Array<{ agent: string; holding: unknown[] }> };
      threads: Array<{ agent?: string; holds?: Array<{ step: string; leaseUntil: number }> }>;
      plans?: Array<{ steps: Array<{ claim?: { leaseUntil: number } }> }>;
    };
    const read = async (sections: string): Promise<View> =>
      (await (await fetch(`${base}/board/api/board?ns=team&sections=${sections}`)).json()) as View;
    const whole = await read('plans,threads');
    const { until, reader, changes } = eventStream(await fetch(`${base}/board/api/events?ns=team`));
    await until(/event: hello/);
    let seen = 0;
    /** the sections of the next change event */
    const next = async (): Promise<string[]> => {
      await until(() => changes().length > seen);
      return changes()[seen++].sections;
    };
    const renewed = () => new Promise((r) => setTimeout(r, 1100));
    // a caller holding nothing: its sign of life moves the threads (its last call, the roster), not the plans
    await renewed();
    await bystander.ok('state_get', { key: 'x' });
    expect(await next()).toEqual(['threads']);
    planReads = 0;
    const threads = await read('threads');
    expect(planReads).toBe(0);
    expect(threads.plans).toBeUndefined();
    // what they show of claims is what the plans show
    expect(Object.fromEntries(threads.team.roster.map((a) => [a.agent, a.holding]))).toEqual({
      by: [],
      w1: [{ planId, stepId: 's1' }],
      lead: [],
    });
    const holds = (view: View) => view.threads.find((t) => t.agent === 'w1')?.holds;
    expect(holds(threads)).toEqual([{ planId, step: 's1', leaseUntil: whole.plans![0].steps[0].claim!.leaseUntil }]);
    expect(holds(whole)).toEqual(holds(threads));
    // the holder's sign of life renews the lease the plans show
    await renewed();
    await worker.ok('state_get', { key: 'x' });
    expect(await next()).toEqual(['threads', 'plans']);
    const renewedView = await read('plans,threads');
    expect(renewedView.plans![0].steps[0].claim!.leaseUntil).toBeGreaterThan(whole.plans![0].steps[0].claim!.leaseUntil);
    expect(holds(renewedView)![0].leaseUntil).toBe(renewedView.plans![0].steps[0].claim!.leaseUntil);
    // once it gave the step back, its signs of life move the threads only again
    await worker.ok('plan_step', { planId, stepId: 's1', status: 'pending' });
    expect(await next()).toContain('plans');
    await renewed();
    await worker.ok('state_get', { key: 'x' });
    expect(await next()).toEqual(['threads']);
    expect(holds(await read('threads'))).toBeUndefined();
    await reader.cancel();
  });

  it("keeps at most 128 characters of a client's name, however long a name the MCP client sent", async () => {
    const store = memoryStore();
    const hog = await connect({ store, config: { agent: 'hog' }, era: 'legacy', clientName: `huge-${'x'.repeat(600_000)}` });
    await hog.ok('state_set', { key: 'k', value: 1 });
    const board = createBoardHandler({ store });
    close = board.close;
    server = createServer((req, res) => void board(req, res));
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const view = (await (await fetch(`${base}/board/api/board?ns=-&sections=threads`)).json()) as {
      team: { roster: Array<{ agent: string; client: string }> };
    };
    const shown = view.team.roster.find((a) => a.agent === 'hog')!.client;
    expect(shown).toBe(`huge-${'x'.repeat(123)}…`);
    const { agents } = await hog.ok('team_list', {});
    expect(agents.find((a: { agent: string }) => a.agent === 'hog').client).toBe(shown);
  });

  it('shows a deeply nested value cut, though its indented text would be longer than any string can be', async () => {
    const limit = 16 * 1024 * 1024;
    const store = memoryStore(limit);
    const agent = await connect({ store, config: { agent: 'nester', maxValueBytes: limit } });
    // 10 MB of JSON, 63 levels deep: indented two spaces a level, its text is about 655 million characters
    let value: unknown = new Array(5_000_000).fill(0);
    for (let i = 0; i < 62; i++) value = [value];
    await agent.ok('state_set', { key: 'deep', value });
    await agent.ok('state_set', { key: 'small', value: { a: [1, 'two'] } });
    const board = createBoardHandler({ store });
    close = board.close;
    server = createServer((req, res) => void board(req, res));
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const res = await fetch(`${base}/board/api/keys?ns=-`);
    expect(res.status).toBe(200);
    const { keys } = (await res.json()) as { keys: Array<{ key: string; value: string; size: number; cut: boolean }> };
    const deep = keys.find((k) => k.key === 'deep')!;
    expect(deep.cut).toBe(true);
    expect(deep.value.startsWith('[\n  [\n    [\n      [')).toBe(true);
    expect(deep.value).toHaveLength(4000);
    expect(deep.size).toBeGreaterThan(2 ** 29);
    expect(keys.find((k) => k.key === 'small')).toMatchObject({ value: JSON.stringify({ a: [1, 'two'] }, null, 2), cut: false, size: 33 });
  });

  it("tells where the failed store is (the SQLite file's path) only to a viewer who may see every namespace", async () => {
    const dir = tempDir();
    const db = join(dir, 'gone.db');
    const store = await openStore(`sqlite://${db}`);
    const file = join(dir, 'auth.json');
    const sha = (token: string): string => createHash('sha256').update(token).digest('hex');
    writeFileSync(
      file,
      JSON.stringify({
        clients: [
          { tokenSha256: sha('ops-token'), agent: 'ops', namespaces: ['ops'], access: 'read' },
          { tokenSha256: sha('root-token'), agent: 'root', namespaces: ['*'], access: 'read' },
        ],
      }),
    );
    const board = createBoardHandler({ store, auth: fileAuth(file) });
    close = () => {
      board.close();
      void store.close().catch(() => {});
    };
    server = createServer((req, res) => void board(req, res));
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const read = async (token: string): Promise<{ status: number; message: string }> => {
      const res = await fetch(`${base}/board/api/board?ns=ops`, { headers: { authorization: `Bearer ${token}` } });
      return { status: res.status, message: ((await res.json()) as { error?: { message: string } }).error?.message ?? '' };
    };
    expect((await read('ops-token')).status).toBe(200);
    rmSync(db);
    // the store notices a removed file within a second or so
    let seen = await read('root-token');
    for (let i = 0; i < 50 && seen.status === 200; i++) {
      await new Promise((r) => setTimeout(r, 100));
      seen = await read('root-token');
    }
    expect(seen).toMatchObject({ status: 503, message: expect.stringContaining(db) });
    expect(await read('ops-token')).toEqual({ status: 503, message: 'The store could not be read.' });
    const events = await fetch(`${base}/board/api/events?ns=ops`, { headers: { authorization: 'Bearer ops-token' } });
    const { until, reader } = eventStream(events);
    await until(/event: hello\ndata: \{"revision":null,"ok":false,"message":"The store could not be read\."\}/);
    await reader.cancel();
  });

  it('tells an open page when the store stops answering and when it is back, with nobody writing', async () => {
    // A page only reads on events: without this, a store that went away while nobody wrote left it saying "Live".
    const store = memoryStore();
    let down = false;
    const flaky = {
      list: store.list.bind(store),
      changes: store.changes.bind(store),
      subscribeRange: store.subscribeRange.bind(store),
      revision: () => (down ? Promise.reject(new BlackboardError('STORE_UNAVAILABLE', 'The store is down.')) : store.revision()),
    };
    const board = createBoardHandler({ store: flaky });
    close = board.close;
    server = createServer((req, res) => void board(req, res));
    await new Promise<void>((r) => server!.listen(0, '127.0.0.1', r));
    const events = await fetch(`http://127.0.0.1:${(server.address() as AddressInfo).port}/board/api/events`);
    const { until, reader } = eventStream(events);
    await until(/event: hello\ndata: \{"revision":0,"ok":true\}/);
    down = true;
    const t0 = Date.now();
    await until(/event: hello\ndata: \{"revision":null,"ok":false,"message":"The store is down\."\}/);
    expect(Date.now() - t0).toBeLessThan(5000);
    down = false;
    // back: a page re-reads the whole board on hello
    await until(/"ok":false[\s\S]*event: hello\ndata: \{"revision":0,"ok":true\}/);
    await reader.cancel();
  }, 15_000);
});
