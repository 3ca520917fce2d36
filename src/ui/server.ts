// The `ui` subcommand's own HTTP server: the board handler behind the Host and Origin checks of the MCP endpoint.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { isLoopbackAddress } from '../hosts.js';
import { createBoardHandler, type BoardHandlerOptions } from './handler.js';
import type { BoardAuth } from './auth.js';

/** Where and how the board is served. */
export interface BoardServerOptions extends BoardHandlerOptions {
  host: string;
  port: number;
}

/**
 * Serves the board on `host:port`. On a loopback bind, a request whose Host header is not a loopback name is refused
 * (a page that reached us by DNS rebinding); a request whose Origin is present and is not this server's is refused
 * (another site's page). Anything but the board's paths is 404.
 */
export async function serveBoard(
  options: BoardServerOptions,
): Promise<{ url: string; close: () => Promise<void>; reload: (auth: BoardAuth) => void }> {
  let board = createBoardHandler(options);
  let loopbackHosts: string[] | undefined;
  const refuse = (res: ServerResponse, status: number, message: string): void => {
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff' }).end(`${message}\n`);
  };
  const originAllowed = (req: IncomingMessage): boolean => {
    const origin = req.headers.origin;
    if (origin === undefined) return true;
    const hosts = loopbackHosts ?? [req.headers.host ?? ''];
    return hosts.some((host) => origin === `http://${host}`);
  };
  const server = createServer((req, res) => {
    if (loopbackHosts && !loopbackHosts.includes(req.headers.host ?? '')) return refuse(res, 403, 'Forbidden: bad Host header.');
    if (!originAllowed(req)) return refuse(res, 403, 'Forbidden: this board does not answer pages from other origins.');
    board(req, res).then(
      (handled) => {
        if (!handled) refuse(res, 404, 'Not found: the board is at /.');
      },
      (error: unknown) => {
        console.error('[mcp-blackboard ui] request failed:', error);
        if (!res.headersSent) refuse(res, 500, 'Internal error.');
        else res.destroy();
      },
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port, options.host, () => resolve());
  });
  const { port } = server.address() as AddressInfo;
  const host = options.host.includes(':') ? `[${options.host}]` : options.host;
  if (isLoopbackAddress(options.host))
    loopbackHosts = [...new Set([`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `${host}:${port}`])];
  return {
    url: `http://${host}:${port}/`,
    // new tokens (a re-read auth file): open board streams end, and browsers reconnect with their cookie
    reload: (auth) => {
      const next = createBoardHandler({ ...options, auth });
      board.close();
      board = next;
    },
    close: async () => {
      board.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
