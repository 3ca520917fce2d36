// Tool mentions in texts a model reads (descriptions, instructions, error messages): written `{tool:plan_list}`
// wherever the text is made, rendered with the names one server registered.

const MENTION = /\{tool:([a-z_]+)\}/g;

/** How one server names a tool: its registered name (namespace prefix included), or undefined when not registered. */
export type ToolNamer = (name: string) => string | undefined;

/** Names every tool by its base name (for texts shown outside a server, such as a CLI error line). */
export const plainNames: ToolNamer = (name) => name;

/**
 * Renders the `{tool:NAME}` mentions of a text. A sentence that mentions a tool this server does not have is left
 * out, so the text never points at a tool the model cannot call. Texts that mention tools therefore keep each
 * mention in a sentence that can go without losing the rest (a sentence ends at ".", "!" or "?" before a space).
 */
export function renderMentions(text: string, nameOf: ToolNamer): string {
  if (!text.includes('{tool:')) return text;
  return text
    .split(/(?<=[.!?])\s+/)
    .filter((sentence) => [...sentence.matchAll(MENTION)].every((m) => nameOf(m[1]) !== undefined))
    .map((sentence) => sentence.replace(MENTION, (_, name: string) => nameOf(name)!))
    .join(' ');
}

/** The base names a text mentions. */
export function mentionedTools(text: string): string[] {
  return [...text.matchAll(MENTION)].map((m) => m[1]);
}
