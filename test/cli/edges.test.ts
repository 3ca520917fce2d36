// The CLI's edges, each with one home: passwords never printed, one loopback rule, files a command must not touch,
// stores written by a newer version, and start-up errors that keep their cause and next step.
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createClient } from '@redis/client';
import { describe, expect, it } from 'vitest';
import { errorText } from '../../src/cli/command.js';
import { parseConfig } from '../../src/cli/serve.js';
import { parseUiArgs } from '../../src/cli/ui.js';
import { isLoopbackAddress } from '../../src/hosts.js';
import { openStore } from '../../src/store/open.js';
import { tempDir } from '../contract/backends.js';
import { runCli } from '../helpers.js';

type Run = Awaited<ReturnType<typeof runCli>>;
const cli = (args: string[], env: Record<string, string> = {}): Promise<Run> =>
  runCli(args, undefined, { BLACKBOARD_STORE: 'memory://', ...env });
const sha = (file: string): string => createHash('sha256').update(readFileSync(file)).digest('hex');

/** A real bundle (an empty namespace's export), for import to accept before it opens the store. */
let bundlePath: string | undefined;
async function bundleFile(): Promise<string> {
  if (bundlePath) return bundlePath;
  const store = `sqlite://${join(tempDir(), 'src.db')}`;
  await (await openStore(store)).close();
  const exported = await cli(['export', '--store', store]);
  expect(exported.code, exported.stderr).toBe(0);
  bundlePath = join(tempDir(), 'bundle.json');
  writeFileSync(bundlePath, exported.stdout);
  return bundlePath;
}

/** Exit code `code`, nothing on stdout, at most three short lines on stderr and no stack trace. */
function shortFailure(r: Run, code: number): string {
  expect(r.code, r.stderr).toBe(code);
  expect(r.stdout).toBe('');
  expect(r.stderr.trimEnd().split('\n').length, r.stderr).toBeLessThanOrEqual(3);
  expect(r.stderr).not.toMatch(/\n\s+at |node:internal/);
  return r.stderr;
}

describe('no command prints a password', () => {
  const SECRET = 'Sup3rS3cretPw';
  const urls = [
    `postgres://bob:${SECRET}@127.0.0.1:1/db`,
    `postgres://bob:${SECRET}@[not-a-host/db`,
    `redis://:${SECRET}@127.0.0.1:1`,
    `redis://:${SECRET}@127.0.0.1:notaport`,
    `rediss://bob:${SECRET}@127.0.0.1:1/0`,
    `rediss://bob:${SECRET}@[bad:1`,
    // a generated password with a raw "/" (the URL does not parse, or its first part passes for a port)
    `postgres://bob:Ab/${SECRET}@127.0.0.1:1/db`,
    `postgres://bob:12/${SECRET}@127.0.0.1:1/db`,
    `redis://:Ab/${SECRET}@127.0.0.1:1`,
    // ... or a raw "#" or "?" (the URL does not parse, or names the user's part as the host and the rest as a fragment or query)
    `postgres://bob:12#${SECRET}@127.0.0.1:1/db`,
    `postgres://bob:ab?${SECRET}@127.0.0.1:1/db`,
    `redis://:99?${SECRET}@127.0.0.1:1/0`,
    `rediss://bob:12#${SECRET}@127.0.0.1:1`,
  ];

  it.each([
    ['serve', (url: string) => ['--store', url]],
    ['--http', (url: string) => ['--http', '0', '--store', url]],
    ['export', (url: string) => ['export', '--store', url]],
    ['import', (url: string) => ['import', bundlePath!, '--store', url]],
    ['ui', (url: string) => ['ui', '--port', '0', '--store', url]],
    ['serve (store from the environment)', () => []],
  ])('%s, on unreachable and malformed postgres://, redis:// and rediss:// URLs', async (name, args) => {
    await bundleFile();
    const runs = await Promise.all(urls.map((url) => cli(args(url), name.includes('environment') ? { BLACKBOARD_STORE: url } : {})));
    for (const [i, r] of runs.entries()) {
      expect(r.code, `${urls[i]}: ${r.stderr}`).toBe(1);
      expect(`${r.stdout}${r.stderr}`).not.toContain(SECRET);
      expect(r.stderr).toMatch(/cannot open the store \S*:\*\*\*@|is not a valid URL|Unknown store URL/);
    }
  });
});

describe('one loopback rule', () => {
  it('ui --host and --http --host accept and refuse the same addresses', () => {
    const hosts = [
      '127.0.0.1',
      '127.0.0.2',
      '127.255.1.9',
      'localhost',
      'LOCALHOST',
      '::1',
      '[::1]',
      '::ffff:127.0.0.1',
      '0.0.0.0',
      '::',
      '10.0.0.5',
      '192.168.1.2',
      'example.com',
      '128.0.0.1',
    ];
    for (const host of hosts) {
      const ui = (() => {
        try {
          return parseUiArgs(['--host', host], {}).help === false;
        } catch {
          return false;
        }
      })();
      const http = (() => {
        try {
          return parseConfig(['--http', '0', '--host', host], {}).kind === 'serve';
        } catch {
          return false;
        }
      })();
      expect([host, ui], 'ui').toEqual([host, isLoopbackAddress(host)]);
      expect([host, http], '--http').toEqual([host, isLoopbackAddress(host)]);
      // With a token both serve any address.
      expect(parseUiArgs(['--host', host, '--token', 'a-token-of-enough-length'], {}).help).toBe(false);
      expect(parseConfig(['--http', '0', '--host', host, '--token', 'a-token-of-enough-length'], {}).kind).toBe('serve');
    }
    expect(hosts.filter(isLoopbackAddress)).toEqual([
      '127.0.0.1',
      '127.0.0.2',
      '127.255.1.9',
      'localhost',
      'LOCALHOST',
      '::1',
      '[::1]',
      '::ffff:127.0.0.1',
    ]);
  });
});

describe('files a command must not touch', () => {
  it('the server, export, import and ui refuse a SQLite file of another program: one line, exit 1, the file byte-for-byte as it was', async () => {
    const file = join(tempDir(), 'other.db');
    const db = new Database(file);
    db.exec("CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT); INSERT INTO notes(body) VALUES ('mine');");
    db.close();
    const before = sha(file);
    const bundle = await bundleFile();
    for (const args of [[], ['--http', '0'], ['export'], ['ui', '--port', '0'], ['import', bundle]]) {
      const r = await cli([...args, '--store', `sqlite://${file}`]);
      expect(shortFailure(r, 1)).toMatch(
        /other\.db is a SQLite database of another program \(tables: notes\), not a blackboard store; it was left untouched/,
      );
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    }
    expect(sha(file)).toBe(before);
    expect(existsSync(`${file}-wal`)).toBe(false);
  });

  it('ui never creates a store: a missing path is one line, exit 1, and nothing is created', async () => {
    const dir = tempDir();
    const file = join(dir, 'nope', 'board.db');
    const r = await cli(['ui', '--port', '0', '--store', `sqlite://${file}`]);
    expect(shortFailure(r, 1)).toMatch(/^mcp-blackboard ui: no store at .*board\.db .*ui reads an existing store and never creates one/);
    expect(existsSync(join(dir, 'nope'))).toBe(false);
  });
});

describe('a store written by a newer version is refused with one line naming both versions', () => {
  const refused = /layout version 99.*this version (of mcp-blackboard )?reads (layout|version) \d/;

  it('SQLite (serve and export), the file left as it was', async () => {
    const file = join(tempDir(), 'newer.db');
    await (await openStore(`sqlite://${file}`)).close();
    const db = new Database(file);
    db.exec("UPDATE blackboard_meta SET value = 99 WHERE name = 'schema'");
    db.close();
    const before = sha(file);
    for (const args of [[], ['export']]) {
      const r = await cli([...args, '--store', `sqlite://${file}`]);
      expect(shortFailure(r, 1)).toMatch(refused);
      expect(r.stderr.trimEnd().split('\n')).toHaveLength(1);
    }
    expect(sha(file)).toBe(before);
  });

  it.runIf(process.env.BLACKBOARD_TEST_POSTGRES_URL)('Postgres', async () => {
    const base = process.env.BLACKBOARD_TEST_POSTGRES_URL!;
    const schema = `newer_${Date.now()}`;
    const url = `${base}${base.includes('?') ? '&' : '?'}schema=${schema}`;
    await (await openStore(url)).close();
    const client = new pg.Client({ connectionString: base });
    await client.connect();
    const { rows } = await client.query<{ table_name: string }>(
      "SELECT table_name FROM information_schema.columns WHERE table_schema = $1 AND column_name = 'schema_version'",
      [schema],
    );
    await client.query(`UPDATE "${schema}"."${rows[0].table_name}" SET schema_version = 99`);
    await client.end();
    const r = await cli(['--store', url]);
    expect(shortFailure(r, 1)).toMatch(refused);
  });

  it.runIf(process.env.BLACKBOARD_TEST_REDIS_URL)('Redis', async () => {
    const base = process.env.BLACKBOARD_TEST_REDIS_URL!;
    const prefix = `newer${Date.now()}`;
    const url = `${base}${base.includes('?') ? '&' : '?'}prefix=${prefix}`;
    await (await openStore(url)).close();
    const client = createClient({ url: base });
    await client.connect();
    expect(await client.get(`{${prefix}}:layout`)).toBe('1');
    await client.set(`{${prefix}}:layout`, '99');
    await client.quit();
    const r = await cli(['--store', url]);
    expect(shortFailure(r, 1)).toMatch(refused);
  });
});

describe('start-up errors keep their cause and next step', () => {
  it('better-sqlite3 built for another Node.js: the versions and the rebuild command, in two lines', () => {
    const error = new Error(
      "The module '/app/node_modules/better-sqlite3/build/Release/better_sqlite3.node'\nwas compiled against a different Node.js version using\nNODE_MODULE_VERSION 115. This version of Node.js requires\nNODE_MODULE_VERSION 127. Please try re-compiling or re-installing\nthe module (for instance, using `npm rebuild` or `npm install`).",
    );
    const text = errorText(error);
    expect(text.split('\n')).toHaveLength(2);
    expect(text).toMatch(
      /^better-sqlite3 was built for another version of Node\.js \(module version 115; this Node\.js v\S+ needs 127\)\./,
    );
    expect(text).toContain('npm rebuild better-sqlite3');
  });

  it('a message of several lines keeps up to three sentences and never a stack frame', () => {
    const error = new Error('cannot connect:\nthe server refused\nthe connection.\nCheck the port.\nOne more.');
    error.stack = `${error.message}\n    at foo (/x.js:1:1)`;
    expect(errorText(error)).toBe('cannot connect:\nthe server refused the connection.\nCheck the port.');
  });
});
