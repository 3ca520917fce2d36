// The flag table makes both the parser and --help: every flag and every store kind in the help, defaults once.
import { describe, expect, it } from 'vitest';
import { SERVE_FLAGS, parseConfig, serveHelp } from '../../src/cli/serve.js';
import { defaultConfig } from '../../src/config.js';

describe('the flag table', () => {
  it('the server --help lists every flag of the table, its variable, and every kind of store', () => {
    const help = serveHelp({});
    for (const f of Object.values(SERVE_FLAGS)) {
      expect(help).toContain(`--${f.flag}${f.arg ? ` ${f.arg}` : ''}`);
      if (f.env) expect(help).toMatch(new RegExp(`--${f.flag}\\b[^\\n]*${f.env}`));
    }
    for (const kind of ['sqlite:///', 'sqlite://relative', 'memory://', 'postgres://', 'redis://', 'rediss://'])
      expect(help).toContain(kind);
  });

  it('no flag and no environment gives the defaults that embedding code gets', () => {
    const parsed = parseConfig([], {});
    expect(parsed.kind).toBe('serve');
    const config = parsed.kind === 'serve' ? parsed.config : undefined;
    const defined = (o: object) => Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined));
    expect(defined(config!)).toEqual(defined(defaultConfig()));
  });

  it('a flag wins over its environment variable; an empty variable counts as not set', () => {
    const run = (argv: string[], env: NodeJS.ProcessEnv) => {
      const parsed = parseConfig(argv, env);
      return parsed.kind === 'serve' ? parsed.config : undefined;
    };
    expect(run(['--namespace', 'flag'], { BLACKBOARD_NAMESPACE: 'env' })?.namespace).toBe('flag');
    expect(run([], { BLACKBOARD_NAMESPACE: 'env' })?.namespace).toBe('env');
    expect(run([], { BLACKBOARD_NAMESPACE: '' })?.namespace).toBeUndefined();
    expect(run(['--budget', 'a=1', '--budget', 'b=2'], {})?.budgets).toEqual({ a: 1, b: 2 });
  });
});
