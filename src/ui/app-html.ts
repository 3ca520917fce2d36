// The board's MCP App as one self-contained HTML file: the page's CSS, its shared renderer's modules, the app's code
// and the ext-apps client library, all inline (hosts load an app with no network).
import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const EXT_APPS = '@modelcontextprotocol/ext-apps';

/**
 * An ES module's text as a function body that returns its exports, its imports taken from `modules`: the few forms
 * the board's own files and the ext-apps bundle use (`import {a, b as c} from 'x'`, `export function|const|class`,
 * `export {a as b}`). Each module keeps its own scope, so their top-level names never clash.
 */
export function inlineModule(name: string, code: string): string {
  const exported: string[] = [];
  let body = code.replace(/^import\s*\{([^}]*)\}\s*from\s*['"]([^'"]+)['"];?\s*$/gm, (_all, names: string, from: string) => {
    const bindings = names
      .split(',')
      .map((n) => n.trim())
      .filter(Boolean)
      .map((n) => n.replace(/\s+as\s+/, ': '));
    return `const { ${bindings.join(', ')} } = __modules[${JSON.stringify(from)}];`;
  });
  body = body.replace(/^export\s+(async\s+function|function|const|let|class)\s+([A-Za-z_$][\w$]*)/gm, (_all, kind: string, id: string) => {
    exported.push(`${id}: ${id}`);
    return `${kind} ${id}`;
  });
  body = body.replace(/export\s*\{([^}]*)\};?\s*$/, (_all, list: string) => {
    for (const item of list
      .split(',')
      .map((n) => n.trim())
      .filter(Boolean)) {
      const [local, as] = item.split(/\s+as\s+/);
      exported.push(`${as ?? local}: ${local}`);
    }
    return '';
  });
  if (/^\s*(import|export)\s/m.test(body)) throw new Error(`${name}: an import or export form the app builder does not inline`);
  return `__modules[${JSON.stringify(name)}] = (() => {\n${body}\nreturn { ${exported.join(', ')} };\n})();\n`;
}

/** Text safe inside an inline `<script>` or `<style>` element. */
const inline = (text: string, tag: 'script' | 'style'): string =>
  text.replace(new RegExp(`</${tag}`, 'gi'), `<\\/${tag}`).replace(/<!--/g, '<\\!--');

const BODY = `
<header class="top">
  <div class="brand"><span>mcp-blackboard</span><span class="note" id="revision"></span></div>
  <div class="conn" id="conn" data-state="connecting" role="status" aria-live="polite">
    <span class="dot" aria-hidden="true"></span><span id="conn-text">Loading…</span>
  </div>
</header>
<nav class="summary" id="summary" aria-label="Summary"></nav>
<main class="board">
  <section class="panel" id="threads-panel" aria-labelledby="threads-title"><h2 id="threads-title">Threads</h2><div id="threads" class="stack"></div></section>
  <section class="panel" id="plans-panel" aria-labelledby="plans-title"><h2 id="plans-title">Plans</h2><div id="plans" class="stack"></div></section>
  <section class="panel" id="team-panel" aria-labelledby="team-title" hidden><h2 id="team-title">Team</h2><div id="team" class="stack"></div></section>
  <section class="panel wide" id="keys-panel" aria-labelledby="keys-title"><h2 id="keys-title">Recent keys</h2><div id="scopes" class="stack"></div></section>
</main>`;

/**
 * The page's CSS for the app: the host's theme (light or dark, from its context) wins over the system's, so the dark
 * colours also apply under `data-theme="dark"` and not under `data-theme="light"`.
 */
export function themedCss(css: string): string {
  const dark = /@media \(prefers-color-scheme: dark\) \{\s*:root \{([^}]*)\}\s*\}/.exec(css);
  if (!dark) return css;
  return `${css.replace(dark[0], `@media (prefers-color-scheme: dark) { :root:not([data-theme="light"]) {${dark[1]}} }`)}\n:root[data-theme="dark"] {${dark[1]}}\n`;
}

/**
 * The board's own modules the app runs, each after the modules it imports, from the app's entry `app.js`: the ones
 * beside it that it imports (`./render.js`), and theirs in turn. Any other relative import is refused, as is a cycle:
 * inlined modules run in this order, each needing its imports' exports.
 */
function moduleOrder(asset: (file: string) => string, entry = 'app.js'): string[] {
  const order: string[] = [];
  const visit = (file: string, path: string[]): void => {
    if (order.includes(file)) return;
    if (path.includes(file)) throw new Error(`The app's modules import each other in a cycle: ${[...path, file].join(' → ')}`);
    for (const [, from] of asset(file).matchAll(/^import\s[^;]*?from\s*['"](\.[^'"]*)['"]/gm)) {
      const next = /^\.\/([\w-]+\.js)$/.exec(from)?.[1];
      if (!next) throw new Error(`${file}: imports ${from}; the app builder inlines only files beside it (./name.js)`);
      visit(next, [...path, file]);
    }
    order.push(file);
  };
  visit(entry, []);
  return order;
}

let cached: string | undefined;

/** The app's HTML (built once per process from the installed files). */
export function boardAppHtml(): string {
  if (cached) return cached;
  const dirs = [new URL('./assets/', import.meta.url), new URL('../../src/ui/assets/', import.meta.url)];
  const dir = dirs.find((d) => existsSync(fileURLToPath(new URL('render.js', d))));
  if (!dir) throw new Error("The board's page files (src/ui/assets) are missing from this installation.");
  const asset = (file: string): string => readFileSync(fileURLToPath(new URL(file, dir)), 'utf8');
  const extApps = readFileSync(createRequire(import.meta.url).resolve(`${EXT_APPS}/app-with-deps`), 'utf8');
  const script = [
    'const __modules = {};',
    inlineModule(EXT_APPS, extApps),
    ...moduleOrder(asset).map((file) => inlineModule(`./${file}`, asset(file))),
  ].join('\n');
  cached = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="color-scheme" content="light dark">
<title>mcp-blackboard board</title>
<style>${inline(themedCss(asset('board.css')), 'style')}</style>
</head>
<body class="app">${BODY}
<script type="module">${inline(script, 'script')}</script>
</body>
</html>
`;
  return cached;
}
