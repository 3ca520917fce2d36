// The `export` and `import` commands: a thread's (or a whole namespace's) state as portable JSON, and back.
import { readFileSync, writeSync } from 'node:fs';
import { text } from 'node:stream/consumers';
import { defaultConfig } from '../config.js';
import { ConfigError } from '../errors.js';
import { loadDocument } from '../services/checkpoint.js';
import { EXPORT_TRIES } from '../services/bundles.js';
import { createServices } from '../services/index.js';
import { Session } from '../services/session.js';
import { isMemoryUrl } from '../store/url.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { type Command, openCommandStore } from './command.js';
import { flagHelp, helpFlag, nameFlag, namespaceFlag, readFlags, storeFlag, switchFlag } from './flags.js';
import { SERVE_FLAGS, print } from './serve.js';

// For people: the same versioned JSON a checkpoint uses. Output goes to stdout; an error is one line on stderr
// with exit code 1 (2 for a bad flag).

const STORE_FLAGS = { store: storeFlag('the store'), namespace: namespaceFlag('the namespace (default: none)') };
const EXPORT_FLAGS = {
  ...STORE_FLAGS,
  thread: nameFlag('thread', {
    flag: 'thread',
    arg: 'ID',
    help: "export only this thread's state (its scopes, records and plans; no checkpoints)",
  }),
  help: helpFlag,
};
const IMPORT_FLAGS = {
  ...STORE_FLAGS,
  replace: switchFlag({
    flag: 'replace',
    help: 'replace the records the store holds with other values (and, for a thread, remove the ones the bundle lacks)',
  }),
  maxValueBytes: { ...SERVE_FLAGS.maxValueBytes, help: "largest value accepted (give the servers' own)" },
  help: helpFlag,
};

export const EXPORT_HELP = `Usage: mcp-blackboard export [--store URL] [--namespace NS] [--thread ID] > bundle.json

Writes a thread's state (with --thread) or a whole namespace's state (without) to stdout as versioned JSON, the
format checkpoints use. The store must already exist: export only reads it, and never creates one; a SQLite file
that is not a blackboard store is refused and left untouched, and so is a thread the store has no record of. An
output that cannot be written whole (a full disk, a closed pipe) is exit code 1.

Options (each also read from the environment variable shown):
${flagHelp(EXPORT_FLAGS)}
Exit codes: 0 written, 1 the store or thread does not exist, or the store or output cannot be used, 2 bad flag.
`;

export const exportCommand: Command = {
  usage: 'export [--store URL] [--namespace NS] [--thread ID] > bundle.json',
  summary: "write a thread's state (or, without --thread, the namespace's) as JSON",
  async run(argv) {
    const { values } = readFlags(EXPORT_FLAGS, argv, { command: 'export' });
    if (values.help) return print(EXPORT_HELP);
    const url = values.store;
    if (isMemoryUrl(url))
      throw new ConfigError('--store memory:// is empty in a new process: there is nothing to export. Give the SQLite store to read.');
    const store = await openCommandStore(url, { sweepIntervalMs: 0 }, { command: 'export', mustExist: true, blackboardOnly: true });
    try {
      const { bundles } = servicesFor(store, values.namespace, values.thread ?? 'export');
      const { doc: out, consistent } =
        values.thread !== undefined
          ? { doc: await bundles.exportThread(values.thread), consistent: true }
          : await bundles.exportNamespace();
      writeAll(`${JSON.stringify(out, null, 2)}\n`);
      console.error(`mcp-blackboard: exported ${Object.keys(out.records).length} records (${store.backend.description})`);
      if (!consistent) {
        console.error(
          `mcp-blackboard: the namespace was written to on each of ${EXPORT_TRIES} reads, so the bundle may hold part of a write made meanwhile; export again when its writers are quiet, or export threads one at a time (each is read at one moment).`,
        );
      }
      return 0;
    } finally {
      await store.close();
    }
  },
};

export const IMPORT_HELP = `Usage: mcp-blackboard import FILE [--store URL] [--namespace NS] [--max-value-bytes N] [--replace]

Loads a bundle written by export (FILE, or - to read stdin) into the store, creating the store if needed. The whole
file is checked before anything is written: a corrupt or truncated bundle is refused and changes nothing, and so is
a SQLite file that is not a blackboard store. It never silently replaces what is there: when the store holds records
of the bundle with other values (or, for a thread, records the bundle lacks), it is refused and changes nothing
unless --replace is given. A value above --max-value-bytes (the servers' own limit; 1 MiB unless they were given
another) is refused too, with the record it is in. Importing the same bundle again changes nothing.

Options (each also read from the environment variable shown):
${flagHelp(IMPORT_FLAGS)}
Exit codes: 0 imported, 1 the file or the store cannot be read, the bundle is corrupt or would replace records, 2 bad flag.
`;

export const importCommand: Command = {
  usage: 'import FILE [--store URL] [--namespace NS] [--max-value-bytes N] [--replace]',
  summary: 'load such a bundle; a corrupt file is refused and changes nothing',
  async run(argv) {
    const { values, positionals } = readFlags(IMPORT_FLAGS, argv, { command: 'import', positionals: true });
    if (values.help) return print(IMPORT_HELP);
    if (positionals.length !== 1) {
      throw new ConfigError(`import takes one FILE (or - for stdin), got ${positionals.length}. Run mcp-blackboard import --help.`);
    }
    if (isMemoryUrl(values.store)) {
      throw new ConfigError(
        '--store memory:// is gone when import exits: nothing would be kept. Give the store your servers use (sqlite://, postgres://, redis://).',
      );
    }
    const file = positionals[0];
    let content: string;
    try {
      // stdin read as a stream: a pipe may be non-blocking, and a synchronous read of it fails (EAGAIN) whenever the
      // writer has not written everything yet
      content = file === '-' ? await text(process.stdin) : readFileSync(file, 'utf8');
    } catch (error) {
      throw new Error(`cannot read ${file === '-' ? 'stdin' : file}: ${(error as Error).message}`);
    }
    // Validate the whole file before the store is even opened: a bad file changes nothing.
    const doc = loadDocument(content, 'bundle');
    const store = await openCommandStore(
      values.store,
      { sweepIntervalMs: 0, maxValueBytes: values.maxValueBytes },
      { command: 'import', blackboardOnly: true },
    );
    try {
      const { bundles } = servicesFor(store, values.namespace, 'export');
      const { records, replaced, removed } = await bundles.import(doc, { replace: values.replace });
      const changed = replaced + removed > 0 ? `, replacing ${replaced} and removing ${removed} the store held` : '';
      console.error(
        `mcp-blackboard: imported ${records} records${doc.kind === 'thread' ? ` into thread ${doc.thread}` : ''}${changed} (${store.backend.description})`,
      );
      return 0;
    } finally {
      await store.close();
    }
  },
};

/**
 * Writes all of `text` to stdout, or throws: a short write (a full disk) or a closed pipe must not pass for a whole
 * bundle. Synchronous, so nothing is left unwritten when the process exits.
 */
function writeAll(text: string): void {
  const bytes = Buffer.from(text);
  let at = 0;
  while (at < bytes.length) {
    try {
      at += writeSync(1, bytes, at, bytes.length - at);
    } catch (error) {
      const { code, message } = error as NodeJS.ErrnoException;
      if (code === 'EAGAIN') {
        Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 5); // a full pipe: wait for its reader
        continue;
      }
      throw new Error(
        `the bundle could not be written whole (${at} of ${bytes.length} bytes): ${code === 'EPIPE' ? 'the reader closed the pipe' : message}`,
      );
    }
  }
}

function servicesFor(store: VersionedStore, namespace: string | undefined, thread: string): ReturnType<typeof createServices> {
  const session = new Session(store, { namespace, thread, run: '', rootThread: '', delegateLevel: 0 });
  return createServices(store, session, defaultConfig());
}
