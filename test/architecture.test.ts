import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// How the source tree is kept: one owner for the storage key layout, no import cycles (type imports count), layers
// that point one way, backends that do not know each other, small files, records decoded rather than cast.
const SRC = join(import.meta.dirname, '..', 'src');

/** The source files: the TypeScript, and the board page's own modules and styles (src/ui/assets), served as they are. */
function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? sources(join(dir, d.name)) : /\.(ts|js|css)$/.test(d.name) ? [join(dir, d.name)] : [],
  );
}
const files = sources();
const text = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));
const rel = (f: string): string => relative(SRC, f);
/** A file's code without its comments (a comment may describe the layout; only code may build it). */
const code = (f: string): string =>
  text
    .get(f)!
    .replace(/\/\*[\s\S]*?\*\//g, '')
    .replace(/^\s*\/\/.*$/gm, '');

/**
 * The modules a file imports (relative imports only, resolved to .ts files from TypeScript), type-only imports
 * included: they vanish at run time, but they tie the code both ways all the same.
 */
function importsOf(file: string): string[] {
  const out: string[] = [];
  for (const m of text
    .get(file)!
    .matchAll(/^(?:import|export)\s[^;]*?from\s+'(\.[^']+)'|^\s*(?:const|let)\s.*?await import\('(\.[^']+)'\)/gms)) {
    const to = m[1] ?? m[2];
    out.push(resolve(dirname(file), file.endsWith('.ts') ? to.replace(/\.js$/, '.ts') : to));
  }
  return out;
}

/** The top folder (or file, without `.ts`) of a source file: `store`, `services`, `cli`, `config`, … */
const layerOf = (f: string): string => rel(f).split('/')[0].replace(/\.ts$/, '');

describe('source tree', () => {
  it('only the keyspace module and the store key helper know the storage key separator and kinds', () => {
    const owners = new Set(['keyspace.ts', 'store/keys.ts']);
    const offenders = files
      .filter((f) => !owners.has(rel(f)))
      .filter((f) => /(?<!-)\\(x1f|u001f)(?!-)|\bSEP\b|storageKey\(|['`]~[a-z-]+:|['`][dim]\$\{SEP\}/.test(code(f)))
      .map(rel);
    expect(offenders).toEqual([]);
  });

  it('has no import cycle', () => {
    const graph = new Map(files.map((f) => [f, importsOf(f).filter((t) => text.has(t))]));
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const visit = (f: string, path: string[]): void => {
      if (state.get(f) === 'done') return;
      if (state.get(f) === 'open') {
        cycles.push([...path.slice(path.indexOf(f)), f].map(rel).join(' → '));
        return;
      }
      state.set(f, 'open');
      for (const t of graph.get(f)!) visit(t, [...path, f]);
      state.set(f, 'done');
    };
    for (const f of files) visit(f, []);
    expect(cycles).toEqual([]);
  });

  it('keeps every source file under 350 lines, with a comment saying what it holds', () => {
    const lines = (f: string): number => text.get(f)!.replace(/\n$/, '').split('\n').length;
    const long = files.map((f) => [rel(f), lines(f)] as const).filter(([, n]) => n >= 350);
    expect(long).toEqual([]);
    const silent = files.filter((f) => !/^(#!.*\n)?(\/\/|\/\*\*?)/.test(text.get(f)!)).map(rel);
    expect(silent).toEqual([]);
  });

  it('decodes and encodes stored records instead of casting them: no `as never` / `as unknown as` where records live', () => {
    const casts = (pattern: RegExp, where: (f: string) => boolean): string[] =>
      files.filter(where).flatMap((f) => [...code(f).matchAll(pattern)].map(() => rel(f)));
    // Records are read and written by services, the store, the families and the board's reader.
    // (The backend folders' driver glue is counted with the rest below.)
    const recordCode = (f: string): boolean =>
      /^(services|families)\/|^store\/[^/]+$/.test(rel(f)) || ['keyspace.ts', 'ui/board-reader.ts'].includes(rel(f));
    expect(casts(/as never\b/g, recordCode)).toEqual([]);
    // The one typed boundary: encode() in services/records.ts turns a family record into the store's Json.
    expect(casts(/as unknown as/g, recordCode)).toEqual(['services/records.ts']);
    // Elsewhere (SDK and express glue), a few, counted so that more cannot creep in unnoticed.
    expect(casts(/as never\b/g, (f) => !recordCode(f)).length).toBeLessThanOrEqual(5);
    expect(casts(/as unknown as/g, (f) => !recordCode(f)).length).toBeLessThanOrEqual(3);
  });

  it('keeps the layers pointing one way: config, store, services, families and the keyspace never import transports, ui, tools or cli', () => {
    const lower = new Set(['config', 'store', 'services', 'families', 'keyspace', 'context', 'errors']);
    const upper = new Set(['transports', 'ui', 'tools', 'cli', 'server', 'resources']);
    const wrong = files
      .filter((f) => lower.has(layerOf(f)))
      .flatMap((f) =>
        importsOf(f)
          .filter((t) => text.has(t) && upper.has(layerOf(t)))
          .map((t) => `${rel(f)} → ${rel(t)}`),
      );
    expect(wrong).toEqual([]);
  });

  it('keeps each store backend to its folder: no backend imports another', () => {
    const backends = ['memory', 'sqlite', 'postgres', 'redis'];
    const backendOf = (f: string): string | undefined => {
      const [top, folder] = rel(f).split('/');
      return top === 'store' && backends.includes(folder) ? folder : undefined;
    };
    expect(backends.every((b) => files.some((f) => backendOf(f) === b))).toBe(true);
    const wrong = files.flatMap((f) => {
      const own = backendOf(f);
      if (!own) return [];
      return importsOf(f)
        .filter((t) => backendOf(t) !== undefined && backendOf(t) !== own)
        .map((t) => `${rel(f)} → ${rel(t)}`);
    });
    expect(wrong).toEqual([]);
  });
});
