// A join of two or more topics in the wizard: step 1 joins the first topic with a second;
// each further step joins the previous step's output with one more topic
// (docs/configuration.md, "Three or more sources: join steps"). What each step's left side
// has, what it outputs, its default output, and the `sources` + `join` of the document.
import type { OutputField, SchemaField } from "./fields";
import type { JoinMode } from "./joinWords";

/** A topic a join step adds: its sample, fields and own dedup. */
export interface RightDraft {
  topic: string;
  samples: Record<string, unknown>[];
  fields: SchemaField[];
  nullable: string[];
  eventTime: string;
  dedup: { enabled: boolean; key: string; window: string };
}

/** One join step: the topic it adds and how it meets the left side. */
export interface JoinStepDraft {
  right: RightDraft;
  type: "inner" | "left";
  /** interval (pairs), latest (enrichment) or table (lookup: no right window, optional ttl). */
  mode: JoinMode;
  leftKey: string;
  rightKey: string;
  leftWindow: string;
  rightWindow: string;
  rightTtl: string; // mode table: "" = a value stays until a tombstone
  output: OutputField[];
}

/** The join: step 1 itself, and the steps after it (`more`, each adding one topic). */
export interface JoinDraft extends JoinStepDraft {
  enabled: boolean;
  more: JoinStepDraft[];
}

export type Typed = SchemaField & { nullable: boolean };

/** What the join steps read of the wizard's draft (draft.ts's Draft has all of it). */
export interface StepsDraft {
  topic: string;
  startFrom: "earliest" | "latest";
  fields: SchemaField[];
  nullable: string[];
  join: JoinDraft;
}

export function emptyStep(mode: JoinMode = "interval"): JoinStepDraft {
  return {
    right: { topic: "", samples: [], fields: [], nullable: [], eventTime: "", dedup: { enabled: false, key: "", window: "1h" } },
    type: "inner", mode, leftKey: "", rightKey: "", leftWindow: "1h", rightWindow: "1h", rightTtl: "", output: [],
  };
}

/** The join's steps in order (none when the join is off). */
export function joinStepsOf(d: StepsDraft): JoinStepDraft[] {
  return d.join.enabled ? [d.join, ...(d.join.more ?? [])] : [];
}

/** The fields step `k`'s left side has: the first topic's, or the previous step's output. */
export function leftFields(d: StepsDraft, k: number): Typed[] {
  if (k === 0) return d.fields.map((f) => ({ ...f, nullable: d.nullable.includes(f.name) }));
  return outputFields(d, k - 1);
}

/** The record step `k` makes: its output's names and types; a field may be missing when its
 * side may be (a left join's right side, or a missing left field carried on). */
export function outputFields(d: StepsDraft, k: number): Typed[] {
  const step = joinStepsOf(d)[k];
  const left = leftFields(d, k);
  return step.output.filter((o) => o.on).map((o) => {
    const name = o.as || o.field;
    if (o.from === "left") {
      const f = left.find((x) => x.name === o.field);
      return { name, type: f?.type ?? "string", nullable: f?.nullable ?? false };
    }
    const f = step.right.fields.find((x) => x.name === o.field);
    return { name, type: f?.type ?? "string", nullable: step.right.nullable.includes(o.field) || step.type === "left" };
  });
}

/** Step `k`'s output by default: every field of both sides, dots as `_`, a right field whose
 * name the left already has prefixed `right_` (or the topic's name, after step 1). */
export function defaultOutput(d: StepsDraft, k = 0): OutputField[] {
  const step = joinStepsOf(d)[k] ?? d.join;
  const plain = (name: string) => name.replace(/[^A-Za-z0-9_]/g, "_");
  const left = leftFields(d, k).map((f) => ({ from: "left" as const, field: f.name, as: plain(f.name), on: true }));
  const taken = new Set(left.map((o) => o.as));
  const prefix = k === 0 ? "right" : plain(step.right.topic);
  const right = step.right.fields.map((f) => {
    const name = taken.has(plain(f.name)) ? `${prefix}_${plain(f.name)}` : plain(f.name);
    return { from: "right" as const, field: f.name, as: name, on: f.name !== step.rightKey };
  });
  return [...left, ...right];
}

/** The likely join keys of step `k`: a right field named like a left one (user_id ~ user.id). */
export function likelyPair(d: StepsDraft, k: number): [string, string] | null {
  const plain = (n: string) => n.replace(/[^A-Za-z0-9]/g, "").toLowerCase();
  const right = (joinStepsOf(d)[k] ?? d.join).right.fields;
  for (const l of leftFields(d, k)) {
    const r = right.find((x) => plain(x.name) === plain(l.name));
    if (r) return [l.name, r.name];
  }
  return null;
}

/** The document's `sources` and `join` for a joined draft: one `join` mapping for two
 * topics (as before the steps existed), a list of steps for three or more. */
export function joinDocument(d: StepsDraft, left: Record<string, any>, conn: { bootstrap_servers: string; security: unknown }) {
  const steps = joinStepsOf(d);
  const source = (r: RightDraft) => {
    const schema: Record<string, unknown> = { fields: r.fields.map((f) => ({ name: f.name, type: f.type })) };
    if (r.eventTime) schema.event_time = r.eventTime;
    const s: Record<string, any> = {
      name: r.topic, bootstrap_servers: conn.bootstrap_servers, topic: r.topic,
      start_from: d.startFrom, security: conn.security, schema,
    };
    if (r.dedup.enabled) s.dedup = { key: r.dedup.key, time_window: r.dedup.window };
    return s;
  };
  const stepDocument = (s: JoinStepDraft, k: number) => {
    // a table side has no window; its ttl is optional
    const table = s.mode === "table";
    return {
      type: s.type,
      mode: s.mode,
      left: k === 0 ? { source: d.topic, key: s.leftKey, time_window: s.leftWindow } : { key: s.leftKey, time_window: s.leftWindow },
      right: table
        ? { source: s.right.topic, key: s.rightKey, ...(s.rightTtl?.trim() ? { ttl: s.rightTtl.trim() } : {}) }
        : { source: s.right.topic, key: s.rightKey, time_window: s.rightWindow },
      output: s.output.filter((o) => o.on).map((o) => (o.as && o.as !== o.field ? { from: o.from, field: o.field, as: o.as } : { from: o.from, field: o.field })),
    };
  };
  const join = steps.map(stepDocument);
  return { sources: [left, ...steps.map((s) => source(s.right))], join: join.length > 1 ? join : join[0] };
}
