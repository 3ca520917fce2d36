// The refusal every backend gives for a store whose layout a newer version of mcp-blackboard wrote.

/** One line naming both layout versions: the store is left as it is. */
export function newerLayout(found: number, known: number): Error {
  return new Error(
    `the store has layout version ${found}, written by a newer mcp-blackboard; this version reads layout ${known} and changes nothing. Upgrade mcp-blackboard to open it.`,
  );
}
