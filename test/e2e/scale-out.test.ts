// Scale-out: three --http processes on one shared store behind nginx round-robin (no sticky sessions), 32 clients of
// both protocol revisions, one process killed mid-run. Nothing acknowledged is lost; retries apply once.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { Client as V1Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as V1HttpTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { afterAll, describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { Agent, CLI, newClient, sleep } from '../helpers.js';
import { sharedStores } from '../stores.js';

const NGINX = ['/usr/sbin/nginx', '/usr/bin/nginx'].find((p) => spawnSync(p, ['-v']).status === 0);
const TOKEN = 'scale-out-token-0123456789';
const CLIENTS = 32;
const OPS = 8;
const running: ChildProcess[] = [];
/** nginx stops its workers itself on SIGTERM; after a SIGKILL of its master they would be left running */
const graceful = new Set<ChildProcess>();
afterAll(() => {
  for (const child of running) if (child.exitCode === null) child.kill(graceful.has(child) ? 'SIGTERM' : 'SIGKILL');
});

const freePort = (): Promise<number> =>
  new Promise((resolve) => {
    const server = createServer().listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });

async function startServer(store: string): Promise<{ child: ChildProcess; port: number }> {
  const child = spawn(process.execPath, [CLI, '--http', '0', '--store', store, '--token', TOKEN, '--max-sessions', '0', '--tools', 'all'], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  running.push(child);
  const port = await new Promise<number>((resolve, reject) => {
    let err = '';
    child.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      const m = /at http:\/\/127\.0\.0\.1:(\d+)\/mcp/.exec(err);
      if (m) resolve(Number(m[1]));
    });
    child.on('exit', (code) => reject(new Error(`server exited ${code}: ${err}`)));
  });
  return { child, port };
}

/** nginx on loopback, round-robin over `ports`, in its own temp dir (config, pid file, temp paths, logs). */
async function startNginx(ports: number[]): Promise<number> {
  const dir = tempDir();
  for (const sub of ['body', 'proxy', 'fastcgi', 'uwsgi', 'scgi']) mkdirSync(join(dir, sub));
  const port = await freePort();
  const conf = `
${process.getuid?.() === 0 ? 'user root;' : ''}
worker_processes 1;
daemon off;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log;
events { worker_connections 1024; }
http {
  access_log off;
  client_body_temp_path ${dir}/body; proxy_temp_path ${dir}/proxy; fastcgi_temp_path ${dir}/fastcgi;
  uwsgi_temp_path ${dir}/uwsgi; scgi_temp_path ${dir}/scgi;
  upstream blackboard { ${ports.map((p) => `server 127.0.0.1:${p} max_fails=1 fail_timeout=300s;`).join(' ')} }
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://blackboard;
      proxy_http_version 1.1;
      proxy_set_header Connection "";
      proxy_set_header Host $http_host;
      proxy_buffering off;
      proxy_read_timeout 120s;
    }
  }
}`;
  writeFileSync(join(dir, 'nginx.conf'), conf);
  const child = spawn(NGINX!, ['-p', dir, '-c', join(dir, 'nginx.conf')], { stdio: ['ignore', 'ignore', 'pipe'] });
  running.push(child);
  graceful.add(child);
  for (let i = 0; i < 100; i++) {
    const up = await fetch(`http://127.0.0.1:${port}/mcp`).then(
      () => true,
      () => false,
    );
    if (up) return port;
    await sleep(50);
  }
  throw new Error('nginx did not start');
}

/** Calls until the call is answered (a process may die under it), always with the same arguments. */
async function until<T>(agent: Agent, name: string, args: Record<string, unknown>): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      const result = await agent.raw(name, args);
      if (!result.isError) return result.structuredContent as T;
      const body = JSON.parse((result.content as { text: string }[])[0].text) as { error: { code: string } };
      if (body.error.code !== 'STORE_UNAVAILABLE') throw new Error(`${name}: ${JSON.stringify(body)}`);
    } catch (error) {
      if (attempt >= 30 || (error instanceof Error && error.message.startsWith(`${name}:`))) throw error;
    }
    await sleep(100);
  }
}

const stores = sharedStores().filter((s) => s.name !== 'sqlite');

describe.skipIf(!NGINX)('scale-out behind nginx round-robin (nginx is not installed: skipped)', () => {
  for (const store of stores) {
    it(`three --http processes on one ${store.name} store: 32 clients of both revisions, one process killed`, async () => {
      const url = store.fresh();
      const servers = [await startServer(url), await startServer(url), await startServer(url)];
      const port = await startNginx(servers.map((s) => s.port));
      const endpoint = new URL(`http://127.0.0.1:${port}/mcp`);
      const headers = { authorization: `Bearer ${TOKEN}` };
      const clients: Agent[] = [];
      for (let i = 0; i < CLIENTS; i++) {
        if (i % 2 === 0) {
          const client = newClient('modern', `m${i}`);
          await client.connect(
            new StreamableHTTPClientTransport(endpoint, { requestInit: { headers: { ...headers, 'x-blackboard-agent': `m${i}` } } }),
          );
          clients.push(new Agent(client));
        } else {
          const client = new V1Client({ name: `l${i}`, version: '1' });
          await client.connect(new V1HttpTransport(endpoint, { requestInit: { headers: { ...headers, 'x-blackboard-agent': `l${i}` } } }));
          clients.push(new Agent(client as never));
        }
      }
      const [first] = clients;
      const { planId } = await until<{ planId: string }>(first, 'plan_create', {
        title: 'scale',
        steps: Array.from({ length: CLIENTS }, (_, i) => `s${i}`),
        idempotencyKey: 'plan',
      });
      const { revision: start } = await until<{ revision: number }>(first, 'state_changes', {});

      // a follower of the change log and a watcher, each served by whichever process nginx picks
      const seen = new Map<number, number>(); // version of "hits" -> times seen
      let following = true;
      const follower = (async () => {
        let after = start;
        while (following) {
          const page = await until<{ changes: { key: string; version: number }[]; revision: number }>(clients[2], 'state_changes', {
            afterRevision: after,
            waitMs: 500,
            limit: 500,
          });
          for (const c of page.changes) if (c.key === 'hits') seen.set(c.version, (seen.get(c.version) ?? 0) + 1);
          after = page.revision;
        }
      })();
      const watched = until<{ found: boolean; value: unknown; timedOut: boolean }>(clients[4], 'watch', { key: 'bell', waitMs: 50_000 });
      await sleep(300);

      let done = 0;
      const claimed: string[] = [];
      const work = clients.map(async (agent, i) => {
        const { step } = await until<{ claimed: boolean; step?: { id?: string; stepId?: string } }>(agent, 'plan_claim', {
          planId,
          idempotencyKey: `claim-${i}`,
        });
        claimed.push(String(step?.stepId ?? step?.id));
        for (let n = 0; n < OPS; n++) {
          await until(agent, 'state_update', { key: 'hits', op: 'increment', value: 1, idempotencyKey: `hit-${i}-${n}` });
          if (++done === Math.floor((CLIENTS * OPS) / 3)) servers[1].child.kill('SIGKILL'); // a third of the way in
        }
      });
      await until(clients[5], 'state_set', { key: 'bell', value: 'rung', idempotencyKey: 'bell' });
      await Promise.all(work);
      expect(servers[1].child.killed).toBe(true); // killed mid-run, its clients' calls retried elsewhere

      const hits = await until<{ value: number; version: number }>(first, 'state_get', { key: 'hits' });
      expect(hits.value).toBe(CLIENTS * OPS); // every acknowledged increment, each retry applied once
      expect(new Set(claimed).size).toBe(CLIENTS); // no step claimed twice
      expect(await watched).toMatchObject({ found: true, value: 'rung', timedOut: false });
      await sleep(1500);
      following = false;
      await follower;
      expect([...seen.keys()].sort((a, b) => a - b)).toEqual(Array.from({ length: hits.version }, (_, k) => k + 1)); // no change missed
      expect([...seen.values()].every((n) => n === 1)).toBe(true); // nor seen twice
    }, 240_000);
  }
});
