// What the wizard has gathered (the draft), and the pipeline document made from it.
// The document is what the API validates and creates: the wizard holds no rules of its
// own beyond sensible defaults; every check is the API's (POST /api/v1/pipelines/validate).

import { plainOnce } from "./words";
import { alertsSection, emptyAlerts, type AlertsDraft } from "./alerts";
import { emptyStep, joinDocument, joinStepsOf, outputFields, type JoinDraft } from "./chain";
import type { OutputField, SchemaField } from "./fields";

export const FIELD_TYPES = ["string", "int", "float", "bool", "timestamp", "array", "map", "json"];
export type DedupMode = "first" | "last" | "exact";

export interface Transform {
  name: string;
  expression: string;
  type: string;
}
export interface MappingRow {
  field: string; // "" = not written (existing table: a column left to its default)
  column: string;
  type: string;
}


export type { JoinDraft, OutputField, SchemaField };

export interface Draft {
  name: string;
  kafka: {
    bootstrap_servers: string;
    protocol: string;
    mechanism: string;
    username: string;
    password: string;
    ca_file: string;
  };
  topics: { name: string; partitions: number }[]; // from Test connection
  topic: string;
  nullable: string[]; // fields seen null or missing in the sample
  startFrom: "earliest" | "latest";
  samples: Record<string, unknown>[];
  fields: SchemaField[];
  eventTime: string; // "" = the Kafka message timestamp
  dedup: { enabled: boolean; mode: DedupMode; key: string[]; window: string };
  join: JoinDraft;
  transforms: Transform[];
  filter: string;
  ch: {
    kind: "embedded" | "server";
    path: string;
    host: string;
    port: string;
    username: string;
    password: string;
    database: string;
    secure: boolean;
  };
  table: string;
  tableMode: "create" | "existing";
  mapping: MappingRow[];
  orderBy: string[];
  /** Who hears when it fails, retries, lags or collects dead letters (the review step). */
  alerts: AlertsDraft;
  /** What this server already has: table and pipeline names a default must not repeat. */
  known: { tables: string[]; names: string[]; servers?: KnownServer[] };
}

/** A ClickHouse server this server's pipelines write to (no password). */
export interface KnownServer {
  host: string;
  port: number | null;
  database: string;
  username: string;
  secure: boolean;
}

/** The server's defaults the wizard starts from (GET /api/v1/ui/defaults). */
export interface Defaults {
  bootstrap_servers: string[];
  clickhouse_path: string;
  tables_in_use: { table: string }[];
  pipelines: string[];
  clickhouse_servers?: KnownServer[];
}

export function emptyDraft(defaults?: Defaults | null): Draft {
  return {
    name: "",
    kafka: { bootstrap_servers: defaults?.bootstrap_servers[0] ?? "127.0.0.1:9092", protocol: "PLAINTEXT", mechanism: "PLAIN", username: "", password: "", ca_file: "" },
    topics: [],
    topic: "",
    nullable: [],
    startFrom: "earliest",
    samples: [],
    fields: [],
    eventTime: "",
    dedup: { enabled: true, mode: "first", key: [], window: "1h" },
    join: { enabled: false, ...emptyStep(), more: [] },
    transforms: [],
    filter: "",
    ch: { kind: "embedded", path: defaults?.clickhouse_path ?? "clickhouse", host: "", port: "8123", username: "default", password: "", database: "default", secure: false },
    table: "",
    tableMode: "create",
    mapping: [],
    orderBy: [],
    alerts: emptyAlerts(),
    known: {
      tables: defaults?.tables_in_use.map((t) => t.table) ?? [],
      names: defaults?.pipelines ?? [],
      servers: defaults?.clickhouse_servers ?? [],
    },
  };
}

/** `base`, or `base_2`, `base_3`, ... : the first not in `taken`. */
export function freeName(base: string, taken: string[], sep = "_"): string {
  if (!taken.includes(base)) return base;
  for (let i = 2; ; i++) if (!taken.includes(`${base}${sep}${i}`)) return `${base}${sep}${i}`;
}

const SASL = (protocol: string) => protocol.startsWith("SASL_");

/** The Kafka connection as the API's connection routes take it. */
export function kafkaConnection(d: Draft) {
  const k = d.kafka;
  const security: Record<string, unknown> = { protocol: k.protocol };
  if (SASL(k.protocol)) Object.assign(security, { mechanism: k.mechanism, username: k.username, password: k.password });
  if (k.ca_file.trim() && k.protocol.endsWith("SSL")) security.ca_file = k.ca_file.trim();
  return { bootstrap_servers: k.bootstrap_servers.trim(), security } as any;
}

export function clickhouseConnection(d: Draft): Record<string, unknown> {
  const c = d.ch;
  if (c.kind === "embedded") return { path: c.path.trim() };
  const conn: Record<string, unknown> = { host: c.host.trim(), username: c.username, database: c.database, secure: c.secure };
  if (c.port.trim()) conn.port = c.port.trim();
  if (c.password) conn.password = c.password;
  return conn;
}

/** A default ClickHouse column type for a field type. */
export function columnType(fieldType: string, nullable = false): string {
  const base: Record<string, string> = {
    string: "String", int: "Int64", float: "Float64", bool: "Bool",
    timestamp: "DateTime64(3, 'UTC')", array: "Array(String)", map: "Map(String, String)", json: "String",
  };
  const t = base[fieldType] ?? "String";
  return nullable && !/^(Array|Map)\(/.test(t) ? `Nullable(${t})` : t;
}

/** A column name for a field's dot path: `user.id` -> `user_id`. */
export function columnName(field: string): string {
  return field.replace(/^_kafka\./, "kafka_").replace(/[^A-Za-z0-9_]/g, "_");
}

/** Fields a mapping may use: the schema's (or the last join step's output), then the
 * computed ones; `nullable` when a value may be missing (seen null, or the right side of a
 * left join). */
export function mappableFields(d: Draft): (SchemaField & { nullable: boolean })[] {
  const steps = joinStepsOf(d);
  const base = steps.length ? outputFields(d, steps.length - 1)
    : d.fields.map((f) => ({ ...f, nullable: d.nullable.includes(f.name) }));
  const computed = d.transforms.filter((t) => t.name.trim()).map((t) => ({ name: t.name, type: t.type, nullable: true }));
  return [...base, ...computed];
}

/** A value at a dot path of a sample event. */
export function valueAt(event: Record<string, unknown> | undefined, path: string): unknown {
  let value: unknown = event;
  for (const part of path.split(".")) {
    if (value === null || typeof value !== "object") return null;
    value = (value as Record<string, unknown>)[part];
  }
  return value ?? null;
}

/** The event the filter and computed fields see: the sample, or with a join the output
 * made of the two samples. */
export function sampleEvent(d: Draft): { event: Record<string, unknown>; fields: SchemaField[] } | null {
  const steps = joinStepsOf(d);
  if (!steps.length) return d.samples[0] ? { event: d.samples[0], fields: d.fields } : null;
  const first = d.samples[0];
  if (!first) return null;
  // each step's record from the one before (by output name) and its topic's first sample
  let event: Record<string, unknown> = first;
  steps.forEach((s, k) => {
    const made: Record<string, unknown> = {};
    for (const o of s.output.filter((x) => x.on)) {
      made[o.as || o.field] = o.from === "right" ? valueAt(s.right.samples[0], o.field)
        : k === 0 ? valueAt(event, o.field) : event[o.field] ?? null;
    }
    event = made;
  });
  const fields = mappableFields({ ...d, transforms: [] }).map(({ name, type }) => ({ name, type }));
  return { event, fields };
}

/** The mapping for "create a table": keep what was edited, add new fields, drop gone ones. */
export function syncedMapping(d: Draft): MappingRow[] {
  const fields = mappableFields(d);
  const keep = new Map(d.mapping.map((m) => [m.field, m]));
  const rows: MappingRow[] = fields.map(
    (f) => keep.get(f.name) ?? {
      field: f.name,
      column: columnName(f.name),
      type: columnType(f.type, f.nullable && !d.dedup.key.includes(f.name) && f.name !== d.eventTime),
    },
  );
  if (d.dedup.enabled && d.dedup.mode === "last") {
    rows.push(keep.get("_kafka.offset") ?? { field: "_kafka.offset", column: "_version", type: "UInt64" });
  }
  return rows;
}

/** The pipeline document (streamsift's format) the draft describes. */
export function toDocument(d: Draft): Record<string, any> {
  const schema: Record<string, unknown> = { fields: d.fields.map((f) => ({ name: f.name, type: f.type })) };
  if (d.eventTime) schema.event_time = d.eventTime;
  const conn = kafkaConnection(d);
  const doc: Record<string, any> = {
    version: 1,
    name: d.name,
    source: { bootstrap_servers: conn.bootstrap_servers, topic: d.topic, start_from: d.startFrom, security: conn.security, schema },
  };
  if (d.dedup.enabled) {
    doc.dedup = d.dedup.mode === "exact"
      ? { mode: "exact", time_window: d.dedup.window }
      : { mode: d.dedup.mode, key: d.dedup.key.length === 1 ? d.dedup.key[0] : d.dedup.key, time_window: d.dedup.window };
  }
  if (d.join.enabled) {
    const left = { name: d.topic, ...doc.source } as Record<string, any>;
    if (doc.dedup) left.dedup = doc.dedup;
    delete doc.source;
    delete doc.dedup;
    Object.assign(doc, joinDocument(d, left, conn));
  }
  if (d.transforms.length) doc.transform = d.transforms.map((t) => ({ ...t }));
  if (d.filter.trim()) doc.filter = d.filter.trim();
  const sink: Record<string, any> = {
    clickhouse: clickhouseConnection(d),
    table: d.table,
    create_table: d.tableMode === "create",
    mapping: d.mapping.filter((m) => m.field).map((m) => ({ field: m.field, column: m.column, type: m.type })),
  };
  if (d.tableMode === "create" && d.orderBy.length) sink.order_by = d.orderBy;
  doc.sink = sink;
  const alerts = alertsSection(d.alerts);
  if (alerts) doc.alerts = alerts;
  return doc;
}

/** The document with stand-ins for the steps not reached yet, so that validating it names
 * only the problems of what was entered (the API checks structure before meaning). */
export function validationDocument(d: Draft, step: number, steps: string[]): Record<string, any> {
  const reached = (name: string) => steps.indexOf(name) <= step;
  if (!reached("join") && d.join.enabled) d = { ...d, join: { ...d.join, enabled: false } };
  const doc = toDocument(d);
  if (!doc.name) doc.name = "wizard-draft";
  if (!reached("topic") || !d.topic) doc.source.topic = "wizard-draft";
  if (doc.source && (!reached("topic") || !d.fields.length)) {
    doc.source.schema = { fields: [{ name: "wizard_field", type: "string" }] };
    delete doc.dedup;
  }
  if (!reached("dedup")) delete doc.dedup;
  if (!reached("transform")) { delete doc.transform; delete doc.filter; }
  if (!reached("clickhouse") || !doc.sink.mapping.length) {
    const last = doc.join ? [doc.join].flat().at(-1) : null;
    const first = last ? { name: last.output[0]?.as ?? last.output[0]?.field ?? "x", type: "string" }
      : doc.source.schema.fields[0];
    doc.sink = { clickhouse: { path: "wizard-draft" }, table: "wizard_draft", create_table: true,
      mapping: [{ field: first.name, column: "c", type: "String" }] };
    if (first.type !== "string") doc.sink.mapping[0].type = columnType(first.type);
  }
  return doc;
}

/** A problem line of a join document said as the wizard's controls name things: the first
 * source's as `source.` (its dedup as `dedup`), the second's as `right.`, step 1 as `join.`,
 * a later step's topic (source k+1) as `join[k].source.`. */
export function wizardPath(line: string): string {
  return line
    // a join's own check names its field in the message ("join: join.right.time_window: ...")
    .replace(/^(join(?:\[\d+\])?): join\.([\w.]+):/, "$1.$2:")
    .replace(/^join\[0\]/, "join")
    .replace(/^sources\[0\]\.dedup/, "dedup")
    .replace(/^sources\[0\]([.:])/, "source$1")
    .replace(/^sources\[1\]([.:])/, "right$1")
    .replace(/^sources\[(\d+)\]([.:])/, (_, k: string, c: string) => `join[${Number(k) - 1}].source${c}`);
}

/** Problem lines that belong to the control whose problem path is `path` (or below it). */
export function problemsFor(problems: string[], path: string): string[] {
  return problems.filter((line) => {
    if (!line.startsWith(path)) return false;
    const next = line.charAt(path.length);
    return next === ":" || next === "." || next === "[" || next === " ";
  });
}

/** The part of a problem line after its path, in plain words, each once: what to show
 * next to the field. */
export function problemText(lines: string[]): string | null {
  return plainOnce(lines.map((l) => l.replace(/^[^:]*:\s*/, "")));
}

/** What every wizard step gets: the draft, a way to change it, and its problems by path. */
export interface StepProps {
  draft: Draft;
  update: (change: (d: Draft) => void) => void;
  /** The message for the control whose problem path is `path`, or null; shown once the
   * control was changed or Next was pressed, or at once with `always` (a consequence of
   * something the user did elsewhere, e.g. an existing table's columns loaded). */
  err: (path: string, always?: boolean) => string | null;
}
