import type { Config } from '../config.js';
import type { Services } from '../services/index.js';
import { registerKvTools } from './kv.js';
import type { ToolHost } from './define.js';

/** Registers every enabled tool family (`--tools`); returns the registered tool names. */
export function registerTools(host: ToolHost, config: Config, services: Services): string[] {
  const on = new Set(config.tools);
  if (on.has('kv')) registerKvTools(host, services.kv);
  return host.registered;
}
