import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseConfig } from '../../src/config.js';

// The shipped client configs start this server with flags it accepts.
const root = join(import.meta.dirname, '..', '..');
const files = ['mcp.json', ...readdirSync(join(root, 'examples', 'clients')).map((f) => join('examples', 'clients', f))];

describe('client configurations', () => {
  it.each(files)('%s is valid JSON naming mcp-blackboard with valid flags', (file) => {
    const config = JSON.parse(readFileSync(join(root, file), 'utf8')) as Record<string, Record<string, { command?: string; args?: string[]; url?: string }>>;
    const servers = config.mcpServers ?? config.servers;
    expect(servers?.blackboard, file).toBeDefined();
    const server = servers.blackboard;
    if (server.url) {
      expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/);
      return;
    }
    expect(server.command).toBe('mcp-blackboard');
    expect(parseConfig(server.args ?? [], {}).kind).toBe('serve');
  });
});
