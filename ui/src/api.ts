// The native API over HTTP (same origin): the only way the UI reaches the service.
// Errors become ApiError with the server's words: `message`, and `problems` (one
// "field.path: message" line each) for a document or request with problems.

export class ApiError extends Error {
  status: number;
  problems: string[];
  hint: string | null;
  constructor(status: number, message: string, problems: string[] = [], hint: string | null = null) {
    super(message);
    this.status = status;
    this.problems = problems;
    this.hint = hint;
  }
  /** The whole error in words, for a message line. */
  get words(): string {
    const parts = [this.message, ...this.problems];
    if (this.hint) parts.push(`hint: ${this.hint}`);
    return parts.join("\n");
  }
}

// The token of a server that has one: asked once, kept for this tab (sessionStorage, gone
// when the tab closes; /docs reads it from here too), sent with every request. A 401 with
// a token means it is wrong: it is forgotten and asked for again.
const TOKEN_KEY = "streamsift.token";
let onUnauthorized: ((rejected: boolean) => void) | null = null;

export function setUnauthorizedHandler(handler: (rejected: boolean) => void): void {
  onUnauthorized = handler;
}
export function setToken(token: string): void {
  sessionStorage.setItem(TOKEN_KEY, token);
}
function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

/** Whether the server takes `candidate` (or needs no token): asked before it is kept. */
export async function tokenAccepted(candidate: string): Promise<boolean> {
  const response = await fetch("/api/v1/pipelines", {
    headers: { Accept: "application/json", Authorization: `Bearer ${candidate}` },
  });
  return response.status !== 401;
}

type Body = { json: unknown } | { yaml: string } | undefined;

export async function request<T>(method: string, path: string, body?: Body): Promise<T> {
  const headers: Record<string, string> = { Accept: "application/json" };
  const t = token();
  if (t) headers.Authorization = `Bearer ${t}`;
  let payload: string | undefined;
  if (body && "json" in body) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body.json);
  } else if (body && "yaml" in body) {
    headers["Content-Type"] = "application/yaml";
    payload = body.yaml;
  }
  let response: Response;
  try {
    response = await fetch(path, { method, headers, body: payload });
  } catch {
    throw new ApiError(0, "the streamsift server did not answer: is it still running?");
  }
  if (response.status === 204) return undefined as T;
  const text = await response.text();
  let data: any = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = null;
  }
  if (!response.ok) {
    if (response.status === 401) {
      if (t) sessionStorage.removeItem(TOKEN_KEY);
      if (onUnauthorized) onUnauthorized(Boolean(t));
    }
    const message = data?.message ?? `the server answered ${response.status} ${response.statusText}`;
    const details = data?.details ?? {};
    throw new ApiError(response.status, message, details.problems ?? [], details.hint ?? null);
  }
  return data as T;
}

const get = <T>(path: string) => request<T>("GET", path);
const post = <T>(path: string, json?: unknown) =>
  request<T>("POST", path, json === undefined ? undefined : { json });

// ---------------------------------------------------------------- shapes (see /openapi.json)

export type State =
  | "Created" | "Running" | "Stopping" | "Stopped" | "Terminating" | "Resuming" | "Failed";

export interface Pipeline {
  id: string;
  name: string;
  state: State;
  desired_state: string;
  version: number;
  created_at: string;
  updated_at: string;
  error: string | null;
  error_at: string | null;
}

export interface Status {
  id: string;
  state: State;
  version: number;
  error: string | null;
  hint: string | null;
  worker_state: string | null;
  read: number;
  written: number;
  duplicates: number;
  dlq: number;
  late: number;
  late_dropped: number;
  batches: number;
  lag: number | null;
  lag_by_partition: Record<string, number>;
  last_batch_at: string | null;
  last_batch_duration_ms: number | null;
  reported_at: string | null;
}

export interface StatusChange {
  at: string;
  from_state: State | null;
  to_state: State;
  error: string | null;
  note: string | null;
}

export interface KafkaSecurity {
  protocol: string;
  mechanism?: string | null;
  username?: string | null;
  password?: string | null;
  ca_file?: string | null;
}

export interface KafkaConnection {
  bootstrap_servers: string;
  security: KafkaSecurity;
}

export interface Topic {
  name: string;
  partitions: number;
}

export interface SampleMessage {
  partition: number;
  offset: number;
  timestamp: string | null;
  key: string | null;
  value: unknown;
  raw: string | null;
  error: string | null;
}

export interface InferredField {
  name: string;
  type: string;
  nullable: boolean;
  examples: unknown[];
}

export interface Inferred {
  fields: InferredField[];
  event_time_candidates: { name: string; kind: string; note: string }[];
  dedup_key_candidates: string[];
  samples: number;
  skipped: number;
}

export interface ExpressionValue {
  value: unknown;
  kind: string;
  passes: boolean | null;
  note: string | null;
}

export interface ClickHouseTest {
  version: string;
  database: string;
  tables: string[];
}

export interface Column {
  name: string;
  type: string;
}

export interface DlqStats {
  table: string;
  exists: boolean;
  total: number;
  pending: number;
  consumed: number;
  replayed: number;
  replaying: number;
  by_class: {
    stage: string;
    error_class: string;
    pending: number;
    consumed: number;
    replayed: number;
    replaying: number;
  }[];
}

export interface DeadLetter {
  topic: string;
  partition: number;
  offset: number;
  kafka_timestamp: string | null;
  failed_at: string;
  stage: string;
  error_class: string;
  error: string;
  replay_attempts: number;
  key: string | null;
  payload: string | null;
  payload_base64: string | null;
}

export interface TableRows {
  table: string;
  exists: boolean;
  count: number;
  columns: string[];
  order: string | null;
  rows: unknown[][];
}

export interface ReplayResult {
  replayed: number;
  still_failing: number;
  dry_run: boolean;
}

// ---------------------------------------------------------------- routes

const P = "/api/v1/pipelines";
const id = (pipelineId: string) => `${P}/${encodeURIComponent(pipelineId)}`;

export const api = {
  pipelines: () => get<Pipeline[]>(P),
  pipeline: (pid: string) => get<Pipeline>(id(pid)),
  status: (pid: string) => get<Status>(`${id(pid)}/status`),
  history: (pid: string) => get<StatusChange[]>(`${id(pid)}/history`),
  rows: (pid: string, limit = 10) => get<TableRows>(`${id(pid)}/rows?limit=${limit}`),
  document: (pid: string) => get<Record<string, unknown>>(`${id(pid)}/document`),
  action: (pid: string, action: "stop" | "terminate" | "resume") =>
    post<Pipeline>(`${id(pid)}/${action}`),
  remove: (pid: string) => request<void>("DELETE", id(pid)),
  edit: (pid: string, yaml: string, resetState: boolean) =>
    request<Pipeline>("PUT", `${id(pid)}${resetState ? "?reset_state=true" : ""}`, { yaml }),
  create: (doc: unknown) => post<Pipeline>(P, doc),
  createYaml: (yaml: string) => request<Pipeline>("POST", P, { yaml }),
  validateYaml: (yaml: string) =>
    request<{ name: string; summary: string }>("POST", `${P}/validate`, { yaml }),
  validate: (doc: unknown) => post<{ name: string; summary: string }>(`${P}/validate`, doc),
  dlqStats: (pid: string) => get<DlqStats>(`${id(pid)}/dlq/stats`),
  dlqMessages: (pid: string, limit = 50, offset = 0) =>
    get<{ pending: number; messages: DeadLetter[] }>(
      `${id(pid)}/dlq/messages?limit=${limit}&offset=${offset}`,
    ),
  dlqConsume: (pid: string, limit: number) =>
    post<{ consumed: number; messages: DeadLetter[] }>(`${id(pid)}/dlq/consume?limit=${limit}`),
  dlqPurge: (pid: string) => post<{ purged: number }>(`${id(pid)}/dlq/purge`),
  dlqReplay: (pid: string, dryRun: boolean) =>
    post<ReplayResult>(`${id(pid)}/dlq/replay`, { dry_run: dryRun }),
  kafkaTest: (c: KafkaConnection) =>
    post<{ brokers: string[]; topics: Topic[] }>("/api/v1/connections/kafka/test", c),
  sample: (c: KafkaConnection, topic: string, count = 20) =>
    post<{ messages: SampleMessage[] }>("/api/v1/schemas/sample", { ...c, topic, count }),
  infer: (samples: unknown[]) => post<Inferred>("/api/v1/schemas/infer", { samples }),
  evaluate: (
    expression: string,
    fields: { name: string; type: string }[],
    event: Record<string, unknown>,
    type?: string,
  ) => post<ExpressionValue>("/api/v1/expressions/evaluate", { expression, fields, event, type }),
  clickhouseTest: (c: Record<string, unknown>) =>
    post<ClickHouseTest>("/api/v1/connections/clickhouse/test", c),
  clickhouseColumns: (c: Record<string, unknown>, table: string) =>
    post<Column[]>("/api/v1/connections/clickhouse/columns", { ...c, table }),
};
