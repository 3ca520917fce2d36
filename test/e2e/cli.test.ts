// The CLI as a new user meets it: --help everywhere, and every mistake answered with one line and the right exit code.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { firstRunHint } from '../../src/transports/stdio.js';
import { tempDir } from '../contract/backends.js';
import { CLI, runCli } from '../helpers.js';

type Run = Awaited<ReturnType<typeof runCli>>;

/** Exit code `code`, nothing on stdout, exactly one line on stderr and no stack trace. */
function oneLine(r: Run, code: number): string {
  expect(r.code, r.stderr).toBe(code);
  expect(r.stdout).toBe('');
  expect(r.stderr.endsWith('\n')).toBe(true);
  expect(r.stderr.trimEnd().split('\n'), r.stderr).toHaveLength(1);
  expect(r.stderr).not.toMatch(/\n\s+at |Error:|node:internal/);
  return r.stderr;
}

// A stray success must not touch the user's default store: every run gets an in-memory one unless it says otherwise.
const cli = (args: string[], env: Record<string, string> = {}): Promise<Run> =>
  runCli(args, undefined, { BLACKBOARD_STORE: 'memory://', ...env });

describe('--help for every command', () => {
  it('the main --help lists the subcommands and how to get their help', async () => {
    for (const flag of ['--help', '-h']) {
      const r = await cli([flag]);
      expect(r.code).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout).toContain('mcp-blackboard export [--store URL] [--namespace NS] [--thread ID] > bundle.json');
      expect(r.stdout).toContain('mcp-blackboard import FILE [--store URL] [--namespace NS]');
      expect(r.stdout).toContain('mcp-blackboard ui [--store URL]');
      expect(r.stdout).toContain('mcp-blackboard COMMAND --help');
      expect(r.stdout).toContain('npx @modelcontextprotocol/inspector');
      expect(r.stdout).not.toContain('{commands}');
    }
  });

  it.each([
    ['export', ['--store URL', '--namespace NS', '--thread ID', 'never creates one']],
    ['import', ['FILE', '--store URL', '--namespace NS', 'changes nothing']],
    ['ui', ['--store URL', '--namespace NS', '--port P']],
  ])('%s --help prints its own flags', async (command, words) => {
    for (const flag of ['--help', '-h']) {
      const r = await cli([command, flag]);
      expect(r.code, r.stderr).toBe(0);
      expect(r.stderr).toBe('');
      expect(r.stdout).toMatch(new RegExp(`(^|\\n)Usage:\\s*mcp-blackboard ${command} `));
      for (const word of words) expect(r.stdout).toContain(word);
    }
  });
});

describe('a bad flag or value is one line and exit code 2', () => {
  it.each<[string, string[], RegExp, Record<string, string>?]>([
    ['a value outside its set, echoed as given', ['--sync', 'fast'], /--sync must be full or normal, got "fast"\.$/m],
    [
      'the same from the environment, naming the variable',
      [],
      /BLACKBOARD_SYNC must be full or normal, got "Fast"\./,
      { BLACKBOARD_SYNC: 'Fast' },
    ],
    ['a negative number', ['--max-iterations', '-1'], /--max-iterations must be a whole number from 0 to \d+, got "-1"\./],
    ['a negative number with =', ['--max-iterations=-1'], /--max-iterations must be a whole number from 0 to \d+, got "-1"\./],
    ['a word for a number', ['--max-iterations', 'ten'], /--max-iterations must be a whole number .*got "ten"/],
    ['a fraction', ['--keep-checkpoints', '2.5'], /--keep-checkpoints must be a whole number .*got "2\.5"/],
    [
      'a number from the environment',
      [],
      /BLACKBOARD_MAX_VALUE_BYTES must be a whole number .*got "-5"/,
      { BLACKBOARD_MAX_VALUE_BYTES: '-5' },
    ],
    [
      "a value limit too small for the server's own records",
      ['--max-value-bytes', '100'],
      /--max-value-bytes must be a whole number from 1024 to \d+, got "100"/,
    ],
    ['an empty token', ['--http', '0', '--token', ''], /--token must not be empty/],
    ['ui: an empty token', ['ui', '--token='], /^mcp-blackboard ui: --token must not be empty/],
    ['a port out of range', ['--http', '70000'], /--http must be a whole number from 0 to 65535, got "70000"/],
    ['an unknown tool family', ['--tools', 'kv,plannr'], /--tools: unknown tool, family or profile "plannr" \(did you mean planner\?\)/],
    ['two letters swapped', ['--tools', 'agnet'], /--tools: unknown tool, family or profile "agnet" \(did you mean agent\?\)/],
    ['a bad namespace', ['--namespace', 'Bad-NS'], /--namespace "Bad-NS" must match/],
    [
      'a store URL of no kind this program serves, its password masked',
      ['--store', 'mysql://u:Sup3r@h/db'],
      /--store "mysql:\/\/u:\*\*\*@h\/db" is not a store URL: use sqlite:/,
    ],
    [
      'the same from the environment',
      ['export'],
      /BLACKBOARD_STORE "mysql:\/\/h\/db" is not a store URL/,
      { BLACKBOARD_STORE: 'mysql://h/db' },
    ],
    ['a malformed budget', ['--budget', 'tokens'], /--budget "tokens" must look like NAME=MAX/],
    ['a missing value', ['--thread'], /--thread needs a value\. Run mcp-blackboard --help/],
    [
      'a value that looks like a flag',
      ['--thread', '-x'],
      /--thread needs a value; to give one that starts with "-", write --thread=VALUE/,
    ],
    ['an unknown flag', ['--nope'], /unknown flag --nope\. Run mcp-blackboard --help for the flags\./],
    ['a value for a switch', ['--allow-budget-admin=yes'], /--allow-budget-admin' does not take an argument/],
    ['an unknown command', ['serve'], /unknown command "serve"\. Commands: export, import, ui/],
    ['export: an unknown flag', ['export', '--nope'], /^mcp-blackboard export: unknown flag --nope\. Run mcp-blackboard export --help/],
    ['export: a missing value', ['export', '--thread'], /^mcp-blackboard export: --thread needs a value/],
    ['export: a bad namespace', ['export', '--namespace', 'NS!'], /--namespace "NS!" must match/],
    ['export: from a store that is always empty', ['export', '--store', 'memory://'], /memory:\/\/ is empty in a new process/],
    ['ui: a negative port', ['ui', '--port', '-1'], /^mcp-blackboard ui: --port must be a whole number from 0 to 65535, got "-1"\./],
    [
      'ui: a flag missing its value',
      ['ui', '--token', '-x'],
      /^mcp-blackboard ui: --token needs a value; to give one that starts with "-", write --token=VALUE\./,
    ],
    ['import: no file', ['import'], /^mcp-blackboard import: import takes one FILE \(or - for stdin\), got 0/],
    ['import: two files', ['import', 'a.json', 'b.json'], /takes one FILE .*got 2/],
    [
      'import: into a store that is gone when it exits',
      ['import', 'a.json', '--store', 'memory://'],
      /memory:\/\/ is gone when import exits: nothing would be kept/,
    ],
    [
      'import: the same from the environment',
      ['import', 'a.json'],
      /memory:\/\/ is gone when import exits/,
      { BLACKBOARD_STORE: 'memory:' },
    ],
  ])('%s', async (_name, args, message, env) => {
    const r = await cli(args, env);
    expect(oneLine(r, 2)).toMatch(message);
    expect(r.stderr).not.toMatch(/ambiguous|FAST/);
  });
});

describe('what cannot run is one line and exit code 1', () => {
  it('a port in use', async () => {
    const busy = createServer();
    await new Promise<void>((resolve) => busy.listen(0, '127.0.0.1', resolve));
    const { port } = busy.address() as { port: number };
    try {
      const r = await cli(['--http', String(port)]);
      expect(oneLine(r, 1)).toMatch(new RegExp(`port ${port} on 127\\.0\\.0\\.1 is already in use .*--http PORT`));
    } finally {
      busy.close();
    }
  });

  it('a store path that is a directory, and a file that is not a database (left as it was)', async () => {
    const dir = tempDir();
    const notDb = join(dir, 'notes.db');
    writeFileSync(notDb, 'my notes, not a database\n');
    expect(oneLine(await cli(['--store', `sqlite://${dir}`]), 1)).toMatch(/^mcp-blackboard: the store \S+ is not a file\. Check --store\./);
    expect(oneLine(await cli(['--store', `sqlite://${notDb}`]), 1)).toMatch(/cannot open the store .*notes\.db: .*not a database/);
    expect(oneLine(await cli(['export', '--store', `sqlite://${notDb}`]), 1)).toMatch(
      /^mcp-blackboard export: cannot open the store .*not a database/,
    );
    expect(oneLine(await cli(['export', '--store', `sqlite://${dir}`]), 1)).toMatch(/is not a file/);
    expect(readFileSync(notDb, 'utf8')).toBe('my notes, not a database\n');
    // a directory nothing can be made in (Node's recursive mkdir never returns there)
    if (existsSync('/proc/self')) {
      expect(oneLine(await cli(['--store', 'sqlite:///proc/nope/x.db']), 1)).toMatch(
        /cannot open the store .*ENOENT.*mkdir '\/proc\/nope'/,
      );
    }
  });

  it('export from a mistyped path or a missing directory creates nothing', async () => {
    const dir = tempDir();
    const typo = join(dir, 'boards.db');
    const r = await cli(['export', '--store', `sqlite://${typo}`]);
    expect(oneLine(r, 1)).toMatch(/no store at .*boards\.db \(no such file\); export reads an existing store and never creates one/);
    const nested = join(dir, 'no', 'such', 'dir', 'board.db');
    const r2 = await cli(['export', '--store', `sqlite://${nested}`]);
    expect(oneLine(r2, 1)).toMatch(/the directory .*no\/such\/dir does not exist/);
    // the same through the environment, and for the default store location
    expect(oneLine(await cli(['export'], { BLACKBOARD_STORE: `sqlite://${typo}` }), 1)).toMatch(/no store at/);
    expect(oneLine(await cli(['export'], { BLACKBOARD_STORE: '', XDG_DATA_HOME: join(dir, 'data') }), 1)).toMatch(
      /no store at .*data\/mcp-blackboard\/blackboard\.db/,
    );
    expect(existsSync(typo)).toBe(false);
    expect(existsSync(join(dir, 'no'))).toBe(false);
    expect(existsSync(join(dir, 'data'))).toBe(false);
  });

  it('import of a file that is not there', async () => {
    const db = join(tempDir(), 'target.db');
    expect(oneLine(await cli(['import', join(tempDir(), 'missing.json'), '--store', `sqlite://${db}`]), 1)).toMatch(
      /cannot read .*missing\.json: ENOENT/,
    );
    expect(existsSync(db)).toBe(false);
  });
});

describe('first run in a terminal', () => {
  it('the hint is for terminals only and says how to talk to the server and how to stop it', () => {
    expect(firstRunHint(false, '/x/dist/cli.js', [])).toBeUndefined();
    const hint = firstRunHint(true, '/repo/dist/cli.js', ['--store', 'sqlite://my board.db'], '/repo')!;
    expect(hint).toMatch(/^mcp-blackboard: this is an MCP server\. It speaks JSON-RPC on stdin\/stdout/);
    expect(hint).toContain("npx @modelcontextprotocol/inspector -- node dist/cli.js --store 'sqlite://my board.db'");
    expect(hint).toContain('Ctrl+C (or Ctrl+D)');
    expect(firstRunHint(true, '/repo/dist/cli.js', [], '/elsewhere')).toContain('-- node /repo/dist/cli.js');
  });

  const script = spawnSync('script', ['--version']).status === 0;
  it.skipIf(!script)('a real terminal gets the hint once on stderr, and Ctrl+D stops the server with exit code 0', async () => {
    // `script` gives the server a pseudo-terminal as stdin (and stdout/stderr, which it copies to its own stdout).
    const child = spawn('script', ['-qfec', `'${process.execPath}' '${CLI}' --store memory://`, '/dev/null'], {
      stdio: 'pipe',
      cwd: tempDir(),
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('close', resolve));
    const deadline = Date.now() + 20_000;
    while (!out.includes('Ctrl+D') && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(out).toContain('this is an MCP server. It speaks JSON-RPC on stdin/stdout');
    expect(out).toContain(`npx @modelcontextprotocol/inspector -- node ${CLI} --store memory://`);
    child.stdin.write('\x04'); // Ctrl+D: end of input on a terminal
    expect(await exited).toBe(0);
    expect(out.split('this is an MCP server')).toHaveLength(2);
  });

  it('a client on a pipe never gets it', async () => {
    const r = await cli([]);
    expect(r.code).toBe(0);
    expect(r.stderr).toMatch(/on stdio: \d+ tools/);
    expect(r.stderr).not.toContain('Ctrl+C');
    expect(r.stdout).toBe('');
  });
});

describe('the built bin', () => {
  it('is executable with a node shebang', () => {
    expect(readFileSync(CLI, 'utf8').startsWith('#!/usr/bin/env node\n')).toBe(true);
    const r = spawnSync(CLI, ['--version'], { encoding: 'utf8' });
    expect(r.status, r.stderr).toBe(0);
    expect(r.stdout.trim()).toMatch(/^\d+\.\d+\.\d+$/);
  });

  it('is built without source maps (they would point at sources the package does not ship)', () => {
    expect(readdirSync(join(CLI, '..'), { recursive: true }).filter((f) => String(f).endsWith('.map'))).toEqual([]);
  });
});
