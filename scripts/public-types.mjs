// Writes the published type declarations: the public entry and the modules it exposes, each declared on its own
// (TypeScript's transpileDeclaration), so no declaration of the implementation is published. Fails when one of them
// refers to a module outside this set, or when a file cannot be declared without the whole program.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import ts from 'typescript';

const root = join(import.meta.dirname, '..');
/** The public entry and every module its declarations refer to. */
const PUBLIC = ['index.ts', 'errors.ts', 'api/index.ts', 'api/options.ts', 'api/kv.ts', 'api/plans.ts', 'api/runs.ts', 'api/records.ts', 'api/team.ts'];

const problems = [];
for (const file of PUBLIC) {
  const source = readFileSync(join(root, 'src', file), 'utf8');
  const { outputText, diagnostics } = ts.transpileDeclaration(source, {
    fileName: file,
    compilerOptions: { module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext, target: ts.ScriptTarget.ES2022, strict: true },
    reportDiagnostics: true,
  });
  for (const d of diagnostics ?? []) problems.push(`src/${file}: ${ts.flattenDiagnosticMessageText(d.messageText, '\n')}`);
  for (const [, spec] of outputText.matchAll(/from\s+'(\.[^']+)'/g)) {
    const target = join(dirname(file), spec).replace(/\.js$/, '.ts');
    if (!PUBLIC.includes(target)) problems.push(`src/${file}: its declarations refer to ${spec}, which is not published (add it to PUBLIC in scripts/public-types.mjs, or keep the type out of the public API)`);
  }
  const out = join(root, 'dist', file.replace(/\.ts$/, '.d.ts'));
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, outputText);
}
if (problems.length > 0) {
  console.error(`public-types: ${problems.join('\n')}`);
  process.exit(1);
}
