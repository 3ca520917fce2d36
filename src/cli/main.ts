// The `mcp-blackboard` command: a subcommand from the table below, or (the default) the MCP server over stdio or HTTP.
import { ConfigError } from '../errors.js';
import { withoutPassword } from '../store/url.js';
import { exportCommand, importCommand } from './bundle.js';
import { type Command, errorText } from './command.js';
import { runServe } from './serve.js';
import { uiCommand } from './ui.js';

/** Subcommands by name; each brings its own flags and `--help`. Without one, the server runs. */
export const COMMANDS: Record<string, Command> = { export: exportCommand, import: importCommand, ui: uiCommand };

/** Runs the command line and resolves to the exit code. Only MCP frames ever go to stdout. */
export async function main(argv: string[]): Promise<number> {
  const first = argv[0];
  if (first !== undefined && !first.startsWith('-')) {
    const command = Object.hasOwn(COMMANDS, first) ? COMMANDS[first] : undefined;
    if (!command) {
      throw new ConfigError(
        `unknown command "${first}". Commands: ${Object.keys(COMMANDS).join(', ')}; with none, it serves MCP. Run mcp-blackboard --help.`,
      );
    }
    return command.run(argv.slice(1));
  }
  return runServe(argv, COMMANDS);
}

/**
 * A failure as stderr shows it: `mcp-blackboard[ command]: ` and the error's cause and next step (one to three short
 * lines, never a stack trace), with any store password that appears in it masked. Exit code 2 for a bad flag or
 * value, else 1.
 */
export function failure(error: unknown, argv: string[], env: NodeJS.ProcessEnv = process.env): { text: string; code: number } {
  const command = Object.hasOwn(COMMANDS, argv[0] ?? '') ? ` ${argv[0]}` : '';
  let text = errorText(error);
  // Any store URL the command was given, by flag or environment, never shows its password.
  const urls = [
    env.BLACKBOARD_STORE,
    ...argv.flatMap((a, i) => (a === '--store' ? [argv[i + 1]] : a.startsWith('--store=') ? [a.slice(8)] : [])),
  ];
  for (const url of urls) text = withoutPassword(text, url);
  return { text: `mcp-blackboard${command}: ${text}\n`, code: error instanceof ConfigError ? 2 : 1 };
}
