// Every pipeline with its state and figures, polled every 2 s; rows/s from the change of
// `written` between polls.
import { useRef, useState } from "preact/hooks";
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
  const last = useRef(new Map<string, { written: number; at: number }>());
  const [notice, setNotice] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const { data, error, refresh } = usePoll<Row[]>(async () => {
    const pipelines = await api.pipelines();
    const now = performance.now();
    return Promise.all(
      pipelines.map(async (pipeline) => {
        const status = await api.status(pipeline.id).catch(() => null);
        let rate: number | null = null;
        const before = last.current.get(pipeline.id);
        if (status && before && now > before.at) {
          rate = Math.max(0, ((status.written - before.written) * 1000) / (now - before.at));
        }
        if (status) last.current.set(pipeline.id, { written: status.written, at: now });
        return { pipeline, status, rate };
      }),
    );
  }, POLL_MS);

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
                <th scope="col" class="num">DLQ</th>
                <th scope="col">Last error</th>
                <th scope="col">Actions</th>
              </tr>
            </thead>
            <tbody>
              {data.map(({ pipeline: p, status: s, rate }) => (
                <tr key={p.id} data-pipeline={p.id}>
                  <td data-label="Name"><a href={`#/p/${encodeURIComponent(p.id)}`}>{p.name}</a></td>
                  <td data-label="Status"><span class={`state ${p.state.toLowerCase()}`}>{p.state}</span></td>
                  <td data-label="Rows/s" class="num">{fmt.rate(rate)}</td>
                  <td data-label="Rows written" class="num" data-col="written">{fmt.int(s?.written)}</td>
                  <td data-label="Lag" class="num">{fmt.int(s?.lag)}</td>
                  <td data-label="Duplicates" class="num" data-col="duplicates">{fmt.int(s?.duplicates)}</td>
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
