// Wizard step 7: what the pipeline will do in sentences, the CREATE TABLE it runs, its
// document as YAML behind a toggle (secrets masked; downloadable), the pipeline's name
// (checked as typed: free and well formed), the problems the API still finds, then Deploy
// (or, editing a stored pipeline, Save with the changes that need a fresh start named).
import { useEffect, useState } from "preact/hooks";
import YAML from "yaml";
import { api } from "../api";
import { Field, Message, described, download, errorWords } from "../components/ui";
import { toDocument, type Draft } from "./draft";
import { mergedDocument, resetReasons } from "./edit";
import { forgetDraft } from "./storage";
import { plainLine } from "./words";
import { alertSentences, alertsSection } from "./alerts";
import { joinSentences } from "./joinWords";
import { AlertsSection } from "./AlertsSection";
import type { StepProps } from "./draft";

export function masked(doc: Record<string, any>): Record<string, any> {
  const copy = structuredClone(doc);
  for (const src of [copy.source, ...(copy.sources ?? [])]) {
    if (src?.security?.password) src.security.password = "***";
  }
  if (copy.sink?.clickhouse?.password) copy.sink.clickhouse.password = "***";
  // the alert channels' secrets (config/alerts.py: a Slack webhook URL is one)
  for (const w of copy.alerts?.webhooks ?? []) if (w.secret) w.secret = "***";
  for (const s of copy.alerts?.slack ?? []) if (s.webhook_url) s.webhook_url = "***";
  for (const e of copy.alerts?.email ?? []) if (e.password) e.password = "***";
  return copy;
}

const list = (xs: string[]) => (xs.length <= 1 ? xs.join("") : `${xs.slice(0, -1).join(", ")} and ${xs.at(-1)}`);

/** What the draft's pipeline does, one sentence per stage. */
export function summarySentences(d: Draft): string[] {
  const out: string[] = [];
  const start = d.startFrom === "earliest" ? "from the oldest message still there" : "from new messages only";
  out.push(`Reads JSON events from the topic ${d.topic || "(none picked)"} on ${d.kafka.bootstrap_servers}, ${start}, with ${d.fields.length} field(s)${d.eventTime ? `; event time from ${d.eventTime}` : "; event time is the Kafka message timestamp"}.`);
  if (!d.dedup.enabled) out.push("Drops no duplicates.");
  else if (d.dedup.mode === "exact") out.push(`Drops exact repeats of a payload seen within ${d.dedup.window}.`);
  else if (d.dedup.mode === "last") out.push(`Keeps the latest version of each ${list(d.dedup.key)} within ${d.dedup.window} (the table keeps the last; read it with FINAL).`);
  else out.push(`Drops repeats of the same ${list(d.dedup.key)} within ${d.dedup.window}: the first one is written.`);
  if (d.join.enabled) out.push(...joinSentences(toDocument(d)));
  if (d.filter.trim()) out.push(`Keeps only the events for which ${d.filter.trim()} is true; the others are dropped (not dead letters).`);
  const computed = d.transforms.filter((t) => t.name.trim());
  if (computed.length) out.push(`Adds ${computed.length === 1 ? "a computed field" : "computed fields"}: ${list(computed.map((t) => `${t.name} = ${t.expression}`))}.`);
  const where = d.ch.kind === "embedded" ? `the embedded ClickHouse in ${d.ch.path}` : `ClickHouse at ${d.ch.host}${d.ch.port ? `:${d.ch.port}` : ""}`;
  const written = d.mapping.filter((m) => m.field).length;
  out.push(d.tableMode === "create"
    ? `Writes ${written} column(s) into the table ${d.table} in ${where}, creating it if it does not exist (the statement below).`
    : `Writes ${written} column(s) into the existing table ${d.table} in ${where}.`);
  out.push("Records it cannot parse or write go to the dead-letter queue, with their reason.");
  out.push(...alertSentences(alertsSection(d.alerts)));
  return out;
}

export function ReviewStep({ draft, update, err, problems, checked, editing }: StepProps & {
  problems: string[];
  checked: number;
  editing: { id: string; stored: Record<string, any> } | null;
}) {
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  const [saved, setSaved] = useState<number | null>(null);
  const [showYaml, setShowYaml] = useState(false);
  const [plan, setPlan] = useState<string | null>(null);
  const [nameProblem, setNameProblem] = useState<string | null>(null);
  const [reset, setReset] = useState(false);
  const made = toDocument(draft);
  const doc = editing ? mergedDocument(editing.stored, made) : made;
  const yaml = YAML.stringify(masked(doc));
  const reasons = editing ? resetReasons(editing.stored, doc) : [];
  const docKey = JSON.stringify(doc);

  // The CREATE TABLE the pipeline will run (the API's own statement), as the draft changes.
  useEffect(() => {
    let alive = true;
    const timer = setTimeout(() => {
      api.tablePlan(doc).then((p) => alive && setPlan(p.sql ?? null)).catch(() => alive && setPlan(null));
    }, 300);
    return () => { alive = false; clearTimeout(timer); };
  }, [docKey]);

  // The name: free and well formed, checked as it is typed.
  useEffect(() => {
    if (editing || !draft.name) { setNameProblem(null); return; }
    let alive = true;
    const timer = setTimeout(() => {
      api.nameCheck(draft.name).then((r) => alive && setNameProblem(r.taken ? r.message ?? null : null)).catch(() => alive && setNameProblem(null));
    }, 250);
    return () => { alive = false; clearTimeout(timer); };
  }, [draft.name]);

  const nameErr = nameProblem ?? err("name");
  const deploy = async () => {
    setBusy(true);
    setFailure(null);
    try {
      const created = await api.create(doc);
      forgetDraft();
      location.hash = `#/p/${encodeURIComponent(created.id)}`;
    } catch (e) {
      setFailure(`Not deployed: ${errorWords(e)}`);
    } finally {
      setBusy(false);
    }
  };
  const save = async () => {
    if (!editing) return;
    setBusy(true);
    setFailure(null);
    try {
      const p = await api.edit(editing.id, YAML.stringify(doc), reset);
      setSaved(p.version);
    } catch (e) {
      setFailure(`Not saved: ${errorWords(e)}`);
    } finally {
      setBusy(false);
    }
  };
  const blocked = busy || problems.length > 0 || checked === 0 || Boolean(nameProblem);
  return (
    <>
      <Field id="pipeline-name" label="Pipeline name" error={nameErr}
        help={editing ? "the name of a stored pipeline stays" : "letters, digits, _ and -; names its consumer group and checkpoint"}>
        <input {...described("pipeline-name", nameErr, true)} data-problem-path="name" value={draft.name} spellcheck={false}
          readOnly={Boolean(editing)} onInput={(e) => update((d) => { d.name = e.currentTarget.value; })} />
      </Field>
      <h3 id="summary-title">What it will do</h3>
      <ul class="summary" aria-labelledby="summary-title" data-testid="review-summary">
        {summarySentences(draft).map((s) => <li key={s}>{s}</li>)}
      </ul>
      {plan && (
        <>
          <h3 id="ddl-title">The table it creates</h3>
          <pre class="yaml" aria-labelledby="ddl-title" tabIndex={0} data-testid="review-ddl">{plan}</pre>
        </>
      )}
      <AlertsSection draft={draft} update={update} err={err} />
      <div class="buttons">
        <button type="button" aria-expanded={showYaml} aria-controls="review-yaml" onClick={() => setShowYaml(!showYaml)}>
          {showYaml ? "Hide the YAML" : "Show the YAML"}
        </button>
        <button type="button" onClick={() => download(`${draft.name || "pipeline"}.yaml`, YAML.stringify(doc))}>Download YAML</button>
      </div>
      <pre class="yaml" id="review-yaml" aria-label="Pipeline document (YAML)" tabIndex={0} data-testid="review-yaml" hidden={!showYaml}>{yaml}</pre>
      <p class="muted">The downloaded file holds the passwords and secrets you entered; the one shown here has them as ***.</p>
      {editing && reasons.length > 0 && (
        <div class="message info" data-testid="reset-reasons">
          <div>These changes need the pipeline to start afresh (reset_state): its offsets and dedup/join state are dropped and the topics are read again from {draft.startFrom}.</div>
          <ul>{reasons.map((r) => <li key={r}>{r}</li>)}</ul>
          <div class="check">
            <input id="wizard-reset" type="checkbox" checked={reset} onChange={(e) => setReset(e.currentTarget.checked)} />
            <label for="wizard-reset">Start afresh (reset_state)</label>
          </div>
        </div>
      )}
      <div class="buttons">
        {editing ? (
          <button type="button" class="primary" disabled={blocked || (reasons.length > 0 && !reset)} onClick={save}>
            {busy ? "Saving…" : "Save"}
          </button>
        ) : (
          <button type="button" class="primary" disabled={blocked} onClick={deploy}>
            {busy ? "Deploying…" : "Deploy"}
          </button>
        )}
      </div>
      {problems.length > 0 && (
        <Message kind="error">
          <div>Fix these before {editing ? "saving" : "deploying"}:</div>
          <ul>{problems.map((p) => <li key={p}>{plainLine(p)}</li>)}</ul>
        </Message>
      )}
      {failure && <Message kind="error">{failure}</Message>}
      {editing && saved !== null && (
        <Message kind="ok">
          Saved as version {saved}. <a href={`#/p/${encodeURIComponent(editing.id)}`}>Resume it on its page</a>.
        </Message>
      )}
    </>
  );
}
