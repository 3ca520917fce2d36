// What every command shares: its shape, opening its store (refusing what it must not touch), errors as short lines.
import { existsSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { inspectStoreFile, openStore } from '../store/open.js';
import { describeStoreUrl, storeFile, withoutPassword } from '../store/url.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { plainNames, renderMentions } from '../tool-mentions.js';

/**
 * A command (`mcp-blackboard export …`): its own flags, help and code. The CLI dispatches on the first argument
 * through a table of these, and the main `--help` lists each by its `usage` and `summary`.
 */
export interface Command {
  /** what follows the program name in the main help, e.g. `export [--store URL] [--thread ID] > bundle.json` */
  usage: string;
  /** one line saying what it does */
  summary: string;
  /**
   * Runs the command with the arguments after its name and resolves to the exit code. Throw ConfigError for a bad
   * flag or value (exit 2, one line); any other error is printed as one to three short lines with exit code 1.
   */
  run(argv: string[]): Promise<number>;
}

/** How a command treats the store it is pointed at. */
export interface StoreUse {
  /** the command's name, for messages (`export`, `ui`) */
  command?: string;
  /** the store must already exist: a missing SQLite file is refused, never created */
  mustExist?: boolean;
  /** a SQLite file must be a blackboard store (or, when `mustExist` is off, an empty database) */
  blackboardOnly?: boolean;
}

type OpenOptions = Parameters<typeof openStore>[1];

/**
 * Opens the store a command was given. A failure is an Error whose message names the store (password masked) and
 * the cause; a file the command must not touch (missing, not a blackboard store) is refused before it is opened, so
 * it stays byte-for-byte as it was.
 */
export async function openCommandStore(url: string | undefined, options: OpenOptions, use: StoreUse = {}): Promise<VersionedStore> {
  const file = storeFile(url);
  if (file !== undefined) checkFile(file, use);
  try {
    return await openStore(url, options);
  } catch (error) {
    throw cannotOpen(url, error);
  }
}

/** A store that failed to open (or to take a server's first writes): its URL (password masked) and the cause. */
export const cannotOpen = (url: string | undefined, error: unknown): Error =>
  new Error(`cannot open the store ${describeStoreUrl(url)}: ${withoutPassword(errorText(error), url)}`);

function checkFile(file: string, use: StoreUse): void {
  if (!existsSync(file)) {
    if (!use.mustExist) return;
    const dir = dirname(file);
    const why = existsSync(dir) ? 'no such file' : `the directory ${dir} does not exist`;
    throw new Error(
      `no store at ${file} (${why}); ${use.command ?? 'this command'} reads an existing store and never creates one. Check --store or BLACKBOARD_STORE.`,
    );
  }
  if (!use.mustExist && !use.blackboardOnly) return;
  if (!statSync(file).isFile()) throw new Error(`the store ${file} is not a file. Check --store.`);
  if (!use.blackboardOnly) return;
  const found = inspectStoreFile(file);
  if (found.kind === 'foreign') {
    throw new Error(
      `${file} is a SQLite database of another program (tables: ${found.tables.slice(0, 5).join(', ')}${found.tables.length > 5 ? ', …' : ''}), not a blackboard store; it was left untouched. Check --store.`,
    );
  }
  if (found.kind === 'empty' && use.mustExist) {
    throw new Error(`${file} is an empty database, not a blackboard store; it was left untouched. Check --store.`);
  }
}

/**
 * An error as people read it: its message, the cause and the next step kept (one to three short lines), never a
 * stack trace. A native module built for another Node.js (better-sqlite3 after a Node upgrade) says how to rebuild it.
 */
export function errorText(error: unknown): string {
  const message = renderMentions(error instanceof Error ? error.message : String(error), plainNames);
  const abi = /NODE_MODULE_VERSION (\d+)[\s\S]*?NODE_MODULE_VERSION (\d+)/.exec(message);
  if (abi) {
    const module = /better[-_]sqlite3/.test(message) ? 'better-sqlite3' : (/node_modules\/([^/]+)/.exec(message)?.[1] ?? 'a native module');
    return `${module} was built for another version of Node.js (module version ${abi[1]}; this Node.js ${process.version} needs ${abi[2]}).\nRebuild it for this Node.js where mcp-blackboard is installed: npm rebuild ${module}`;
  }
  const lines = message
    .split('\n')
    .filter((line) => !/^\s+at\s/.test(line))
    .map((line) => line.trim())
    .filter(Boolean);
  // Lines that continue a sentence are joined to it; at most three sentences are kept.
  const sentences: string[] = [];
  for (const line of lines) {
    const last = sentences.length - 1;
    if (last >= 0 && !/[.:;!?)]$/.test(sentences[last])) sentences[last] += ` ${line}`;
    else sentences.push(line);
  }
  return sentences.slice(0, 3).join('\n') || (error instanceof Error ? error.name : 'unknown error');
}
