#!/usr/bin/env node
// The bin: runs the command line (src/cli/), and turns any failure, even one while loading, into short lines on stderr.
const argv = process.argv.slice(2);
const cli = await import('./cli/main.js').catch((error: unknown) => {
  // The program itself cannot load (a broken install): its first lines, never a stack trace.
  const lines = (error instanceof Error ? error.message : String(error))
    .split('\n')
    .filter((line) => line.trim() && !/^\s+at\s/.test(line));
  process.stderr.write(`mcp-blackboard: ${lines.slice(0, 3).join('\n')}\n`);
  process.exit(1);
});
cli.main(argv).then(
  (code) => process.exit(code),
  (error: unknown) => {
    const { text, code } = cli.failure(error, argv);
    process.stderr.write(text);
    process.exit(code);
  },
);
