import { readdirSync, readFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/cli/serve.js';
import { httpAgent, startHttp, writeAuthFile, type Served } from './http-helpers.js';

// The shipped client configs start this server with flags it accepts, or reach a real HTTP server with their headers.
const root = join(import.meta.dirname, '..', '..');
const files = ['mcp.json', ...readdirSync(join(root, 'examples', 'clients')).map((f) => join('examples', 'clients', f))];

interface ServerEntry {
  type?: string;
  command?: string;
  args?: string[];
  url?: string;
  headers?: Record<string, string>;
}
const entry = (file: string): ServerEntry => {
  const config = JSON.parse(readFileSync(join(root, file), 'utf8')) as Record<string, Record<string, ServerEntry>>;
  return (config.mcpServers ?? config.servers)?.blackboard;
};
const httpFiles = files.filter((f) => entry(f)?.url !== undefined);

/** The variable syntax of the client a file is named for: Claude Code `${VAR}` / `${VAR:-default}`, VS Code and Cursor `${env:VAR}`. */
function expand(file: string, text: string, env: Record<string, string>): string {
  const name = basename(file);
  const claude = name.startsWith('claude-code');
  expect(claude || name.startsWith('vscode') || name.startsWith('cursor'), `${file}: name it for the client whose syntax it uses`).toBe(
    true,
  );
  return text.replace(/\$\{([^}]*)\}/g, (_all, v: string) => {
    const m = claude ? /^([A-Z_][A-Z0-9_]*)(?::-(.*))?$/.exec(v) : /^env:([A-Z_][A-Z0-9_]*)()$/.exec(v);
    expect(m, `${file}: \${${v}} is not ${claude ? 'Claude Code' : 'VS Code/Cursor'} syntax`).toBeTruthy();
    return env[m![1]] ?? m![2] ?? '';
  });
}

describe('client configurations', () => {
  it.each(files)('%s is valid JSON naming mcp-blackboard with valid flags', (file) => {
    const server = entry(file);
    expect(server, file).toBeDefined();
    if (server.url) {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp(\/[a-z][a-z0-9_]{0,31})?$/);
      expect(server.headers?.Authorization).toMatch(/^Bearer \$\{/);
      return;
    }
    expect(server.command).toBe('mcp-blackboard');
    expect(parseConfig(server.args ?? [], {}).kind).toBe('serve');
  });

  describe('HTTP configs against a real server with an auth file', () => {
    const TOKEN = 'client-config-token-0123';
    let s: Served;
    beforeAll(async () => {
      s = await startHttp({ authFile: writeAuthFile([{ token: TOKEN, agent: 'coder', namespaces: ['*'], access: 'readwrite' }]) });
    });
    afterAll(() => s?.close());

    it.each(httpFiles)("%s: its URL path, token and headers open a session as the token's agent", async (file) => {
      const server = entry(file);
      const env = { BLACKBOARD_TOKEN: TOKEN };
      const headers = Object.fromEntries(Object.entries(server.headers ?? {}).map(([k, v]) => [k, expand(file, v, env)]));
      const url = new URL(expand(file, server.url!, env));
      const path = url.pathname;
      const namespace = /^\/mcp\/(.+)$/.exec(path)?.[1];
      const agent = await httpAgent(`${s.base}${path}`, headers, namespace ? `${namespace}_` : '');
      try {
        const me = await agent.ok('whoami');
        expect(me).toMatchObject({ agent: 'coder', namespace: namespace ?? null });
        if (headers['X-Blackboard-Agent-Type']) expect(me.agentType).toBe(headers['X-Blackboard-Agent-Type']);
        if (headers['X-Blackboard-Thread']) expect(me.thread).toBe(headers['X-Blackboard-Thread']);
      } finally {
        await agent.close();
      }
    });
  });
});
