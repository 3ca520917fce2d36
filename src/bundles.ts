// The `export` and `import` subcommands: a thread's (or a whole namespace's) state as portable JSON, and back.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { dirname } from 'node:path';
import { NAMESPACE_RE } from './context.js';
import { ConfigError, defaultConfig, readFlags, type Subcommand } from './config.js';
import { loadDocument } from './services/checkpoint.js';
import { createServices } from './services/index.js';
import { Session } from './services/session.js';
import { openStore, storeFile } from './store/open.js';
import type { VersionedStore } from './store/versioned-store.js';

// For people: the same versioned JSON a checkpoint uses. Output goes to stdout; an error is one line on stderr
// with exit code 1 (2 for a bad flag).

const STORE_FLAGS = {
  store: { type: 'string' },
  namespace: { type: 'string' },
} as const;

const STORE_HELP = `  --store URL       the store: sqlite:///abs/path.db or sqlite://relative.db      BLACKBOARD_STORE
                    (default: the SQLite file in your data directory)
  --namespace NS    the namespace (^[a-z][a-z0-9_]{0,31}$; default: none)         BLACKBOARD_NAMESPACE
  --help            print this and exit`;

export const exportCommand: Subcommand = {
  usage: 'export [--store URL] [--namespace NS] [--thread ID] > bundle.json',
  summary: "write a thread's state (or, without --thread, the namespace's) as JSON",
  help: `Usage: mcp-blackboard export [--store URL] [--namespace NS] [--thread ID] > bundle.json

Writes a thread's state (with --thread) or a whole namespace's state (without) to stdout as versioned JSON, the
format checkpoints use. The store must already exist: export only reads it, and never creates one.

${STORE_HELP.replace('  --help', '  --thread ID       export only this thread (its thread, run and checkpoint records)\n  --help')}

Exit codes: 0 written, 1 the store does not exist or cannot be read, 2 bad flag.
`,
  async run(argv) {
    const { values } = readFlags('export', argv, { ...STORE_FLAGS, thread: { type: 'string' } });
    if (values.help) return print(this.help);
    const namespace = namespaceOf(values.namespace);
    const url = values.store ?? (process.env.BLACKBOARD_STORE || undefined);
    if (url === 'memory://' || url === 'memory:') throw new ConfigError('--store memory:// is empty in a new process: there is nothing to export. Give the SQLite store to read.');
    mustExist(url);
    const store = await open(url);
    try {
      const { checkpoints } = servicesFor(store, namespace, values.thread ?? 'export');
      const out = values.thread !== undefined ? await checkpoints.exportThread(values.thread) : await checkpoints.exportNamespace();
      await print(`${JSON.stringify(out, null, 2)}\n`);
      return 0;
    } finally {
      await store.close();
    }
  },
};

export const importCommand: Subcommand = {
  usage: 'import FILE [--store URL] [--namespace NS]',
  summary: 'load such a bundle; a corrupt file is refused and changes nothing',
  help: `Usage: mcp-blackboard import FILE [--store URL] [--namespace NS]

Loads a bundle written by export (FILE, or - to read stdin) into the store, creating the store if needed. The whole
file is checked before anything is written: a corrupt or truncated bundle is refused and changes nothing.

${STORE_HELP}

Exit codes: 0 imported, 1 the file or the store cannot be read or the bundle is corrupt, 2 bad flag.
`,
  async run(argv) {
    const { values, positionals } = readFlags('import', argv, STORE_FLAGS, true);
    if (values.help) return print(this.help);
    const namespace = namespaceOf(values.namespace);
    if (positionals.length !== 1) {
      throw new ConfigError(`import takes one FILE (or - for stdin), got ${positionals.length}. Run mcp-blackboard import --help.`);
    }
    const file = positionals[0];
    let text: string;
    try {
      text = readFileSync(file === '-' ? 0 : file, 'utf8');
    } catch (error) {
      throw new Error(`cannot read ${file === '-' ? 'stdin' : file}: ${(error as Error).message}`);
    }
    // Validate the whole file before the store is even opened: a bad file changes nothing.
    const doc = loadDocument(text);
    const store = await open(values.store ?? (process.env.BLACKBOARD_STORE || undefined));
    try {
      const { checkpoints } = servicesFor(store, namespace, 'export');
      const { records } = await checkpoints.import(doc);
      console.error(`mcp-blackboard: imported ${records} records${doc.kind === 'thread' ? ` into thread ${doc.thread}` : ''} (${store.backend.description})`);
      return 0;
    } finally {
      await store.close();
    }
  },
};

function namespaceOf(flag: string | undefined): string | undefined {
  const namespace = flag ?? (process.env.BLACKBOARD_NAMESPACE || undefined);
  if (namespace !== undefined && !NAMESPACE_RE.test(namespace)) {
    throw new ConfigError(`${flag !== undefined ? '--namespace' : 'BLACKBOARD_NAMESPACE'} "${namespace}" must match ^[a-z][a-z0-9_]{0,31}$.`);
  }
  return namespace;
}

/** Refuses a store file that is not there, so that a mistyped path is reported instead of created empty. */
function mustExist(url: string | undefined): void {
  const file = storeFile(url);
  if (file === undefined || existsSync(file)) {
    if (file !== undefined && !statSync(file).isFile()) throw new Error(`the store ${file} is not a file. Check --store.`);
    return;
  }
  const dir = dirname(file);
  const why = existsSync(dir) ? 'no such file' : `the directory ${dir} does not exist`;
  throw new Error(`no store at ${file} (${why}); export reads an existing store and never creates one. Check --store or BLACKBOARD_STORE.`);
}

async function open(url: string | undefined): Promise<VersionedStore> {
  try {
    return await openStore(url, { sweepIntervalMs: 0 });
  } catch (error) {
    throw new Error(`cannot open the store ${url ?? `sqlite://${storeFile(undefined)}`}: ${(error as Error).message}`);
  }
}

function servicesFor(store: VersionedStore, namespace: string | undefined, thread: string): ReturnType<typeof createServices> {
  const session = new Session(store, { namespace, thread, run: '', rootThread: '', delegateLevel: 0 });
  return createServices(store, session, defaultConfig());
}

/** Writes to stdout and waits until it is flushed (the process exits right after). */
function print(text: string): Promise<number> {
  return new Promise((resolve, reject) => process.stdout.write(text, (error) => (error ? reject(error) : resolve(0))));
}
