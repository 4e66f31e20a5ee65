// A pipeline's dead letters: counts by stage and error class, the pending records with
// payload and error, and consume / purge / replay.
import { useState } from "preact/hooks";
import { api, type DeadLetter } from "../api";
import { Confirm, Field, Message, described, errorWords, fmt, usePoll } from "../components/ui";

export function DlqPage({ id }: { id: string }) {
  const stats = usePoll(() => api.dlqStats(id), 3000, [id]);
  const page = usePoll(() => api.dlqMessages(id, 50, 0), 3000, [id]);
  const [count, setCount] = useState("10");
  const [consumed, setConsumed] = useState<DeadLetter[] | null>(null);
  const [notice, setNotice] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [asking, setAsking] = useState<"purge" | null>(null);
  const n = Number(count);
  const countErr = Number.isInteger(n) && n >= 1 && n <= 1000 ? null : "a whole number from 1 to 1000";
  const act = async (what: string, run: () => Promise<string>) => {
    setProblem(null);
    setNotice(null);
    try {
      setNotice(await run());
    } catch (e) {
      setProblem(`${what}: ${errorWords(e)}`);
    }
    stats.refresh();
    page.refresh();
  };
  const st = stats.data;
  return (
    <section aria-labelledby="dlq-title">
      <p><a href={`#/p/${encodeURIComponent(id)}`}>← {id}</a></p>
      <h1 id="dlq-title">Dead letters of {id}</h1>
      {stats.error && <Message kind="error">{stats.error}</Message>}
      {problem && <Message kind="error">{problem}</Message>}
      {notice && <Message kind="ok">{notice}</Message>}
      {st && (
        <dl class="figures">
          <div><dt>Pending</dt><dd data-figure="pending">{fmt.int(st.pending)}</dd></div>
          <div><dt>Consumed</dt><dd data-figure="consumed">{fmt.int(st.consumed)}</dd></div>
          <div><dt>Replayed</dt><dd data-figure="replayed">{fmt.int(st.replayed)}</dd></div>
          <div><dt>In all</dt><dd data-figure="total">{fmt.int(st.total)}</dd></div>
        </dl>
      )}
      {st && st.by_class.length > 0 && (
        <div class="table-wrap">
          <table>
            <caption>By stage and error class</caption>
            <thead><tr><th scope="col">Stage</th><th scope="col">Error class</th><th scope="col" class="num">Pending</th><th scope="col" class="num">Consumed</th><th scope="col" class="num">Replayed</th></tr></thead>
            <tbody>
              {st.by_class.map((c) => (
                <tr key={c.stage + c.error_class} data-class={c.error_class}>
                  <td>{c.stage}</td><td>{c.error_class}</td><td class="num">{fmt.int(c.pending)}</td><td class="num">{fmt.int(c.consumed)}</td><td class="num">{fmt.int(c.replayed)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <div class="toolbar">
        <Field id="consume-count" label="How many to consume" error={countErr}>
          <input {...described("consume-count", countErr)} inputMode="numeric" value={count} onInput={(e) => setCount(e.currentTarget.value)} />
        </Field>
        <button type="button" disabled={!!countErr} onClick={() => act("consume", async () => {
          const r = await api.dlqConsume(id, n);
          setConsumed(r.messages);
          return `${r.consumed} dead letter(s) consumed: they are shown below and no longer pending.`;
        })}>Consume</button>
        <button type="button" onClick={() => act("replay", async () => {
          const r = await api.dlqReplay(id, false);
          return `Replayed ${r.replayed}; ${r.still_failing} still failing (they stay pending with their new error).`;
        })}>Replay with the current definition</button>
        <button type="button" class="danger-outline" onClick={() => setAsking("purge")}>Purge</button>
      </div>
      <p class="muted">Replay re-processes the pending records with the pipeline's current schema and mapping: <a href={`#/p/${encodeURIComponent(id)}/edit`}>edit the pipeline</a> (stopped) first to fix what failed.</p>
      {asking && (
        <Confirm question={`Purge every dead letter of ${id}?`} detail="Pending and handled ones are deleted for good." action="Purge"
          onCancel={() => setAsking(null)}
          onConfirm={() => { setAsking(null); act("purge", async () => `${(await api.dlqPurge(id)).purged} dead letter(s) purged.`); }} />
      )}
      {consumed && consumed.length > 0 && (
        <>
          <h2>Just consumed</h2>
          <Letters letters={consumed} label="consumed" />
        </>
      )}
      <h2>Pending{page.data ? ` (${fmt.int(page.data.pending)})` : ""}</h2>
      {page.error && <Message kind="error">{page.error}</Message>}
      {page.data && page.data.messages.length === 0 ? <p class="muted">No pending dead letters.</p> : page.data && <Letters letters={page.data.messages} label="pending" />}
    </section>
  );
}

function Letters({ letters, label }: { letters: DeadLetter[]; label: string }) {
  return (
    <ul class="letters" aria-label={`${label} dead letters`}>
      {letters.map((l) => (
        <li key={`${l.topic}/${l.partition}/${l.offset}`} class="card letter">
          <div class="meta">
            <code>{l.topic}/{l.partition}@{l.offset}</code> · {l.stage} · <strong>{l.error_class}</strong> · failed {fmt.dateTime(l.failed_at)}
            {l.replay_attempts > 0 && ` · ${l.replay_attempts} replay(s)`}
          </div>
          <div class="error-text">{l.error}</div>
          <pre class="payload">{l.payload === "" ? "(empty message)" : l.payload ?? `(not UTF-8, base64) ${l.payload_base64 ?? ""}`}</pre>
        </li>
      ))}
    </ul>
  );
}
