// The board's HTTP routes — page, assets, JSON reads and the live event stream — as one mountable request handler.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { fileURLToPath } from 'node:url';
import { namespaceError } from '../context.js';
import { BlackboardError } from '../errors.js';
import { HttpError } from '../http-error.js';
import type { BoardAuth, Viewer } from './auth.js';
import { keysPage } from './board-keys.js';
import { timeline } from './board-timeline.js';
import { BoardReader, readOnlyView, type BoardSource, type ReadableStore } from './board-reader.js';
import type { RosterTimes } from '../services/roster.js';
import { PlanClaims } from './board-claims.js';
import { DEFAULT_NAMESPACE, SECTIONS } from './layout.js';
import { LiveBoard } from './live.js';

/** What a board handler is built from. */
export interface BoardHandlerOptions {
  /** The store; the handler keeps only a read-only view of it. */
  store: ReadableStore;
  /** The namespace shown first (`--namespace`); without it, the default namespace if it has records, else the first. */
  namespace?: string;
  /** How the store is named to people (shown in the page's footer). */
  description?: string;
  /** Token checks; without it every request may look (a loopback bind with no token). */
  auth?: BoardAuth;
  /** The product version shown in the footer. */
  version?: string;
  /** The roster's clocks (`--claim-lease`, `--roster-window`) for the team section; the defaults when not given. */
  times?: RosterTimes;
}

/**
 * Handles a request when it is the board's (`/` and `/board/…`), and returns true; returns false for any other path,
 * so a server can mount the board beside other routes. Only GET and HEAD are served: anything else gets 405 and
 * changes nothing. Host and Origin checks are the mounting server's; token checks are the board's, because a
 * browser proves its token once with `?token=` and then carries an HttpOnly, SameSite=Strict cookie.
 */
export interface BoardHandler {
  (req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** Ends the open event streams and stops reading the store. */
  close(): void;
}

const COOKIE = 'bb_board';
/**
 * The board cookie's name as a request's Host names the board: browsers keep cookies by host, not port, so boards on
 * one host's ports each name theirs after its port (signing in to one does not sign you out of another).
 */
const cookieName = (req: IncomingMessage): string => {
  const port = /:(\d+)$/.exec(req.headers.host ?? '')?.[1];
  return port ? `${COOKIE}_${port}` : COOKIE;
};
/** The page's files served at `/board/<file>`, by how their names end: every such file in `assets/` is served. */
const TYPES: Record<string, string> = {
  '.css': 'text/css; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.svg': 'image/svg+xml',
};
const SECURITY_HEADERS = {
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  'x-frame-options': 'DENY',
  'cross-origin-resource-policy': 'same-origin',
};
// Everything comes from this server; nothing inline, nothing from elsewhere.
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
  "base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

interface Asset {
  body: Buffer;
  etag: string;
  type: string;
}

/**
 * The page's files by route, read once: from `assets/` beside this module, or from the package's `src/ui/assets/`
 * after a build. The page is `/`; its modules, styles and icon are `/board/<file>`, so a module's imports of the
 * files beside it (`./render.js`) are served whatever they are named.
 */
function loadAssets(): Map<string, Asset> {
  const dirs = [new URL('./assets/', import.meta.url), new URL('../../src/ui/assets/', import.meta.url)];
  const dir = dirs.find((d) => existsSync(fileURLToPath(new URL('index.html', d))));
  if (!dir) throw new Error("The board's page files (src/ui/assets) are missing from this installation.");
  const assets = new Map<string, Asset>();
  const add = (route: string, file: string, type: string): void => {
    const body = readFileSync(fileURLToPath(new URL(file, dir)));
    assets.set(route, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 16)}"` });
  };
  add('/', 'index.html', 'text/html; charset=utf-8');
  for (const file of readdirSync(fileURLToPath(dir)).sort()) {
    const type = TYPES[/\.[a-z]+$/.exec(file)?.[0] ?? ''];
    if (type) add(`/board/${file}`, file, type);
  }
  return assets;
}

export function createBoardHandler(options: BoardHandlerOptions): BoardHandler {
  const source: BoardSource = readOnlyView(options.store);
  // who holds which step, kept current from the change feed: shared by the reads of threads and the live events
  const claims = new PlanClaims(source);
  const reader = new BoardReader(source, options.times, claims);
  const live = new LiveBoard(source, claims);
  const assets = loadAssets();
  const { auth } = options;

  const viewerOf = (req: IncomingMessage): Viewer | undefined => {
    if (!auth) return { namespaces: '*' };
    const header = req.headers.authorization;
    if (header?.startsWith('Bearer ')) return auth.byToken(header.slice('Bearer '.length));
    const cookie = cookies(req)[cookieName(req)];
    return cookie ? auth.byCookie(cookie) : undefined;
  };

  const allowed = (viewer: Viewer, namespace: string): boolean =>
    viewer.namespaces === '*' || (namespace !== DEFAULT_NAMESPACE && viewer.namespaces.includes(namespace));

  const namespaceParam = (url: URL, viewer: Viewer): string => {
    const ns = url.searchParams.get('ns') ?? options.namespace ?? DEFAULT_NAMESPACE;
    const bad = ns === DEFAULT_NAMESPACE ? undefined : namespaceError('ns', ns);
    if (bad) throw new HttpError(400, `${bad} ("${DEFAULT_NAMESPACE}" is the default namespace.)`);
    if (!allowed(viewer, ns)) throw new HttpError(403, `Your token does not give access to namespace "${ns}".`);
    return ns;
  };

  /**
   * Why the store failed, as a viewer is told: its error names the store's path or host, which (as in the footer) is
   * for those who may see all of it; others are told only that it could not be read.
   */
  const storeProblem = (error: unknown, viewer: Viewer | undefined): string =>
    error instanceof BlackboardError && viewer?.namespaces === '*' ? error.message : 'The store could not be read.';

  const handler = async (req: IncomingMessage, res: ServerResponse): Promise<boolean> => {
    const url = new URL(req.url ?? '/', 'http://board.invalid');
    const path = url.pathname;
    if (path !== '/' && path !== '/board' && !path.startsWith('/board/')) return false;
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...SECURITY_HEADERS, allow: 'GET, HEAD', 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'FORBIDDEN', message: 'The board is read-only: only GET and HEAD are served.' } }));
      return true;
    }
    // who asked, once known: what a store failure is told depends on it
    let asker: Viewer | undefined;
    try {
      const asset = path === '/' ? undefined : assets.get(path);
      if (asset) return sendAsset(req, res, asset);
      if (path === '/') {
        const token = url.searchParams.get('token');
        if (auth && token !== null) {
          if (!auth.byToken(token)) return sendUnauthorized(res, 'page', 'That token is not valid.');
          url.searchParams.delete('token');
          res.writeHead(303, {
            ...SECURITY_HEADERS,
            location: `/${url.search}`,
            'set-cookie': `${cookieName(req)}=${auth.cookieFor(token)}; HttpOnly; SameSite=Strict; Path=/`,
            'cache-control': 'no-store',
          });
          res.end();
          return true;
        }
        if (!viewerOf(req)) return sendUnauthorized(res, 'page');
        return sendAsset(req, res, assets.get('/')!, { 'content-security-policy': CSP });
      }
      const viewer = viewerOf(req);
      if (!viewer) return sendUnauthorized(res, 'api');
      asker = viewer;
      switch (path) {
        case '/board/api/namespaces': {
          const present = await reader.namespaces();
          const namespaces = present.filter((ns) => allowed(viewer, ns));
          if (options.namespace !== undefined && allowed(viewer, options.namespace) && !namespaces.includes(options.namespace)) {
            namespaces.unshift(options.namespace);
          }
          const initial =
            options.namespace ?? (namespaces.includes(DEFAULT_NAMESPACE) ? DEFAULT_NAMESPACE : (namespaces[0] ?? DEFAULT_NAMESPACE));
          // a token limited to namespaces that hold nothing yet still opens on one of them (and sees it fill live)
          const granted = viewer.namespaces === '*' ? [] : viewer.namespaces;
          return sendJson(res, 200, {
            namespaces,
            initial: allowed(viewer, initial) ? initial : (namespaces[0] ?? granted[0]),
            defaultNamespace: DEFAULT_NAMESPACE,
            // where the store is (its path, its host) is for those who may see all of it
            ...(viewer.namespaces === '*' ? { store: options.description } : {}),
            version: options.version,
          });
        }
        case '/board/api/board': {
          const ns = namespaceParam(url, viewer);
          const asked = url.searchParams.get('sections')?.split(',') ?? SECTIONS;
          const sections = SECTIONS.filter((s) => asked.includes(s));
          return sendJson(res, 200, await reader.board(ns, sections));
        }
        case '/board/api/keys': {
          const ns = namespaceParam(url, viewer);
          const whole = (name: string): number | undefined => {
            const raw = url.searchParams.get(name);
            return raw === null || !/^\d{1,9}$/.test(raw) ? undefined : Number(raw);
          };
          const scope = url.searchParams.get('scope') ?? undefined;
          const q = url.searchParams.get('q') ?? undefined;
          return sendJson(res, 200, await keysPage(source, ns, { q, scope, offset: whole('offset'), limit: whole('limit') }));
        }
        case '/board/api/timeline': {
          const ns = namespaceParam(url, viewer);
          const scope = url.searchParams.get('scope');
          const key = url.searchParams.get('key');
          return sendJson(res, 200, await timeline(source, ns, 40, scope !== null && key !== null ? { scope, key } : undefined));
        }
        case '/board/api/events': {
          const ns = namespaceParam(url, viewer);
          res.writeHead(200, {
            ...SECURITY_HEADERS,
            'content-type': 'text/event-stream; charset=utf-8',
            'cache-control': 'no-store',
            'x-accel-buffering': 'no',
          });
          if (req.method === 'HEAD') res.end();
          else live.add(res, ns, (error) => storeProblem(error, viewer));
          return true;
        }
        default:
          throw new HttpError(404, `Nothing at ${path}.`);
      }
    } catch (error) {
      if (res.headersSent) {
        res.destroy();
        return true;
      }
      if (error instanceof HttpError) {
        error.send(res, 'json', { ...SECURITY_HEADERS, 'content-type': 'application/json; charset=utf-8', 'cache-control': 'no-store' });
        return true;
      }
      return sendJson(res, 503, { error: { code: 'STORE_UNAVAILABLE', message: storeProblem(error, asker) } });
    }
  };
  return Object.assign(handler, { close: () => live.close() });
}

function cookies(req: IncomingMessage): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (req.headers.cookie ?? '').split(';')) {
    const eq = part.indexOf('=');
    if (eq > 0) out[part.slice(0, eq).trim()] = part.slice(eq + 1).trim();
  }
  return out;
}

function sendAsset(req: IncomingMessage, res: ServerResponse, asset: Asset, extra: Record<string, string> = {}): true {
  const headers = { ...SECURITY_HEADERS, ...extra, 'content-type': asset.type, 'cache-control': 'no-cache', etag: asset.etag };
  if (req.headers['if-none-match'] === asset.etag) {
    res.writeHead(304, headers).end();
    return true;
  }
  res.writeHead(200, { ...headers, 'content-length': asset.body.length });
  res.end(asset.body);
  return true;
}

function sendJson(res: ServerResponse, status: number, body: unknown): true {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    ...SECURITY_HEADERS,
    'content-type': 'application/json; charset=utf-8',
    'cache-control': 'no-store',
    'content-length': Buffer.byteLength(text),
  });
  res.end(text);
  return true;
}

function sendUnauthorized(res: ServerResponse, kind: 'page' | 'api', why = 'This board needs a token.'): true {
  const hint = 'Open it once as /?token=YOUR_TOKEN; the browser then keeps an HttpOnly cookie for this board.';
  if (kind === 'api') {
    res.setHeader('www-authenticate', 'Bearer');
    return sendJson(res, 401, { error: { code: 'FORBIDDEN', message: `${why} ${hint}` } });
  }
  const html =
    '<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">' +
    '<title>mcp-blackboard — token needed</title><link rel="icon" href="/board/icon.svg"><link rel="stylesheet" href="/board/board.css"></head>' +
    `<body class="gate"><main><h1>mcp-blackboard</h1><p>${why}</p><p>${hint.replace('/?token=YOUR_TOKEN', '<code>/?token=YOUR_TOKEN</code>')}</p></main></body></html>`;
  res.writeHead(401, {
    ...SECURITY_HEADERS,
    'content-security-policy': CSP,
    'www-authenticate': 'Bearer',
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
  });
  res.end(html);
  return true;
}
