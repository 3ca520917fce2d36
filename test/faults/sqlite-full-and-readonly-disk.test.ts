// SQLite on a disk that fills up (a real 1 MiB tmpfs, mounted for the test; as root only): the write that does not fit
// is STORE_UNAVAILABLE and changes nothing, reads and small writes go on, the server recovers by itself once there is
// room, and every acknowledged write is there after a restart. On a file system mounted read-only: one line that
// says why.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, spawnAgent, writeUntilRefused } from '../helpers.js';

let dir: string | undefined;
let skipped: string | undefined;
const unmount = (): void => {
  if (dir === undefined) return;
  try {
    execFileSync('umount', ['-l', dir], { stdio: 'ignore' });
  } catch {
    // not mounted
  }
};

beforeAll(() => {
  if (userInfo().uid !== 0) {
    skipped = 'mounting a small tmpfs needs root';
    return;
  }
  dir = mkdtempSync(join(tmpdir(), 'bb-full-'));
  try {
    execFileSync('mount', ['-t', 'tmpfs', '-o', 'size=1m', 'tmpfs', dir], { stdio: 'ignore' });
    process.once('exit', unmount);
  } catch {
    skipped = 'this machine does not allow mounting a tmpfs';
    rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  }
});
afterAll(() => {
  unmount();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('SQLite on a full disk', () => {
  it('refuses the write that does not fit, changing nothing, goes on serving, recovers when there is room, loses nothing', async ({
    skip,
  }) => {
    if (skipped) return skip(skipped);
    const args = ['--store', `sqlite://${join(dir!, 'board.db')}`, '--agent', 'a'];
    const a = await spawnAgent(args);
    const acked: number[] = [];
    try {
      const filled = await writeUntilRefused(a, 60_000, 40);
      acked.push(...filled.acked);
      const refused = filled.refused;
      expect(refused, 'the disk never filled up').toBeDefined();
      expect(refused!.code).toBe('STORE_UNAVAILABLE');
      expect(refused!.message).toMatch(/disk is full.*Nothing was changed/);
      const failed = acked.length;
      expect((await a.ok('state_get', { key: `k${failed}` })).found).toBe(false);
      // reads, and writes that still fit, go on
      expect(await a.ok('state_get', { key: 'k0', maxBytes: 100 })).toMatchObject({ found: true, truncated: true });
      await a.ok('state_set', { key: 'small', value: 1 });
      // room again (the tmpfs grown in place): the same server writes, without a restart
      execFileSync('mount', ['-o', 'remount,size=16m', dir!], { stdio: 'ignore' });
      await a.ok('state_set', { key: `k${failed}`, value: 'x'.repeat(60_000) });
      acked.push(failed);
    } finally {
      await a.close();
    }
    const again = await spawnAgent(args);
    try {
      for (const i of acked) expect((await again.ok('state_get', { key: `k${i}`, maxBytes: 100 })).found, `k${i}`).toBe(true);
      expect(await again.ok('state_get', { key: 'small' })).toMatchObject({ found: true, value: 1 });
    } finally {
      await again.close();
    }
  }, 60_000);
});

describe('SQLite on a read-only file system', () => {
  it('stops at start-up with one line naming the directory and why, for the server and for export', async ({ skip }) => {
    if (skipped) return skip(skipped);
    const db = join(dir!, 'readonly.db');
    const made = await spawnAgent(['--store', `sqlite://${db}`, '--agent', 'a']);
    await made.ok('state_set', { key: 'k', value: 1 });
    await made.close();
    execFileSync('mount', ['-o', 'remount,ro', dir!], { stdio: 'ignore' });
    try {
      for (const args of [
        ['--store', `sqlite://${db}`],
        ['export', '--store', `sqlite://${db}`],
      ]) {
        const result = await runCli(args);
        expect(result.code, args[0]).toBe(1);
        expect(result.stderr.trim().split('\n')).toHaveLength(1);
        expect(result.stderr).toContain(`the directory ${dir} is on a read-only file system, and SQLite keeps readonly.db-wal and -shm`);
      }
    } finally {
      execFileSync('mount', ['-o', 'remount,rw', dir!], { stdio: 'ignore' });
    }
  }, 60_000);
});
