// The board tools: board_show (the board inline, as an MCP App where the host renders apps) and board_wait (app only).
import { EXTENSION_ID, RESOURCE_MIME_TYPE, RESOURCE_URI_META_KEY, registerAppResource } from '@modelcontextprotocol/ext-apps/server';
import type { ClientCapabilities, McpServer } from '@modelcontextprotocol/server';
import * as z from 'zod';
import { boardSummary, type BoardService, type BoardSnapshot } from '../ui/board-snapshot.js';
import { boardAppHtml } from '../ui/app-html.js';
import { waitOf } from './bounds.js';
import { clientCapabilities } from './client-capabilities.js';
import { waitMs } from './common.js';
import { defineTool, withProgress, type ToolHost } from './define.js';

/** The app's HTML resource, shown by hosts that render MCP Apps wherever board_show is called. */
export const BOARD_APP_URI = 'ui://mcp-blackboard/board.html';

/** Whether a client declared that it renders MCP Apps (HTML ones). */
export function rendersApps(capabilities: ClientCapabilities | undefined): boolean {
  const ui = (capabilities?.extensions as Record<string, { mimeTypes?: string[] } | undefined> | undefined)?.[EXTENSION_ID];
  return ui !== undefined && (ui.mimeTypes === undefined || ui.mimeTypes.includes(RESOURCE_MIME_TYPE));
}

const section = z.enum(['keys', 'plans', 'threads']).optional();

// The snapshot is the board page's JSON (the README describes it); only what a caller acts on is spelled out here.
const board = z.object({
  revision: z.number().int().describe('pass back as afterRevision'),
  threads: z.array(z.unknown()).optional(),
  plans: z.array(z.unknown()).optional(),
  scopes: z.array(z.unknown()).optional(),
});

/** Registers `board_show` and `board_wait`. */
export function registerBoardTools(host: ToolHost, boards: BoardService): void {
  defineTool(
    host,
    'board_show',
    () => ({
      title: 'Show the board',
      description: 'Show the board to the person, live where MCP Apps render. Returns a summary, the board.',
      input: z.object({ section }).strict(),
      output: board,
      annotations: { readOnlyHint: true },
      meta: { ui: { resourceUri: BOARD_APP_URI }, [RESOURCE_URI_META_KEY]: BOARD_APP_URI },
      text: (data: BoardSnapshot) => boardSummary(data),
    }),
    async (args, extra) => {
      const shown = await boards.show(args.section);
      const live = host.has('board_wait') && rendersApps(clientCapabilities(host.server, extra.ctx));
      return live ? { ...shown, waitTool: host.nameOf('board_wait') } : shown;
    },
  );
  defineTool(
    host,
    'board_wait',
    () => ({
      title: 'Wait for a board change',
      description: "The board app's live update: waits for a change after afterRevision, returns the board.",
      input: z.object({ afterRevision: z.number().int().min(0), section, waitMs }).strict(),
      output: board,
      annotations: { readOnlyHint: true },
      meta: { ui: { resourceUri: BOARD_APP_URI, visibility: ['app'] } },
      requires: rendersApps,
      text: (data: BoardSnapshot) => `revision ${data.revision}${data.timedOut ? ' (no change)' : ''}`,
    }),
    (args, extra) =>
      withProgress(extra, host.progressIntervalMs, 'waiting for a board change', () =>
        boards.next(args.afterRevision, waitOf(extra, args.waitMs), args.section, extra.signal),
      ),
  );
}

/** Registers the app's `ui://` resource: one self-contained HTML file that renders board_show's result. */
export function registerBoardApp(server: McpServer): void {
  registerAppResource(server, 'Board', BOARD_APP_URI, { title: 'The board, live: threads, plans and claims, budgets, keys' }, async () => ({
    contents: [{ uri: BOARD_APP_URI, mimeType: RESOURCE_MIME_TYPE, text: boardAppHtml() }],
  }));
}
