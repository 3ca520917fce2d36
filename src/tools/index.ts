// Declares every enabled tool family on the tool host.
import type { Config } from '../config.js';
import type { Services } from '../services/index.js';
import { BoardService } from '../ui/board-snapshot.js';
import { registerBoardTools } from './board.js';
import { registerBudgetTools } from './budget.js';
import { registerChangesTools } from './changes.js';
import { registerCheckpointTools } from './checkpoint.js';
import type { ToolHost } from './define.js';
import type { ToolAnnotations } from '@modelcontextprotocol/server';
import { BUDGET_ADMIN_TOOLS, selectTools, TOOL_TABLE } from '../tool-profiles.js';
import { registerFinalizerTools } from './finalizer.js';
import { registerHistoryTools } from './history.js';
import { registerKvTools } from './kv.js';
import { registerLifecycleTools } from './lifecycle.js';
import { registerPlanTools } from './plan.js';
import { registerRunTools } from './run.js';
import { registerScratchpadTools } from './scratchpad.js';
import { registerSignalTools } from './signal.js';
import { registerTeamTools } from './team.js';

/**
 * Declares every tool family on the host, which keeps the tools {@link toolSelection} chose; `host.install` then
 * registers them on a server.
 */
export function registerTools(host: ToolHost, services: Services): void {
  registerKvTools(host, services.kv);
  registerChangesTools(host, services.changes);
  registerPlanTools(host, services.plans, services.work);
  registerScratchpadTools(host, services.scratchpad);
  registerFinalizerTools(host, services.finalizer);
  registerBudgetTools(host, services.budget);
  registerLifecycleTools(host, services.lifecycle);
  registerRunTools(host, services.runs, services.budget, services.lifecycle, services.messages);
  registerHistoryTools(host, services.history);
  registerSignalTools(host, services.signals);
  registerCheckpointTools(host, services.checkpoints);
  registerBoardTools(host, new BoardService(services.store, services.session.identity.namespace, services.team.times));
  registerTeamTools(host, services.team, services.messages);
}

/**
 * The tools `--tools`, `--allow-budget-admin` and `--read-only` let a server register: `true`, or why the tool is
 * left out (the flag that leaves it out, said to a call that names it).
 */
export function toolSelection(
  config: Pick<Config, 'tools' | 'allowBudgetAdmin' | 'readOnly'>,
): (name: string, annotations: ToolAnnotations) => true | string {
  const chosen = selectTools(config.tools, { allowBudgetAdmin: config.allowBudgetAdmin });
  return (name, annotations) => {
    if (BUDGET_ADMIN_TOOLS.includes(name) && !config.allowBudgetAdmin)
      return 'it exists only on a server started with --allow-budget-admin';
    const table = TOOL_TABLE[name];
    if (!chosen.has(name))
      return `this server's tool set (--tools) leaves it out${table ? ` (it comes with the "${table.profile}" profile or the "${table.family}" family)` : ''}`;
    if (config.readOnly && annotations.readOnlyHint !== true) return 'it writes, and this server serves reads only (--read-only)';
    return true;
  };
}
