// The package as a user gets it: `npm pack`, installed from the tarball into a fresh directory, its bin run.
import { execFile } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';
import { describe, expect, it } from 'vitest';
import { tempDir } from '../contract/backends.js';
import { CLI } from '../helpers.js';

const run = promisify(execFile);
const root = join(import.meta.dirname, '..', '..');
const skip = process.env.CI_SKIP_PACK === '1';
const title = 'npm pack, npm install of the tarball in a fresh directory, and the installed bin answers --help and tools/list';

// npm passes its own run's details to scripts (`npm test`); the npm started here must see only the fresh directory.
const env = Object.fromEntries(
  Object.entries(process.env).filter(([k]) => !/^(npm_(lifecycle|package|command|execpath|node_execpath|config_local_prefix)|INIT_CWD$)/i.test(k)),
) as Record<string, string>;

describe('the npm package', () => {
  if (skip) {
    it.skip(`${title} (skipped because CI_SKIP_PACK=1)`, () => {});
    return;
  }

  it(title, async () => {
    expect(existsSync(CLI), 'build first: npm run build').toBe(true);
    const out = tempDir();
    // The build is already there (npm test builds first); running `prepare` again would rebuild dist under the
    // feet of the other test files.
    const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', out], { cwd: root, env });
    const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string; mode: number }> }>;
    const paths = info.files.map((f) => f.path).sort();
    // Only what a user needs: the compiled code, the README, the LICENSE and package.json.
    expect(paths.filter((p) => !p.startsWith('dist/'))).toEqual(['LICENSE', 'README.md', 'package.json']);
    expect(paths.filter((p) => p.startsWith('dist/') && !p.endsWith('.js') && !p.startsWith('dist/ui/assets/'))).toEqual([]);
    expect(paths.filter((p) => p.endsWith('.map'))).toEqual([]);
    expect(paths).toEqual(expect.arrayContaining(['dist/cli.js', 'dist/ui/assets/index.html']));
    expect(info.files.find((f) => f.path === 'dist/cli.js')!.mode & 0o111, 'dist/cli.js is executable').not.toBe(0);
    const tarball = join(out, info.filename);

    const fresh = tempDir();
    writeFileSync(join(fresh, 'package.json'), JSON.stringify({ name: 'fresh-install', private: true }));
    const started = Date.now();
    await run('npm', ['install', '--no-audit', '--no-fund', tarball], { cwd: fresh, env, timeout: 14 * 60_000 });
    console.log(`npm install of the tarball took ${((Date.now() - started) / 1000).toFixed(0)} s`);
    const bin = join(fresh, 'node_modules', '.bin', 'mcp-blackboard');
    const installed = join(fresh, 'node_modules', 'mcp-blackboard');
    expect(JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')).bin).toEqual({ 'mcp-blackboard': 'dist/cli.js' });

    const help = await run('npx', ['mcp-blackboard', '--help'], { cwd: fresh, env });
    expect(help.stdout).toMatch(/^mcp-blackboard \d+\.\d+\.\d+ - /);
    expect(help.stdout).toContain('mcp-blackboard export');
    const exportHelp = await run(bin, ['export', '--help'], { cwd: fresh, env });
    expect(exportHelp.stdout).toMatch(/^Usage: mcp-blackboard export/);

    // A real client over stdio, on a SQLite file: the native driver was built or fetched by the install.
    const transport = new StdioClientTransport({ command: bin, args: ['--store', `sqlite://${join(fresh, 'board.db')}`], cwd: fresh, env, stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (c: Buffer) => (stderr += c.toString()));
    const client = new Client({ name: 'pack-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['state_get', 'state_set', 'watch']));
      const set = await client.callTool({ name: 'state_set', arguments: { key: 'installed', value: true } });
      expect(set.isError, JSON.stringify(set.content)).toBeFalsy();
    } finally {
      await client.close();
    }
    expect(stderr).toContain(`store=sqlite://${join(fresh, 'board.db')}`);
  }, 15 * 60_000);
});
