// The board's renderer, shared by the web page (board.js) and the MCP App (app.js): board JSON in, DOM out, in plain
// DOM with no framework. This file is its public face; each part lives in its own render-*.js file.
import { bar, empty, h, mark, marks, reconcile, replace, short, threadAnchor } from './render-dom.js';
import { clock, tick, time, untilLeaseEnds } from './render-time.js';
import { renderThread, sortThreads } from './render-threads.js';
import { planComplete, renderPlan } from './render-plans.js';
import { summaryStats } from './render-summary.js';
import { renderKeyRow, renderScope, renderTimeline } from './render-keys.js';
import { renderTeam } from './render-team.js';

export {
  bar, clock, empty, h, mark, marks, planComplete, reconcile, renderKeyRow, renderPlan, renderScope, renderTeam, renderThread, renderTimeline, replace, short,
  sortThreads, summaryStats, threadAnchor, tick, time, untilLeaseEnds,
};
