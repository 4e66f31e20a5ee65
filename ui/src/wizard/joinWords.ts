// A join's mode and steps in plain words: the wizard's choices, its review and the pipeline
// page say them the same way (docs/semantics.md, "Temporal join").

export type JoinMode = "interval" | "latest" | "table";

/** Each mode with what it writes, as the join step offers them (the left side: the first
 * topic, or the previous step's rows). */
export const MODES: [JoinMode, string][] = [
  ["interval", "Interval: one row per matching pair (each event of the joined topic with the key, inside the windows)."],
  ["latest", "Latest: one row per left event, with the joined topic's newest version at that time (enrichment)."],
  ["table", "Table: the joined topic is a table of current values (lookup): one row per left event, with its key's value written last; a tombstone deletes it."],
];

/** The mode a document's join step has (interval when it says none). */
export function modeOf(step: Record<string, any> | undefined): JoinMode {
  const m = step?.mode;
  return m === "latest" || m === "table" ? m : "interval";
}

/** A document's join as a list of steps (one mapping is a one-step list). */
export function joinSteps(doc: Record<string, any> | null | undefined): Record<string, any>[] {
  const j = doc?.join;
  return Array.isArray(j) ? j : j ? [j] : [];
}

const keys = (k: unknown) => (Array.isArray(k) ? k.join(" + ") : String(k ?? ""));

/** One sentence per join step of a stored document: what it joins, on which keys, how. */
export function joinSentences(doc: Record<string, any> | null | undefined): string[] {
  const steps = joinSteps(doc);
  return steps.map((s, i) => {
    const left = i === 0 ? String(s.left?.source ?? "") : `the rows of step ${i}`;
    const right = String(s.right?.source ?? "");
    const on = `${i === 0 ? `${left}.` : ""}${keys(s.left?.key)} = ${right}.${keys(s.right?.key)}`;
    const type = s.type === "left" ? "left: unmatched rows are written too" : "inner: unmatched rows are not written";
    const mode = modeOf(s);
    const what = mode === "latest"
      ? `one row per ${left} record, with the newest ${right} version at its event time (latest, enrichment)`
      : mode === "table"
        ? `${right} is a table of current values (table, lookup): one row per ${left} record with its key's value${s.right?.ttl ? `, a value forgotten ${s.right.ttl} after its event time` : ""}`
        : `one row per matching pair within ${s.left?.time_window ?? "?"} / ${s.right?.time_window ?? "?"} (interval)`;
    return `${steps.length > 1 ? `Step ${i + 1}: j` : "J"}oins ${left} with ${right} where ${on}: ${what}; ${type}.`;
  });
}
