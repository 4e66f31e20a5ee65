// Editing a stored pipeline in the wizard: its document read back into a draft, the
// wizard's document merged over the stored one (settings the wizard has no step for are
// kept), and the changes that need a fresh start (reset_state) said in words.
import { emptyDraft, type Draft, type DedupMode } from "./draft";
import { alertsFromDocument } from "./alerts";
import { joinSteps, modeOf } from "./joinWords";
import type { JoinStepDraft } from "./chain";

type Doc = Record<string, any>;

function fieldsOf(schema: Doc | undefined) {
  return ((schema?.fields ?? []) as Doc[]).map((f) => ({ name: String(f.name), type: String(f.type ?? "string") }));
}

function keyList(key: unknown): string[] {
  if (Array.isArray(key)) return key.map(String);
  return key ? [String(key)] : [];
}

/** The draft a stored document describes (secrets stay `***`: the server keeps them). */
export function fromDocument(doc: Doc): Draft {
  const d = emptyDraft();
  const joined = Array.isArray(doc.sources) && doc.join;
  const src: Doc = joined ? doc.sources[0] : doc.source ?? {};
  const sec: Doc = src.security ?? {};
  d.name = String(doc.name ?? "");
  d.kafka = {
    bootstrap_servers: String(src.bootstrap_servers ?? ""),
    protocol: String(sec.protocol ?? "PLAINTEXT"),
    mechanism: String(sec.mechanism ?? "PLAIN"),
    username: String(sec.username ?? ""),
    password: sec.password ? String(sec.password) : "",
    ca_file: String(sec.ca_file ?? ""),
  };
  d.topic = String(src.topic ?? "");
  d.topics = d.topic ? [{ name: d.topic, partitions: 0 }] : [];
  d.startFrom = src.start_from === "latest" ? "latest" : "earliest";
  d.fields = fieldsOf(src.schema);
  d.eventTime = String(src.schema?.event_time ?? "");
  const dedup: Doc | undefined = joined ? src.dedup : doc.dedup;
  d.dedup = dedup
    ? { enabled: true, mode: (dedup.mode ?? "first") as DedupMode, key: keyList(dedup.key), window: String(dedup.time_window ?? "1h") }
    : { ...d.dedup, enabled: false, key: [] };
  if (joined) {
    // each step's topic: the source its right side names (else the next in the list)
    const sources = doc.sources as Doc[];
    const [first, ...more] = joinSteps(doc).map((j, k) =>
      stepFromDocument(j, sources.find((x) => (x.name ?? x.topic) === j.right?.source) ?? sources[k + 1] ?? {}));
    d.join = { enabled: true, ...first, more };
    for (const s of [first, ...more]) if (s.right.topic) d.topics.push({ name: s.right.topic, partitions: 0 });
  }
  d.transforms = ((doc.transform ?? []) as Doc[]).map((t) => ({ name: String(t.name), expression: String(t.expression), type: String(t.type ?? "string") }));
  d.filter = String(doc.filter ?? "");
  const sink: Doc = doc.sink ?? {};
  const ch: Doc = sink.clickhouse ?? {};
  d.ch = ch.host
    ? { kind: "server", path: "", host: String(ch.host), port: ch.port ? String(ch.port) : "", username: String(ch.username ?? "default"),
        password: ch.password ? String(ch.password) : "", database: String(ch.database ?? "default"), secure: Boolean(ch.secure) }
    : { ...d.ch, kind: "embedded", path: String(ch.path ?? "") };
  d.table = String(sink.table ?? "");
  d.tableMode = sink.create_table === false ? "existing" : "create";
  d.mapping = ((sink.mapping ?? []) as Doc[]).map((m) => ({ field: String(m.field), column: String(m.column), type: String(m.type) }));
  d.orderBy = keyList(sink.order_by);
  d.alerts = alertsFromDocument(doc.alerts);
  return d;
}

/** A join step of a document, with the source it adds, as the wizard's draft of it. */
function stepFromDocument(j: Doc, right: Doc): JoinStepDraft {
  return {
    right: {
      topic: String(right.topic ?? ""), samples: [], fields: fieldsOf(right.schema), nullable: [],
      eventTime: String(right.schema?.event_time ?? ""),
      dedup: right.dedup
        ? { enabled: true, key: keyList(right.dedup.key)[0] ?? "", window: String(right.dedup.time_window ?? "1h") }
        : { enabled: false, key: "", window: "1h" },
    },
    type: j.type === "left" ? "left" : "inner",
    mode: modeOf(j),
    leftKey: String(j.left?.key ?? ""), rightKey: String(j.right?.key ?? ""),
    leftWindow: String(j.left?.time_window ?? "1h"), rightWindow: String(j.right?.time_window ?? "1h"),
    rightTtl: String(j.right?.ttl ?? ""),
    output: ((j.output ?? []) as Doc[]).map((o) => ({ from: o.from === "right" ? "right" : "left", field: String(o.field), as: String(o.as ?? o.field), on: true })),
  };
}

// the wizard shows the stored alerts too: a section it no longer has was removed there
const MANAGED = ["source", "sources", "dedup", "join", "transform", "filter", "alerts"];

/** The wizard's document over the stored one: what the wizard has no step for stays. */
export function mergedDocument(stored: Doc, made: Doc): Doc {
  const out: Doc = { ...stored };
  for (const key of MANAGED) delete out[key];
  for (const [key, value] of Object.entries(made)) {
    if (key === "sink") out.sink = { ...(stored.sink ?? {}), ...value, clickhouse: value.clickhouse };
    else if (key === "source" && stored.source) out.source = { ...stored.source, ...value };
    else out[key] = value;
  }
  if (!made.sink?.order_by && out.sink) delete out.sink.order_by;
  return out;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a ?? null) === JSON.stringify(b ?? null);

/** The changes between two documents that the checkpoint's state was built on, in words;
 * saving them needs reset_state (the topics are read again from start_from). */
export function resetReasons(before: Doc, after: Doc): string[] {
  const reasons: string[] = [];
  const topics = (d: Doc) => (d.sources ? (d.sources as Doc[]).map((s) => s.topic) : [d.source?.topic]);
  if (!same(topics(before), topics(after)))
    reasons.push(`The topics change (${topics(before).join(", ")} → ${topics(after).join(", ")}): the stored offsets belong to the old ones.`);
  const dedup = (d: Doc) => (d.sources ? d.sources[0]?.dedup : d.dedup);
  const b = dedup(before), a = dedup(after);
  if (!same(b?.key, a?.key) || !same(b?.mode ?? "first", a?.mode ?? "first") || Boolean(a) !== Boolean(b))
    reasons.push(`The deduplication changes (${b ? `key ${keyList(b.key).join(", ") || "payload"}, ${b.mode ?? "first"}` : "off"} → ${a ? `key ${keyList(a.key).join(", ") || "payload"}, ${a.mode ?? "first"}` : "off"}): the remembered keys no longer fit.`);
  else if (!same(b?.time_window, a?.time_window))
    reasons.push(`The dedup window changes (${b?.time_window} → ${a?.time_window}): the remembered keys were kept for the old window.`);
  // the joined topics' own dedup (the first topic's is above)
  const joinedDedups = (d: Doc) => ((d.sources ?? []) as Doc[]).slice(1).filter((s) => s.dedup).map((s) => [s.topic, s.dedup?.key, s.dedup?.mode ?? "first", s.dedup?.time_window]);
  if (!same(joinedDedups(before), joinedDedups(after)))
    reasons.push("The deduplication of a joined topic changes: the remembered keys no longer fit.");
  reasons.push(...joinResetReasons(joinSteps(before), joinSteps(after)));
  return reasons;
}

/** The join changes the state was built on (as the server's service/edits.py has them):
 * each step's mode, keys, windows and table ttl, and the steps themselves. */
function joinResetReasons(before: Doc[], after: Doc[]): string[] {
  if (before.length !== after.length)
    return [`The join changes from ${before.length} to ${after.length} step(s): the records waiting for a match were kept for the old join.`];
  const reasons: string[] = [];
  before.forEach((b, i) => {
    const a = after[i];
    const step = before.length > 1 ? ` of step ${i + 1}` : "";
    if (modeOf(b) !== modeOf(a))
      reasons.push(`The join mode${step} changes (${modeOf(b)} → ${modeOf(a)}): the state kept for matching belongs to the old mode.`);
    else if (!same(b.right?.ttl, a.right?.ttl))
      reasons.push(`The table's ttl${step} changes (${b.right?.ttl ?? "none"} → ${a.right?.ttl ?? "none"}): the kept values were timed for the old one.`);
    const basis = (s: Doc) => [keyList(s.left?.key), s.left?.time_window, keyList(s.right?.key), s.right?.time_window, before.length > 1 ? s.right?.source : null];
    if (!same(basis(b), basis(a)))
      reasons.push(`The join keys or windows${step} change: the records waiting for a match were kept for the old join.`);
  });
  return reasons;
}
