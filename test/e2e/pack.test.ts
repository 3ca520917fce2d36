// The package as a user gets it: `npm pack`, installed from the tarball into a fresh directory, its bin run.
import { execFile } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
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
const title =
  'npm pack, npm install of the tarball in a fresh directory: the installed bin answers --help and tools/list; a strict TypeScript file using the library type-checks and runs on SQLite; deep imports fail';

// npm passes its own run's details to scripts (`npm test`); the npm started here must see only the fresh directory.
const env = Object.fromEntries(
  Object.entries(process.env).filter(
    ([k]) => !/^(npm_(lifecycle|package|command|execpath|node_execpath|config_local_prefix)|INIT_CWD$)/i.test(k),
  ),
) as Record<string, string>;

describe('the npm package', () => {
  if (skip) {
    it.skip(`${title} (skipped because CI_SKIP_PACK=1)`, () => {});
    return;
  }

  it(
    title,
    async () => {
      expect(existsSync(CLI), 'build first: npm run build').toBe(true);
      const out = tempDir();
      // The build is already there (npm test builds first); running `prepare` again would rebuild dist under the
      // feet of the other test files.
      const packed = await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', out], { cwd: root, env });
      const [info] = JSON.parse(packed.stdout) as Array<{ filename: string; files: Array<{ path: string; mode: number }> }>;
      const paths = info.files.map((f) => f.path).sort();
      // Only what a user needs: the compiled code, the README, the LICENSE and package.json.
      expect(paths.filter((p) => !p.startsWith('dist/'))).toEqual(['LICENSE', 'README.md', 'package.json']);
      // The declarations published are the public entry's and what it exposes, none of the implementation's.
      expect(paths.filter((p) => p.startsWith('dist/') && !p.endsWith('.js') && !p.startsWith('dist/ui/assets/'))).toEqual([
        'dist/api/index.d.ts',
        'dist/api/kv.d.ts',
        'dist/api/options.d.ts',
        'dist/api/plans.d.ts',
        'dist/api/records.d.ts',
        'dist/api/runs.d.ts',
        'dist/api/team.d.ts',
        'dist/errors.d.ts',
        'dist/index.d.ts',
      ]);
      expect(paths.filter((p) => p.endsWith('.map'))).toEqual([]);
      expect(paths).toEqual(expect.arrayContaining(['dist/cli.js', 'dist/ui/assets/index.html']));
      expect(info.files.find((f) => f.path === 'dist/cli.js')!.mode & 0o111, 'dist/cli.js is executable').not.toBe(0);
      const tarball = join(out, info.filename);

      const fresh = tempDir();
      writeFileSync(join(fresh, 'package.json'), JSON.stringify({ name: 'fresh-install', private: true }));
      const started = Date.now();
      const installEnv = { ...env, ...(await nativeDriverPrebuilt()) };
      await run('npm', ['install', '--no-audit', '--no-fund', tarball], { cwd: fresh, env: installEnv, timeout: 14 * 60_000 });
      console.log(`npm install of the tarball took ${((Date.now() - started) / 1000).toFixed(0)} s`);
      const bin = join(fresh, 'node_modules', '.bin', 'mcp-blackboard');
      const installed = join(fresh, 'node_modules', 'mcp-blackboard');
      expect(JSON.parse(readFileSync(join(installed, 'package.json'), 'utf8')).bin).toEqual({ 'mcp-blackboard': 'dist/cli.js' });

      const help = await run('npx', ['mcp-blackboard', '--help'], { cwd: fresh, env });
      expect(help.stdout).toMatch(/^mcp-blackboard \d+\.\d+\.\d+ - /);
      expect(help.stdout).toContain('mcp-blackboard export');
      const exportHelp = await run(bin, ['export', '--help'], { cwd: fresh, env });
      expect(exportHelp.stdout).toMatch(/^Usage: mcp-blackboard export/);

      // A real client over stdio, on a SQLite file: the native driver was unpacked (or built) by its install script.
      const transport = new StdioClientTransport({
        command: bin,
        args: ['--store', `sqlite://${join(fresh, 'board.db')}`],
        cwd: fresh,
        env,
        stderr: 'pipe',
      });
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

      await checkLibrary(fresh);
    },
    20 * 60_000,
  );
});

/**
 * The native SQLite driver is not compiled a second time in one test run (about two minutes of a CPU): the binary this
 * checkout's own install built is offered to the fresh install as a local prebuilt, which better-sqlite3's install
 * script (`prebuild-install`) unpacks as it would one downloaded from its releases. The file is named for this
 * checkout's better-sqlite3 version and this Node's ABI, so a fresh install that resolves another version does not
 * find it and builds from source.
 */
async function nativeDriverPrebuilt(): Promise<Record<string, string>> {
  const driver = join(root, 'node_modules', 'better-sqlite3');
  const binary = join(driver, 'build', 'Release', 'better_sqlite3.node');
  if (!existsSync(binary)) return {};
  const { version } = JSON.parse(readFileSync(join(driver, 'package.json'), 'utf8')) as { version: string };
  const prebuilds = tempDir();
  const stage = tempDir();
  mkdirSync(join(stage, 'build', 'Release'), { recursive: true });
  copyFileSync(binary, join(stage, 'build', 'Release', 'better_sqlite3.node'));
  const name = `better-sqlite3-v${version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`;
  await run('tar', ['-czf', join(prebuilds, name), '-C', stage, 'build']);
  return { npm_config_better_sqlite3_local_prebuilds: prebuilds };
}

/** What a TypeScript user of the library writes; each `@ts-expect-error` proves a type is real (not `any`). */
const USE_TS = `import { openBlackboard, createBlackboardServer, BlackboardError, type Blackboard, type Change } from 'mcp-blackboard';

const bb: Blackboard = await openBlackboard({ store: 'sqlite://lib.db', agent: 'typed' });
const { version } = await bb.kv.set({ key: 'k', value: { n: 1 }, ifVersion: 0 });
const n: number = version;
// @ts-expect-error a value is required
await bb.kv.set({ key: 'k' }).catch(() => {});
// @ts-expect-error versions are numbers
const s: string = version;
// @ts-expect-error no such update operation
await bb.kv.update({ key: 'k', op: 'multiply', value: 2 }).catch(() => {});
try {
  await bb.kv.set({ key: 'k', value: 2, ifVersion: 0 });
} catch (error) {
  if (!(error instanceof BlackboardError) || error.code !== 'VERSION_CONFLICT') throw error;
  console.log('conflict', error.code, JSON.stringify(error.details));
}
// the result types carry what the methods return: sizes, pages, skipped values, a wait that ended
const listed: number[] = (await bb.kv.list({})).keys.map((k) => k.bytes);
const page = await bb.kv.snapshot({ maxBytes: 1024 });
const more = page.nextCursor === undefined ? undefined : await bb.kv.snapshot({ maxBytes: 1024, cursor: page.nextCursor });
const skipped: number = (page.skipped ?? []).length + Object.keys(more?.entries ?? {}).length;
const ended: boolean | undefined = (await bb.kv.changes({ afterRevision: 0, limit: 1 })).timedOut;
console.log('typed', listed.length, skipped, ended);
const { planId } = await bb.plans.create({ title: 'p', steps: ['a'] });
const claim = await bb.plans.claim({ planId });
console.log('claimed', claim.claimed, claim.step?.id);
const { revision } = await bb.kv.changes();
const seen: Change[] = [];
const feed = (async () => {
  for await (const change of bb.changes({ afterRevision: revision })) if (seen.push(change) === 1) break;
})();
await bb.kv.update({ key: 'count', op: 'increment', value: 1 });
await feed;
console.log('change', seen[0].key, seen[0].revision > revision, n, typeof s);
// history and checkpoints page as their tools do
await bb.history.append({ kind: 'note', content: 'h' });
const events = await bb.history.list({ order: 'desc', limit: 1 });
const nextEvents: string | undefined = events.nextCursor;
const older = nextEvents === undefined ? [] : (await bb.history.list({ cursor: nextEvents })).entries;
await bb.checkpoints.save({});
const saved = await bb.checkpoints.list({ limit: 1 });
const nextSaved: string | undefined = saved.nextCursor;
const kept: true = (await bb.checkpoints.restore({ checkpointId: saved.checkpoints[0].checkpointId })).budgetsKept;
console.log('paged', older.length >= 0, nextSaved === undefined, kept);
const server = await createBlackboardServer({ store: 'memory://' });
console.log('server tools', server.tools.length > 10);
await server.close();
await bb.close();
`;

/** The library as installed: type-checked strictly, run on SQLite; nothing but the entry reachable. */
async function checkLibrary(fresh: string): Promise<void> {
  const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
  const compilerOptions = {
    target: 'ES2022',
    module: 'NodeNext',
    moduleResolution: 'NodeNext',
    lib: ['ES2022', 'DOM'],
    // a Node project has Node's types (the MCP SDK's declarations name Buffer); taken from this repository's install
    typeRoots: [join(root, 'node_modules', '@types')],
    types: ['node'],
    strict: true,
    noUnusedLocals: false,
    skipLibCheck: false,
  };
  writeFileSync(
    join(fresh, 'package.json'),
    JSON.stringify({
      name: 'fresh-install',
      private: true,
      type: 'module',
      dependencies: JSON.parse(readFileSync(join(fresh, 'package.json'), 'utf8')).dependencies,
    }),
  );
  writeFileSync(join(fresh, 'use.ts'), USE_TS);
  writeFileSync(join(fresh, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['use.ts'] }));
  await run(process.execPath, [tsc, '--noEmit', '-p', fresh], { cwd: fresh, env }).catch((error: { stdout: string }) => {
    throw new Error(`tsc --noEmit failed:\n${error.stdout}`);
  });
  await run(process.execPath, [tsc, '-p', fresh, '--outDir', join(fresh, 'out')], { cwd: fresh, env });
  const used = await run(process.execPath, [join(fresh, 'out', 'use.js')], { cwd: fresh, env });
  // the conflict carries the current version and, small as it is, the current value
  expect(used.stdout).toMatch(/conflict VERSION_CONFLICT \{(?=[^\n]*"currentVersion":1)(?=[^\n]*"current":)/);
  expect(used.stdout).toContain('claimed true s1');
  expect(used.stdout).toContain('change count true 1 number');
  expect(used.stdout).toContain('server tools true');
  expect(used.stdout).toContain('paged true true true');
  expect(existsSync(join(fresh, 'lib.db'))).toBe(true);

  // Deep imports fail, at run time and for the type checker; the package.json stays readable.
  const deep = await run(process.execPath, ['--input-type=module', '-e', "await import('mcp-blackboard/dist/server.js')"], {
    cwd: fresh,
    env,
  }).then(
    () => '',
    (error: { stderr: string }) => error.stderr,
  );
  expect(deep).toContain('ERR_PACKAGE_PATH_NOT_EXPORTED');
  await run(process.execPath, ['--input-type=module', '-e', "await import('mcp-blackboard/package.json', { with: { type: 'json' } })"], {
    cwd: fresh,
    env,
  });
  writeFileSync(join(fresh, 'deep.ts'), "import { createServer } from 'mcp-blackboard/dist/server.js';\nconsole.log(createServer);\n");
  writeFileSync(join(fresh, 'tsconfig.deep.json'), JSON.stringify({ compilerOptions, files: ['deep.ts'] }));
  const typed = await run(process.execPath, [tsc, '--noEmit', '-p', join(fresh, 'tsconfig.deep.json')], { cwd: fresh, env }).then(
    () => '',
    (error: { stdout: string }) => error.stdout,
  );
  expect(typed).toMatch(/deep\.ts.*error TS2307: Cannot find module 'mcp-blackboard\/dist\/server\.js'/);
}
