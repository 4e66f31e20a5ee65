// The native API over HTTP (same origin): the only way the UI reaches the service.
// Errors become ApiError with the server's words: `message`, and `problems` (one
// "field.path: message" line each) for a document or request with problems.

import type { components } from "./api-schema";

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

// ---------------------------------------------------------------- shapes: the API's own
// Generated from the server's OpenAPI document (ui/openapi.json -> api-schema.ts, by
// scripts/build-ui.sh); tests/unit/test_wire_types.py fails when either is stale. The
// server's pydantic models (streamsift.wire) are the contract: no shape is written here.

type Schemas = components["schemas"];

export type State = Schemas["State"];
export type DesiredState = Schemas["DesiredState"];
export type Pipeline = Schemas["PipelineModel"];
export type Status = Schemas["PipelineStatusModel"];
export type StatusChange = Schemas["StatusChangeModel"];
export type AlertEpisode = Schemas["AlertEpisodeModel"];
export type TableRows = Schemas["TableRowsModel"];
export type KafkaSecurity = Schemas["KafkaSecurity"];
export type KafkaConnection = Schemas["KafkaConnection"];
export type KafkaTest = Schemas["KafkaTestResult"];
export type Topic = Schemas["TopicModel"];
export type SampleMessage = Schemas["SampleMessageModel"];
export type Sample = Schemas["SampleResult"];
export type InferredField = Schemas["InferredFieldModel"];
export type Inferred = Schemas["InferResult"];
export type ExpressionValue = Schemas["ExpressionValueResult"];
export type ClickHouseTest = Schemas["ClickHouseTestResult"];
export type Column = Schemas["ColumnModel"];
export type DlqStats = Schemas["DlqStats"];
export type DlqClassCount = Schemas["DlqClassCount"];
export type DeadLetter = Schemas["DeadLetterModel"];
export type DeadLetterPage = Schemas["DeadLetterPage"];
export type ConsumedLetters = Schemas["ConsumedLetters"];
export type PurgeResult = Schemas["PurgeResult"];
export type ReplayRequest = Schemas["ReplayRequest"];
export type ReplayResult = Schemas["ReplayResult"];
export type Validated = Schemas["ValidateResult"];
export type UiDefaults = Schemas["UiDefaults"];
export type NameCheck = Schemas["NameCheck"];
export type ClickHouseCheck = Schemas["ClickHouseCheck"];
export type UploadCheck = Schemas["UploadCheck"];
export type TablePlan = Schemas["TablePlan"];
export type Series = Schemas["Series"];
export type SeriesPoint = Schemas["SeriesPoint"];
export type Rate = Schemas["Rate"];

// ---------------------------------------------------------------- routes

const P = "/api/v1/pipelines";
const id = (pipelineId: string) => `${P}/${encodeURIComponent(pipelineId)}`;

export const api = {
  pipelines: () => get<Pipeline[]>(P),
  pipeline: (pid: string) => get<Pipeline>(id(pid)),
  status: (pid: string) => get<Status>(`${id(pid)}/status`),
  history: (pid: string) => get<StatusChange[]>(`${id(pid)}/history`),
  alerts: (pid: string, limit = 20) => get<AlertEpisode[]>(`${id(pid)}/alerts?limit=${limit}`),
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
    request<Validated>("POST", `${P}/validate`, { yaml }),
  validate: (doc: unknown) => post<Validated>(`${P}/validate`, doc),
  dlqStats: (pid: string) => get<DlqStats>(`${id(pid)}/dlq/stats`),
  dlqMessages: (pid: string, limit = 50, offset = 0) =>
    get<DeadLetterPage>(`${id(pid)}/dlq/messages?limit=${limit}&offset=${offset}`),
  dlqConsume: (pid: string, limit: number) =>
    post<ConsumedLetters>(`${id(pid)}/dlq/consume?limit=${limit}`),
  dlqPurge: (pid: string) => post<PurgeResult>(`${id(pid)}/dlq/purge`),
  dlqReplay: (pid: string, dryRun: boolean) =>
    post<ReplayResult>(`${id(pid)}/dlq/replay`, { dry_run: dryRun } satisfies ReplayRequest),
  kafkaTest: (c: KafkaConnection) =>
    post<KafkaTest>("/api/v1/connections/kafka/test", c),
  sample: (c: KafkaConnection, topic: string, count = 20) =>
    post<Sample>("/api/v1/schemas/sample", { ...c, topic, count }),
  infer: (samples: unknown[]) => post<Inferred>("/api/v1/schemas/infer", { samples }),
  evaluate: (
    expression: string,
    fields: { name: string; type: string }[],
    event: Record<string, unknown>,
    type?: string,
  ) => post<ExpressionValue>("/api/v1/expressions/evaluate", { expression, fields, event, type }),
  clickhouseTest: (c: Record<string, unknown>) =>
    post<ClickHouseTest>("/api/v1/connections/clickhouse/test", c),
  // the UI's helpers (api/routers/ui_support.py)
  defaults: () => get<UiDefaults>("/api/v1/ui/defaults"),
  nameCheck: (name: string) => get<NameCheck>(`/api/v1/ui/names/${encodeURIComponent(name)}`),
  clickhouseCheck: (c: Record<string, unknown>) => post<ClickHouseCheck>("/api/v1/ui/clickhouse/check", c),
  uploadCheck: (body: { json: unknown } | { yaml: string }) =>
    request<UploadCheck>("POST", "/api/v1/ui/upload/check", body),
  tablePlan: (doc: unknown) => post<TablePlan>("/api/v1/ui/table-plan", doc),
  series: (pid: string, minutes = 60) =>
    get<Series>(`/api/v1/ui/series/${encodeURIComponent(pid)}?minutes=${minutes}`),
  rates: () => get<Rate[]>("/api/v1/ui/rates"),
  clickhouseColumns: (c: Record<string, unknown>, table: string) =>
    post<Column[]>("/api/v1/connections/clickhouse/columns", { ...c, table }),
};
