// The API's problem lines said in the product's words: pydantic's and sqlglot's generic
// texts become short plain phrases, repeats are said once.

const PLAIN: [RegExp, string][] = [
  [/String should have at least 1 character/i, "required: fill it in"],
  [/(Tuple|List) should have at least 1 item after validation, not 0/i, "pick at least one"],
  [/(Tuple|List) should have at least (\d+) items? after validation, not \d+/i, "pick at least $2"],
  [/^Field required$/i, "required: fill it in"],
  [/^expected a duration such as .*, got an empty string$/i, "required: fill it in"],
  [/^not an http\(s\) URL with a host and no user:password@ part: ''$/i, "required: fill it in"],
  [/^'' is not an? (host name or address|e-mail address)$/i, "required: fill it in"],
  [/Input should be a valid integer.*/i, "a whole number is needed"],
  [/Input should be a valid number.*/i, "a number is needed"],
  [/Input should be a valid boolean.*/i, "yes or no is needed"],
  [/Input should be '([^']*)'(, '[^']*')* or '([^']*)'/i, "pick one of the offered values"],
  [/Extra inputs are not permitted/i, "not a setting here"],
  [/Required keyword: '(\w+)' missing for <class '[^']*'>/i, "the expression is incomplete: something is missing after an operator"],
  [/Expected \w+ after \w+.*$/i, "the expression is incomplete"],
  [/Invalid expression \/ Unexpected token\.?.*$/i, "the expression cannot be read: check its brackets and operators"],
  [/<class '[^']*'>/g, "an expression"],
  [/^expression: /i, ""],
  [/^not valid Spark SQL: (?=the expression)/i, ""],
  [/\.?\s*Line 1, Col: (\d+)\.?$/i, " (near character $1)"],
  [/\.?\s*Line (\d+), Col: (\d+)\.?$/i, " (line $1, character $2)"],
  [/^Value error, /i, ""],
  [/^Assertion failed, /i, ""],
];

/** One message in plain words. */
export function plain(text: string): string {
  let out = text.trim();
  for (const [pattern, words] of PLAIN) out = out.replace(pattern, words);
  return out;
}

/** Messages in plain words, each once, joined for one line next to a field. */
export function plainOnce(lines: string[]): string | null {
  const seen: string[] = [];
  for (const l of lines) {
    const p = plain(l);
    if (p && !seen.includes(p)) seen.push(p);
  }
  return seen.length ? seen.join("; ") : null;
}

/** A "path: message" problem line with its message in plain words. */
export function plainLine(line: string): string {
  const at = line.indexOf(": ");
  return at < 0 ? plain(line) : `${line.slice(0, at)}: ${plain(line.slice(at + 2))}`;
}
