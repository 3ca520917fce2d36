// Starting a server while the link to its database hangs or breaks: the start is tried again for a while, not given up.
import { errorText } from './command.js';

/** How long a server keeps trying to start while its database cannot be reached (a failover, a partition, a restart). */
export const START_WINDOW_MS = 30_000;
/** The pause between two tries. */
const PAUSE_MS = 1000;

/**
 * A failure of the link rather than of the settings: the connection timed out, was reset or cut, or the database
 * said it is starting up, recovering or shutting down. Nothing listening at the address (refused), an unknown host,
 * a bad URL, password, database or certificate are settings a retry cannot mend, so they are not among these.
 */
export function isLinkFailure(error: unknown): boolean {
  const said = error instanceof Error ? `${(error as { code?: unknown }).code ?? ''} ${error.message}` : String(error);
  // the store's URL in the message is not what went wrong (`?connect_timeout=3` names no timeout that happened)
  const text = said.replace(/\b[a-z][a-z0-9+.-]*:\/\/\S*/gi, 'URL');
  // a setting named in the message (`?timeout=abc`, an unknown option, a bad statement_timeout) is still a setting
  if (/unknown .*option|invalid value for parameter|is not a valid|must be /i.test(text)) return false;
  return /timeout|timed out|did not answer|ETIMEDOUT|ECONNRESET|EPIPE|Connection terminated|Socket closed|starting up|shutting down|recovery mode|LOADING|EHOSTUNREACH|ENETUNREACH|EAI_AGAIN/i.test(
    text,
  );
}

/**
 * Runs `start` until it succeeds, a failure that is not a link failure happens, or `windowMs` has passed since the
 * first try; each link failure is one line on `log` (stderr) saying that it tries again. The last failure is thrown.
 */
export async function startWhenReachable<T>(
  start: () => Promise<T>,
  { windowMs = START_WINDOW_MS, log = (line: string) => console.error(line) }: { windowMs?: number; log?: (line: string) => void } = {},
): Promise<T> {
  const until = Date.now() + windowMs;
  for (;;) {
    try {
      return await start();
    } catch (error) {
      if (!isLinkFailure(error) || Date.now() + PAUSE_MS >= until) throw error;
      const left = Math.ceil((until - Date.now()) / 1000);
      log(`mcp-blackboard: ${errorText(error).split('\n')[0]}; trying again (for ${left} s more)`);
      await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
    }
  }
}
