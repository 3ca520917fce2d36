// Progress notifications for blocking tools, so a client that resets its timeout on progress keeps waiting.
import type { RequestMeta, ServerNotification } from '@modelcontextprotocol/server';

/** What a progress sender needs of a request. */
interface Extra {
  _meta?: RequestMeta;
  sendNotification(notification: ServerNotification): Promise<void>;
}

/**
 * Sends `notifications/progress` every `intervalMs` while `work` runs, when the request carries a progress token,
 * so a client that resets its timeout on progress keeps waiting for a long blocking call.
 */
export async function withProgress<T>(extra: Extra, intervalMs: number, message: string, work: () => Promise<T>): Promise<T> {
  const progressToken = extra._meta?.progressToken;
  if (progressToken === undefined) return work();
  const started = Date.now();
  let ticks = 0;
  const timer = setInterval(() => {
    const seconds = Math.round((Date.now() - started) / 1000);
    void extra
      .sendNotification({
        method: 'notifications/progress',
        params: { progressToken, progress: ++ticks, message: `${message} (${seconds}s)` },
      })
      .catch(() => {});
  }, intervalMs);
  try {
    return await work();
  } finally {
    clearInterval(timer);
  }
}
