// Store URLs as people see them: passwords masked.

/** A store URL with any password replaced by `***`, for banners and error messages. */
export function maskStoreUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password === '') return url;
    parsed.password = '***';
    return parsed.toString();
  } catch {
    return url.replace(/\/\/([^@/]*):[^@/]*@/, '//$1:***@');
  }
}
