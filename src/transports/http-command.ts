// `mcp-blackboard --http`: the MCP endpoints and the board on one server, its banner, and SIGHUP re-reading the auth file.
import { setFlagsFromString } from 'node:v8';
import type { Config } from '../config.js';
import { VERSION } from '../config.js';
import type { VersionedStore } from '../store/versioned-store.js';
import { fileAuth, tokenAuth } from '../ui/auth.js';
import { createBoardHandler, type BoardHandler } from '../ui/handler.js';
import { serveHttp } from './http.js';

/** Serves until the process ends; resolves 1 (after one line on stderr) when the server cannot start. */
export async function runHttp(config: Config, store: VersionedStore): Promise<number> {
  const http = config.http!;
  leanHeap();
  // The board at GET / uses the same tokens; a browser proves one once with /?token=… and then carries a cookie.
  const board = (): BoardHandler =>
    createBoardHandler({
      store,
      namespace: config.namespace,
      description: store.backend.description,
      version: VERSION,
      times: { leaseMs: config.claimLeaseSeconds * 1000, windowMs: config.rosterWindowSeconds * 1000 },
      auth: http.auth ? fileAuth(http.auth.file) : http.token !== undefined ? tokenAuth(http.token) : undefined,
    });
  let page = board();
  let served: Awaited<ReturnType<typeof serveHttp>>;
  try {
    served = await serveHttp(config, store, { page: (req, res) => page(req, res) });
  } catch (error) {
    console.error(`mcp-blackboard: ${listenError(error, http.host, http.port)}`);
    page.close();
    return 1;
  }
  const ns = config.namespace ? ` namespace=${config.namespace}` : '';
  const auth = http.auth ? ` (${http.auth.clients.length} clients from ${http.auth.file})` : http.token ? ' (token required)' : '';
  const boardUrl = served.url.replace(/\/mcp$/, '/');
  console.error(
    `mcp-blackboard ${VERSION} serving Streamable HTTP at ${served.url} store=${store.backend.description}${ns}${auth}; the board at ${boardUrl}`,
  );
  // SIGHUP re-reads the auth file: rotate tokens without a restart; sessions of removed clients are closed.
  process.on('SIGHUP', () => {
    if (!http.auth) return;
    try {
      served.reload();
      const next = board();
      page.close(); // open board streams end; browsers reconnect with their cookie
      page = next;
      console.error(`mcp-blackboard: re-read the auth file ${http.auth.file}`);
    } catch (error) {
      console.error(`mcp-blackboard: kept the previous clients: ${(error as Error).message}`);
    }
  });
  return new Promise<number>(() => {});
}

/**
 * A server of many clients keeps its heap lean: after each full collection V8 lets the heap grow by at most half
 * again (by default up to 4x when collections are cheap), so the garbage of a burst of 1,000 requests is collected
 * within about 50 MB instead of piling up to about 100 MB. An operator's own `--heap-growing-percent` wins.
 */
function leanHeap(): void {
  if (!process.execArgv.some((arg) => arg.startsWith('--heap-growing-percent')))
    setFlagsFromString(`--heap-growing-percent=${HEAP_GROWING_PERCENT}`);
}
const HEAP_GROWING_PERCENT = Number(process.env.BLACKBOARD_HEAP_GROWING_PERCENT ?? 50);

/** Why a listening socket could not be opened, in words that say what to do. */
function listenError(error: unknown, host: string, port: number): string {
  const code = (error as { code?: string }).code;
  if (code === 'EADDRINUSE')
    return `port ${port} on ${host} is already in use by another program; stop it or choose another port with --http PORT.`;
  if (code === 'EACCES')
    return `not allowed to listen on port ${port} on ${host}; ports below 1024 need privileges, choose another with --http PORT.`;
  if (code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND') return `cannot listen on ${host}: no such local address; check --host.`;
  return `cannot serve HTTP on ${host}:${port}: ${(error as Error).message.split('\n')[0]}`;
}
