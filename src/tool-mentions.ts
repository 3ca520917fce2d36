// Tool mentions in texts a model reads (descriptions, instructions, error messages): written `{tool:plan_list}`
// wherever the text is made, rendered with the names one server registered.

const MENTION = /\{tool:([a-z_]+)\}/g;

/** How one server names a tool: its registered name (namespace prefix included), or undefined when not registered. */
export type ToolNamer = (name: string) => string | undefined;

/** Names every tool by its base name (for texts shown outside a server, such as a CLI error line). */
export const plainNames: ToolNamer = (name) => name;

/**
 * Renders the `{tool:NAME}` mentions of a text. What mentions a tool this server does not have is left out, so the
 * text never points at a tool the model cannot call: the parenthesis that holds the mention, else the clause (after
 * the sentence's first, at "; " or ", and "), else the whole sentence. Texts that mention tools therefore keep each
 * mention where it can go without losing the rest: a sentence's first clause says what happened, and a mention there
 * takes the sentence with it.
 */
export function renderMentions(text: string, nameOf: ToolNamer): string {
  if (!text.includes('{tool:')) return text;
  const lacking = (part: string): boolean => [...part.matchAll(MENTION)].some((m) => nameOf(m[1]) === undefined);
  return sentences(text)
    .map((sentence) => (lacking(sentence) ? withoutLacking(sentence, lacking) : sentence))
    .filter((sentence): sentence is string => sentence !== undefined)
    .map((sentence) => sentence.replace(MENTION, (_, name: string) => nameOf(name)!))
    .join(' ');
}

/**
 * A text cut into sentences: after ".", "!" or "?" and a space, but not inside parentheses nor after "e.g." or
 * "i.e." (which end no sentence), so a mention is judged with the whole sentence it belongs to.
 */
function sentences(text: string): string[] {
  const out = [''];
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth = Math.max(0, depth - 1);
    out[out.length - 1] += c;
    const ends = depth === 0 && /[.!?]/.test(c) && /\s/.test(text[i + 1] ?? '') && !/\b(e\.g|i\.e)\.$/.test(out[out.length - 1]);
    if (ends) {
      while (/\s/.test(text[i + 1] ?? '')) i++;
      out.push('');
    }
  }
  return out.filter((sentence, i) => sentence !== '' || i === 0);
}

/** A sentence without the parentheses and later clauses that mention a lacking tool; undefined when its first does. */
function withoutLacking(sentence: string, lacking: (part: string) => boolean): string | undefined {
  const end = /[.!?]$/.test(sentence) ? sentence.slice(-1) : '';
  const body = sentence.slice(0, sentence.length - end.length).replace(/\s*\([^()]*\)/g, (group) => (lacking(group) ? '' : group));
  const [first, ...rest] = clauses(body);
  if (lacking(first.text)) return undefined;
  return first.text + rest.map((c) => (lacking(c.text) ? '' : c.separator + c.text)).join('') + end;
}

/** A text cut at "; " and ", and " outside parentheses, each clause with the separator before it. */
function clauses(text: string): Array<{ separator: string; text: string }> {
  const out = [{ separator: '', text: '' }];
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '(') depth++;
    else if (c === ')') depth = Math.max(0, depth - 1);
    const separator = depth > 0 ? undefined : text.startsWith('; ', i) ? '; ' : text.startsWith(', and ', i) ? ', and ' : undefined;
    if (separator !== undefined) {
      out.push({ separator, text: '' });
      i += separator.length - 1;
    } else out[out.length - 1].text += c;
  }
  return out;
}

/** The base names a text mentions. */
export function mentionedTools(text: string): string[] {
  return [...text.matchAll(MENTION)].map((m) => m[1]);
}
