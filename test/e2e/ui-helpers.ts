// Starting the board (`mcp-blackboard ui`) of the built bin for the tests that look at it over HTTP or in a browser.
import { spawn, type ChildProcess } from 'node:child_process';
import { CLI } from '../helpers.js';

/** A running board: its process, its URL, and what it has written so far. */
export interface Ui {
  child: ChildProcess;
  url: string;
  stdout: () => string;
  stderr: () => string;
}

/** Spawns `mcp-blackboard ui ARGS` and resolves once it says where the board is (rejects if it exits first). */
export async function startUi(args: string[]): Promise<Ui> {
  const child = spawn(process.execPath, [CLI, 'ui', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (c: Buffer) => (stdout += c.toString()));
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (c: Buffer) => {
      stderr += c.toString();
      const m = /board at (http:\/\/\S+\/)/.exec(stderr);
      if (m) resolve(m[1]);
    });
    child.on('exit', (code) => reject(new Error(`ui exited ${code}: ${stderr}`)));
  });
  return { child, url, stdout: () => stdout, stderr: () => stderr };
}
