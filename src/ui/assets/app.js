// The board as an MCP App: renders board_show's result with the web board's renderer, then follows the board through
// the host with the app-only board_wait tool. It reads through the host only: no network, no writes.
import { App } from '@modelcontextprotocol/ext-apps';
import { clock, empty, marks, renderPlan, renderScope, renderTeam, renderThread, replace, sortThreads, summaryStats, tick, untilLeaseEnds } from './render.js';

const $ = (id) => document.getElementById(id);
const app = new App({ name: 'mcp-blackboard board', version: '1' });
let board;
let section;
let following = false;
/** How long one board_wait waits for a change, at most: the board is read again when it times out. */
const WAIT_MS = 25000;

function setState(kind, text) {
  $('conn').dataset.state = kind;
  $('conn-text').textContent = text;
}

function hiddenNote(n, what) {
  return n > 0 ? empty(`${n} more ${what} not shown here; the web board (mcp-blackboard ui) shows more.`) : null;
}

function show(next) {
  if (!next || typeof next.revision !== 'number') return;
  board = next;
  clock.skew = next.at - Date.now();
  const sections = next.sections ?? ['scopes', 'plans', 'threads'];
  for (const [name, panel] of [['threads', 'threads-panel'], ['plans', 'plans-panel'], ['scopes', 'keys-panel']]) $(panel).hidden = !sections.includes(name);
  const threads = sortThreads(next.threads ?? []);
  replace($('threads'), threads.length ? [...threads.map(renderThread), hiddenNote(next.hidden.threads, 'threads')].filter(Boolean) : [empty('No threads yet.')]);
  const plans = next.plans ?? [];
  replace($('plans'), plans.length ? [...plans.map(renderPlan), hiddenNote(next.hidden.plans, 'plans')].filter(Boolean) : [empty('No plans.')]);
  const scopes = next.scopes ?? [];
  replace($('scopes'), scopes.length ? [...scopes.map((s) => renderScope(s)), hiddenNote(next.hidden.keys, 'keys')].filter(Boolean) : [empty('No keys yet.')]);
  const team = next.team;
  $('team-panel').hidden = !team;
  replace($('team'), team ? renderTeam(team) : []);
  $('summary').replaceChildren(...summaryStats(next));
  marks.first = false;
  $('revision').textContent = `revision ${next.revision}`;
}

/**
 * Waits for each change through the host, for as long as the app is shown. A lapse writes nothing, so no change tells
 * of it: each wait ends, at the latest, just after the first lease shown ends, and the board read then shows it.
 */
async function follow(tool) {
  if (following) return;
  following = true;
  setState('live', 'Live');
  let pause = 1000;
  for (;;) {
    try {
      const result = await app.callServerTool({ name: tool, arguments: { afterRevision: board.revision, waitMs: Math.min(WAIT_MS, untilLeaseEnds(board)), ...(section ? { section } : {}) } });
      if (result.isError) throw new Error(result.content?.[0]?.text ?? 'board_wait failed');
      show(result.structuredContent);
      setState('live', 'Live');
      pause = 1000;
    } catch (error) {
      setState('reconnecting', 'Reconnecting…');
      $('conn').title = String(error?.message ?? error);
      await new Promise((resolve) => setTimeout(resolve, pause));
      pause = Math.min(pause * 2, 15000);
    }
  }
}

function applyHost(ctx) {
  if (ctx?.theme) document.documentElement.dataset.theme = ctx.theme;
}

app.ontoolinput = (params) => {
  section = params.arguments?.section ?? undefined;
};
app.ontoolresult = (result) => {
  if (result.isError) {
    setState('unavailable', 'The board could not be read');
    return;
  }
  show(result.structuredContent);
  const tool = result.structuredContent?.waitTool;
  if (tool) void follow(tool);
  else setState('static', 'Snapshot');
};
app.onhostcontextchanged = applyHost;
app.onteardown = async () => ({});
app.onerror = (error) => setState('unavailable', String(error?.message ?? error));

setInterval(() => tick(), 5000);
app.connect().then(() => applyHost(app.getHostContext()));
