// Every pipeline with its state and figures, polled every 2 s; rows/s as the server measured
// them (its history of each pipeline, service/history.py); search by name and filter by state.
import { useState } from "preact/hooks";
import { api, type Pipeline, type Status } from "../api";
import { Message, fmt, usePoll } from "../components/ui";
import { PipelineActions } from "./actions";

export const POLL_MS = 2000;

interface Row {
  pipeline: Pipeline;
  status: Status | null;
  rate: number | null;
}

export function PipelinesPage() {
  const [notice, setNotice] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [search, setSearch] = useState("");
  const [stateFilter, setStateFilter] = useState("all");
  const { data, error, refresh } = usePoll<Row[]>(async () => {
    // rows/s as the server measured them over its last interval (GET /api/v1/ui/rates)
    const [pipelines, rates] = await Promise.all([api.pipelines(), api.rates().catch(() => [])]);
    const rateOf = new Map(rates.map((r) => [r.id, r.written_per_s]));
    return Promise.all(
      pipelines.map(async (pipeline) => {
        const status = await api.status(pipeline.id).catch(() => null);
        return { pipeline, status, rate: rateOf.get(pipeline.id) ?? null };
      }),
    );
  }, POLL_MS);
  const words = search.trim().toLowerCase();
  const shown = (data ?? []).filter(({ pipeline: p }) =>
    (stateFilter === "all" || (stateFilter === "active" ? !["Stopped", "Failed"].includes(p.state) : p.state === stateFilter))
    && (!words || p.name.toLowerCase().includes(words) || (p.error ?? "").toLowerCase().includes(words)));
  return (
    <section aria-labelledby="pipelines-title">
      <div class="title-row">
        <h1 id="pipelines-title">Pipelines</h1>
        <div class="buttons">
          <a class="button primary" href="#/new">New pipeline</a>
          <a class="button" href="#/upload">Upload a file</a>
        </div>
      </div>
      {error && <Message kind="error">{error}</Message>}
      {problem && <Message kind="error">{problem}</Message>}
      {notice && <Message kind="ok">{notice}</Message>}
      {data && data.length === 0 && (
        <p class="empty">
          No pipelines yet. <a href="#/new">Create one with the wizard</a> or{" "}
          <a href="#/upload">upload a pipeline file</a>.
        </p>
      )}
      {data && data.length > 0 && (
        <div class="toolbar" role="search">
          <div class="field">
            <label for="pipeline-search">Search pipelines</label>
            <input id="pipeline-search" type="search" value={search} placeholder="name or error"
              onInput={(e) => setSearch(e.currentTarget.value)} />
          </div>
          <div class="field">
            <label for="pipeline-state">Show</label>
            <select id="pipeline-state" value={stateFilter} onChange={(e) => setStateFilter(e.currentTarget.value)}>
              <option value="all">all pipelines</option>
              <option value="active">running or starting</option>
              <option value="Running">Running</option>
              <option value="Stopped">Stopped</option>
              <option value="Failed">Failed</option>
            </select>
          </div>
          <p class="muted" role="status">{shown.length} of {data.length} shown</p>
        </div>
      )}
      {data && data.length > 0 && (
        <div class="table-wrap">
          <table class="pipelines">
            <caption class="sr-only">Pipelines, updated every 2 seconds</caption>
            <thead>
              <tr>
                <th scope="col">Name</th>
                <th scope="col">Status</th>
                <th scope="col" class="num">Rows/s</th>
                <th scope="col" class="num">Rows written</th>
                <th scope="col" class="num">Lag</th>
                <th scope="col" class="num">Duplicates</th>
                <th scope="col" class="num">Filtered</th>
                <th scope="col" class="num">DLQ</th>
                <th scope="col">Last error</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {shown.map(({ pipeline: p, status: s, rate }) => (
                <tr key={p.id} data-pipeline={p.id}>
                  <td data-label="Name"><a href={`#/p/${encodeURIComponent(p.id)}`}>{p.name}</a></td>
                  <td data-label="Status"><span class={`state ${p.state.toLowerCase()}`}>{p.state}</span></td>
                  <td data-label="Rows/s" class="num">{fmt.rate(rate)}</td>
                  <td data-label="Rows written" class="num" data-col="written">{fmt.int(s?.written)}</td>
                  <td data-label="Lag" class="num">{fmt.int(s?.lag)}</td>
                  <td data-label="Duplicates" class="num" data-col="duplicates">{fmt.int(s?.duplicates)}</td>
                  <td data-label="Filtered out" class="num" data-col="filtered">{fmt.int(s?.filtered)}</td>
                  <td data-label="DLQ" class="num">
                    <a href={`#/p/${encodeURIComponent(p.id)}/dlq`} data-col="dlq"
                      aria-label={`dead letters of ${p.id}: ${s?.dlq ?? 0}`}>{fmt.int(s?.dlq)}</a>
                  </td>
                  <td data-label="Last error" class="error-text">{p.error ?? s?.error ?? ""}</td>
                  <td data-label="Actions">
                    <PipelineActions
                      id={p.id}
                      state={p.state}
                      onDone={(a) => { setProblem(null); setNotice(`${p.id}: ${a} requested`); refresh(); }}
                      onError={(w) => { setNotice(null); setProblem(w); }}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
