// Declares every enabled tool family on the tool host.
import type { Config } from '../config.js';
import type { Services } from '../services/index.js';
import { registerBudgetTools } from './budget.js';
import { registerChangesTools } from './changes.js';
import { registerCheckpointTools } from './checkpoint.js';
import type { ToolHost } from './define.js';
import { registerFinalizerTools } from './finalizer.js';
import { registerHistoryTools } from './history.js';
import { registerKvTools } from './kv.js';
import { registerLifecycleTools } from './lifecycle.js';
import { registerPlanTools } from './plan.js';
import { registerRunTools } from './run.js';
import { registerScratchpadTools } from './scratchpad.js';
import { registerSignalTools } from './signal.js';

/** Declares every enabled tool family (`--tools`) on the host; `host.install` then registers them on a server. */
export function registerTools(host: ToolHost, config: Config, services: Services): void {
  const on = new Set(config.tools);
  if (on.has('kv')) {
    registerKvTools(host, services.kv);
    registerChangesTools(host, services.changes);
  }
  if (on.has('plan')) registerPlanTools(host, services.plans, services.work);
  if (on.has('scratchpad')) registerScratchpadTools(host, services.scratchpad);
  if (on.has('finalizer')) registerFinalizerTools(host, services.finalizer);
  if (on.has('budget')) registerBudgetTools(host, services.budget, config.allowBudgetAdmin);
  if (on.has('lifecycle')) registerLifecycleTools(host, services.lifecycle);
  if (on.has('run')) registerRunTools(host, services.runs);
  if (on.has('history')) registerHistoryTools(host, services.history);
  if (on.has('signal')) registerSignalTools(host, services.signals);
  if (on.has('checkpoint')) registerCheckpointTools(host, services.checkpoints);
}
