import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';

// How the source tree is kept: one owner for the storage key layout, no import cycles, small files.
const SRC = join(import.meta.dirname, '..', 'src');

function sources(dir = SRC): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? sources(join(dir, d.name)) : d.name.endsWith('.ts') ? [join(dir, d.name)] : [],
  );
}
const files = sources();
const text = new Map(files.map((f) => [f, readFileSync(f, 'utf8')]));
const rel = (f: string): string => relative(SRC, f);
/** A file's code without its comments (a comment may describe the layout; only code may build it). */
const code = (f: string): string => text.get(f)!.replace(/\/\*[\s\S]*?\*\//g, '').replace(/^\s*\/\/.*$/gm, '');

/** The modules a file imports (relative imports only, resolved to .ts files). */
function importsOf(file: string): string[] {
  const out: string[] = [];
  for (const m of text.get(file)!.matchAll(/^(?:import|export)\s[^;]*?from\s+'(\.[^']+)'/gms)) {
    if (/^import\s+type\s/.test(m[0]) || /^export\s+type\s/.test(m[0])) continue; // types vanish at run time
    out.push(resolve(dirname(file), m[1].replace(/\.js$/, '.ts')));
  }
  return out;
}

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

  it('keeps every source file under about 350 lines, with a comment saying what it holds', () => {
    const long = files.map((f) => [rel(f), text.get(f)!.split('\n').length] as const).filter(([, n]) => n > 360);
    expect(long).toEqual([]);
    const silent = files.filter((f) => !/^(#!.*\n)?(\/\/|\/\*\*?)/.test(text.get(f)!)).map(rel);
    expect(silent).toEqual([]);
  });

  it('decodes stored records instead of casting through unknown (at most 5 such casts)', () => {
    const casts = files.flatMap((f) => [...text.get(f)!.matchAll(/as unknown as/g)].map(() => rel(f)));
    expect(casts.length, casts.join(', ')).toBeLessThanOrEqual(5);
  });
});
