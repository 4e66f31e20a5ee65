// One pipeline: its figures, throughput and lag over the last hour (as the server recorded
// them: service/history.py, so the charts are full on a fresh visit), recent micro-batches, its definition (its
// join in words, secrets as ***, downloadable as YAML), its alerts (docs/operations.md, "Alerts") and its history.
import { useRef, useState } from "preact/hooks";
import YAML from "yaml";
import { api, type AlertEpisode, type Series, type Status, type StatusChange } from "../api";
import { Chart } from "../components/Chart";
import { Message, download, fmt, usePoll } from "../components/ui";
import { PipelineActions } from "./actions";
import { POLL_MS } from "./PipelinesPage";
import { alertSentences } from "../wizard/alerts";
import { joinSentences } from "../wizard/joinWords";

const CHART_MINUTES = 60;

interface Batch { at: string; duration: number | null; written: number; read: number }

export function PipelinePage({ id }: { id: string }) {
  const batches = useRef<Batch[]>([]);
  const [problem, setProblem] = useState<string | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const { data, error, refresh } = usePoll(async () => {
    const [pipeline, status] = await Promise.all([api.pipeline(id), api.status(id)]);
    record(status);
    return { pipeline, status };
  }, POLL_MS, [id]);
  const doc = usePoll(() => api.document(id), 30_000, [id]);
  const table = usePoll(() => api.rows(id, 10), 5_000, [id]);
  const history = usePoll<StatusChange[]>(() => api.history(id), 5_000, [id]);
  const alerts = usePoll<AlertEpisode[]>(() => api.alerts(id), 10_000, [id]);
  // the charts: the figures the server recorded (GET /api/v1/ui/series), there on every visit
  const series = usePoll<Series>(() => api.series(id, CHART_MINUTES), 5_000, [id]);

  function record(s: Status) {
    const last = batches.current[0];
    if (s.last_batch_at && (!last || last.at !== s.last_batch_at)) {
      batches.current = [{ at: s.last_batch_at, duration: s.last_batch_duration_ms, written: s.written, read: s.read }, ...batches.current].slice(0, 10);
    }
  }
  const pts = series.data?.points ?? [];
  const times = pts.map((p) => Date.parse(p.at) / 1000);
  const rates = pts.map((p) => p.written_per_s ?? null);
  const lags = pts.map((p) => p.lag ?? null);
  const interval = series.data?.interval_s ?? 10;
  const s = data?.status;
  const p = data?.pipeline;
  const yaml = doc.data ? YAML.stringify(doc.data) : "";
  const rules = alertSentences((doc.data as Record<string, any> | null)?.alerts);
  const joins = joinSentences(doc.data as Record<string, any> | null);
  return (
    <section aria-labelledby="pipeline-title">
      <p><a href="#/">← All pipelines</a></p>
      <div class="title-row">
        <h1 id="pipeline-title">{id}</h1>
        {p && <span class={`state ${p.state.toLowerCase()}`}>{p.state}</span>}
        {p && (
          <PipelineActions id={id} state={p.state}
            onDone={(a) => { if (a === "delete") location.hash = "#/"; else { setNotice(`${a} requested`); refresh(); } }}
            onError={setProblem} />
        )}
      </div>
      {error && <Message kind="error">{error}</Message>}
      {problem && <Message kind="error">{problem}</Message>}
      {notice && <Message kind="ok">{notice}</Message>}
      {s?.retry ? (
        <Message kind="info">
          Retrying by itself after a fault that may pass (attempt {s.retry.attempt}
          {s.retry.limit == null ? "" : ` of ${s.retry.limit}`}, next try {fmt.dateTime(s.retry.next_try_at)}):
          {" "}{s.retry.reason}. Nothing is lost: it goes on from its checkpoint.
        </Message>
      ) : (p?.error || s?.error) && <Message kind="error">Last error: {p?.error ?? s?.error}{s?.hint ? ` (hint: ${s.hint})` : ""}</Message>}
      {s && (
        <dl class="figures">
          <div><dt>Rows read</dt><dd data-figure="read">{fmt.int(s.read)}</dd></div>
          <div><dt>Rows written</dt><dd data-figure="written">{fmt.int(s.written)}</dd></div>
          <div><dt>Duplicates dropped</dt><dd data-figure="duplicates">{fmt.int(s.duplicates)}</dd></div>
          <div><dt>Filtered out</dt><dd data-figure="filtered" title="records the filter dropped">{fmt.int(s.filtered)}</dd></div>
          <div><dt>Dead letters</dt><dd data-figure="dlq"><a href={`#/p/${encodeURIComponent(id)}/dlq`}>{fmt.int(s.dlq)}</a></dd></div>
          <div><dt>Lag (messages)</dt><dd>{fmt.int(s.lag)}</dd></div>
          <div><dt>Late events</dt><dd>{fmt.int(s.late)}</dd></div>
          <div><dt>Micro-batches</dt><dd>{fmt.int(s.batches)}</dd></div>
          <div><dt>Last micro-batch</dt><dd>{fmt.time(s.last_batch_at)}{s.last_batch_duration_ms != null ? `, ${s.last_batch_duration_ms} ms` : ""}</dd></div>
          {s.isolation && (
            <div><dt>Runs in</dt><dd data-figure="isolation" title="runtime.isolation">{s.isolation === "host" ? "the pipeline host (shared)" : "a process of its own"}</dd></div>
          )}
          {s.state_size && (
            <div><dt>State</dt><dd data-figure="state" title="dedup state on disk; a join's state rows in Spark">
              {s.state_size.dedup_disk_bytes != null ? `dedup ${fmt.bytes(s.state_size.dedup_disk_bytes)}` : ""}
              {s.state_size.dedup_disk_bytes != null && s.state_size.spark_state_rows ? ", " : ""}
              {s.state_size.spark_state_rows ? `join ${fmt.int(s.state_size.spark_state_rows)} rows` : ""}
              {s.state_size.dedup_disk_bytes == null && !s.state_size.spark_state_rows ? "none" : ""}
            </dd></div>
          )}
        </dl>
      )}
      <div class="charts">
        <Chart title="Rows written per second" unit="rows/s" times={times} values={rates} />
        <Chart title="Lag" unit="messages" times={times} values={lags} />
      </div>
      {series.data && <p class="muted" data-testid="chart-note">
        {pts.length
          ? `Charts show the last ${CHART_MINUTES} minutes as the server recorded them (a point every ${interval} s; the server keeps 24 hours).`
          : `No figures recorded yet: the server takes a point every ${interval} s.`}
      </p>}
      <h2 id="rows-title">Rows in ClickHouse{table.data ? `: ${table.data.table}` : ""}</h2>
      {table.error && <Message kind="error">{table.error}</Message>}
      {table.data && !table.data.exists && <p class="muted">The table does not exist yet: the pipeline creates it when it starts.</p>}
      {table.data?.exists && (
        <>
          <p><span data-figure="table-rows">{fmt.int(table.data.count)}</span> rows in the table{table.data.rows.length ? `; the newest ${table.data.rows.length}${table.data.order ? ` by ${table.data.order}` : ""}:` : "."}</p>
          {s && apart(table.data.count, s.written, p?.state, pts.at(-1)?.written_per_s) && (
            <p class="muted" data-testid="count-note">
              The table holds {fmt.int(table.data.count)} rows and the pipeline wrote {fmt.int(s.written)}: "Rows written"
              counts what this pipeline wrote since it was created or last started afresh (reset_state), while the table
              also keeps rows from before that and from anything else that writes to it{doc.data && (doc.data as any).dedup?.mode === "last"
                ? "; with dedup mode last, ClickHouse also merges a key's versions in the background (read it with FINAL)" : ""}.
              Filtered-out records and dead letters are in neither.
            </p>
          )}
          {table.data.rows.length > 0 && (
            <div class="table-wrap">
              <table aria-labelledby="rows-title" data-testid="newest-rows">
                <thead><tr>{table.data.columns.map((c) => <th scope="col" key={c}>{c}</th>)}</tr></thead>
                <tbody>
                  {table.data.rows.map((r, i) => (
                    <tr key={i}>{r.map((v, j) => <td key={j}>{v === null ? <span class="muted">NULL</span> : typeof v === "object" ? JSON.stringify(v) : String(v)}</td>)}</tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
        </>
      )}
      <h2>Recent micro-batches</h2>
      {batches.current.length === 0 ? <p class="muted">None seen yet.</p> : (
        <div class="table-wrap">
          <table>
            <thead><tr><th scope="col">Finished</th><th scope="col" class="num">Duration</th><th scope="col" class="num">Rows read (total)</th><th scope="col" class="num">Rows written (total)</th></tr></thead>
            <tbody>
              {batches.current.map((b) => (
                <tr key={b.at}><td>{fmt.time(b.at)}</td><td class="num">{b.duration != null ? `${b.duration} ms` : "–"}</td><td class="num">{fmt.int(b.read)}</td><td class="num">{fmt.int(b.written)}</td></tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      {s && Object.keys(s.lag_by_partition).length > 0 && (
        <>
          <h2>Lag by partition</h2>
          <ul class="plain">{Object.entries(s.lag_by_partition).map(([k, v]) => <li key={k}><code>{k}</code>: {fmt.int(v)}</li>)}</ul>
        </>
      )}
      <div class="title-row">
        <h2 id="definition-title">Definition</h2>
        <button type="button" disabled={!yaml} onClick={() => download(`${id}.yaml`, yaml)}>Download YAML</button>
      </div>
      {doc.error && <Message kind="error">{doc.error}</Message>}
      {joins.length > 0 && (
        <ul class="plain" aria-label="its join" data-testid="join-words">
          {joins.map((j) => <li key={j}>{j}</li>)}
        </ul>
      )}
      <pre class="yaml" aria-labelledby="definition-title" tabIndex={0} data-testid="definition">{yaml}</pre>
      <h2 id="alerts-title">Alerts</h2>
      {doc.data && (
        rules.length > 0 ? (
          <>
            <h3 id="alert-rules-title">Its rules</h3>
            <ul class="plain" aria-labelledby="alert-rules-title" data-testid="alert-rules">
              {rules.map((r) => <li key={r}>{r}</li>)}
            </ul>
            <p class="muted">From its definition's <code>alerts:</code> section (change them in the wizard: edit the pipeline); the server's <code>--alerts</code> file may add rules and channels.</p>
          </>
        ) : (
          <p class="muted" data-testid="alert-rules">No alert rules of its own: set them in the wizard (edit the pipeline) or the definition's <code>alerts:</code> section; the server's <code>--alerts</code> file, if any, still applies.</p>
        )
      )}
      <h3 id="alert-episodes-title">What alerted</h3>
      {alerts.error && <Message kind="error">{alerts.error}</Message>}
      {alerts.data && alerts.data.length === 0 && <p class="muted">Nothing so far.</p>}
      {alerts.data && alerts.data.length > 0 && (
        <ul class="plain history" aria-labelledby="alert-episodes-title" data-testid="alerts">
          {openFirst(alerts.data).map((a) => (
            <li key={a.id} class={a.resolved_at ? "" : "alert-open"}>
              {a.resolved_at ? "Resolved" : <strong>Open</strong>}: {a.condition} since {fmt.dateTime(a.since)}
              {a.figure ? `: ${a.figure}` : ""}{a.reason ? ` (${a.reason})` : ""}
              {a.resolved_at ? `; resolved ${fmt.dateTime(a.resolved_at)}${a.resolved_figure ? `, ${a.resolved_figure}` : ""}` : ""}
            </li>
          ))}
        </ul>
      )}
      <h2>History</h2>
      <ul class="plain history">
        {(history.data ?? []).slice().reverse().map((h) => (
          <li key={h.at + h.to_state}>{fmt.dateTime(h.at)}: {h.from_state ?? "–"} → {h.to_state}{h.error ? `: ${h.error}` : ""}{h.note ? ` (${h.note})` : ""}</li>
        ))}
      </ul>
    </section>
  );
}

/** Alert episodes with the open ones first, each part newest first (as the API lists them). */
function openFirst(episodes: AlertEpisode[]): AlertEpisode[] {
  return [...episodes.filter((a) => !a.resolved_at), ...episodes.filter((a) => a.resolved_at)];
}

/** Whether the table's count and the run's rows written differ by more than the few seconds
 * between their polls can explain (a running pipeline's figures move while they are read). */
function apart(count: number, written: number, state: string | undefined, rate: number | null | undefined): boolean {
  if (count === written) return false;
  const running = state !== undefined && !["Stopped", "Failed"].includes(state);
  return !running || Math.abs(count - written) > (rate ?? 0) * 15 + 1;
}
