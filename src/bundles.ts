import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { NAMESPACE_RE } from './context.js';
import { BlackboardError } from './errors.js';
import { defaultConfig } from './config.js';
import { loadDocument } from './services/checkpoints.js';
import { createServices } from './services/index.js';
import { Session } from './services/session.js';
import { openStore } from './store/open.js';
import type { VersionedStore } from './store/versioned-store.js';

/**
 * The `export` and `import` subcommands, for people: a thread's (or a whole namespace's) state as the same
 * versioned JSON a checkpoint uses. Output goes to stdout, errors are one line on stderr with a non-zero exit.
 */
export async function runBundleCommand(command: 'export' | 'import', argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    strict: true,
    allowPositionals: command === 'import',
    options: { store: { type: 'string' }, namespace: { type: 'string' }, thread: { type: 'string' } },
  });
  const namespace = values.namespace ?? process.env.BLACKBOARD_NAMESPACE ?? undefined;
  if (namespace !== undefined && !NAMESPACE_RE.test(namespace)) throw new BlackboardError('INVALID_ARGUMENT', `--namespace "${namespace}" must match ^[a-z][a-z0-9_]{0,31}$`);
  let text = '';
  if (command === 'import') {
    if (positionals.length !== 1) throw new BlackboardError('INVALID_ARGUMENT', 'usage: mcp-blackboard import FILE [--store URL] [--namespace NS]');
    text = positionals[0] === '-' ? readFileSync(0, 'utf8') : readFileSync(positionals[0], 'utf8');
  }
  // Validate the whole file before the store is even opened: a bad file changes nothing.
  const doc = command === 'import' ? loadDocument(text) : undefined;
  const store: VersionedStore = await openStore(values.store ?? process.env.BLACKBOARD_STORE, { sweepIntervalMs: 0 });
  try {
    const session = new Session(store, { namespace, thread: values.thread ?? 'export', run: '', rootThread: '', delegateLevel: 0 });
    const { checkpoints } = createServices(store, session, defaultConfig());
    if (command === 'export') {
      const out = values.thread !== undefined ? await checkpoints.exportThread(values.thread) : await checkpoints.exportNamespace();
      process.stdout.write(`${JSON.stringify(out, null, 2)}\n`);
      return 0;
    }
    const { records } = await checkpoints.import(doc!);
    console.error(`mcp-blackboard: imported ${records} records${doc!.kind === 'thread' ? ` into thread ${doc!.thread}` : ''} (${store.backend.description})`);
    return 0;
  } finally {
    await store.close();
  }
}
