// Wizard steps 3-4: deduplication (key, window, mode), then the filter and computed fields,
// each expression evaluated by the API against the sample event as you type.
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { Field, described, errorWords } from "../components/ui";
import { FIELD_TYPES, sampleEvent, type DedupMode, type Draft } from "./draft";
import type { StepProps } from "./draft";
import { plainOnce } from "./words";

const MODES: [DedupMode, string][] = [
  ["first", "First wins: the first event with a key is written; later ones within the window are dropped."],
  ["last", "Last wins: every new version of a key is written and the table keeps the latest (read it with FINAL)."],
  ["exact", "Exact copies: only repeats of an identical payload are dropped; no key needed."],
];

export function DedupStep({ draft, update, err }: StepProps) {
  const dd = draft.dedup;
  return (
    <>
      <div class="check">
        <input id="dedup-on" type="checkbox" checked={dd.enabled}
          onChange={(e) => update((d) => { d.dedup.enabled = e.currentTarget.checked; })} />
        <label for="dedup-on">Drop duplicate events</label>
      </div>
      {dd.enabled && (
        <>
          <fieldset>
            <legend>Mode</legend>
            {MODES.map(([mode, line]) => (
              <div class="radio" key={mode}>
                <input type="radio" name="dedup-mode" id={`dedup-mode-${mode}`} value={mode} checked={dd.mode === mode}
                  aria-describedby={`dedup-mode-${mode}-line`}
                  onChange={() => update((d) => { d.dedup.mode = mode; })} />
                <label for={`dedup-mode-${mode}`}>{mode}</label>
                <span class="help" id={`dedup-mode-${mode}-line`}>{line}</span>
              </div>
            ))}
            {err("dedup.mode") && <div class="error" role="alert">{err("dedup.mode")}</div>}
          </fieldset>
          {dd.mode !== "exact" && (
            <fieldset aria-describedby={err("dedup.key") ? "dedup-key-error" : undefined} data-problem-path="dedup.key">
              <legend>Key field(s): what identifies an event</legend>
              {draft.fields.map((f) => (
                <div class="check" key={f.name}>
                  <input type="checkbox" id={`dedup-key-${f.name}`} checked={dd.key.includes(f.name)}
                    onChange={(e) => update((d) => {
                      const on = e.currentTarget.checked;
                      d.dedup.key = on ? [...d.dedup.key.filter((k) => k !== f.name), f.name] : d.dedup.key.filter((k) => k !== f.name);
                    })} />
                  <label for={`dedup-key-${f.name}`}>{f.name} <span class="muted">({f.type})</span></label>
                </div>
              ))}
              {err("dedup.key") && <div class="error" id="dedup-key-error" role="alert">{err("dedup.key")}</div>}
            </fieldset>
          )}
          <p class="muted" id="dedup-partition-note">
            Duplicates are found per Kafka partition: a re-send must carry the dedup key as its Kafka
            message key, so that every copy of an event lands in the same partition. Copies produced
            with other message keys may reach another partition and are then not recognised.
          </p>
          <Field id="dedup-window" label="Time window" error={err("dedup.time_window")}
            help="How long a key is remembered, e.g. 30s, 10m, 1h, 7d (at most 7 days).">
            <input {...described("dedup-window", err("dedup.time_window"), true)} data-problem-path="dedup.time_window"
              value={dd.window} spellcheck={false}
              onInput={(e) => update((d) => { d.dedup.window = e.currentTarget.value; })} />
          </Field>
        </>
      )}
    </>
  );
}

type Preview = { text: string; ok: boolean } | null;

/** The API's evaluation of `expression` on the sample event, as you type (debounced). */
function useEvaluation(draft: Draft, expression: string, type: string | undefined, extra: { fields: { name: string; type: string }[]; event: Record<string, unknown> }) {
  const [preview, setPreview] = useState<Preview>(null);
  const sample = sampleEvent(draft);
  const key = JSON.stringify([expression, type, extra.fields, sample]);
  useEffect(() => {
    if (!expression.trim()) { setPreview(null); return; }
    if (!sample) { setPreview({ ok: true, text: "no sample event to try it on" }); return; }
    let alive = true;
    const timer = setTimeout(async () => {
      try {
        const r = await api.evaluate(expression, [...sample.fields, ...extra.fields], { ...sample.event, ...extra.event }, type);
        if (!alive) return;
        const value = JSON.stringify(r.value);
        const text = type === undefined
          ? (r.passes === true ? "keeps the sample event" : r.passes === false ? "drops the sample event" : "gives null: the event would go to the DLQ")
          : `on the sample event: ${value}`;
        setPreview({ ok: true, text: r.note ? `${text} (${r.note})` : text });
      } catch (e) {
        if (alive) setPreview({ ok: false, text: plainOnce(errorWords(e).split("\n")) ?? "the expression cannot be used" });
      }
    }, 300);
    return () => { alive = false; clearTimeout(timer); };
  }, [key]);
  return preview;
}

function PreviewLine({ id, preview }: { id: string; preview: Preview }) {
  if (!preview) return null;
  return <div id={id} class={preview.ok ? "preview" : "error"} role="status" data-testid={id}>{preview.text}</div>;
}

function TransformRow({ draft, update, err, index, earlier }: StepProps & { index: number; earlier: { fields: { name: string; type: string }[]; event: Record<string, unknown> } }) {
  const t = draft.transforms[index];
  const preview = useEvaluation(draft, t.expression, t.type, earlier);
  const base = `transform[${index}]`;
  const exprErr = err(`${base}.expression`) ?? (preview && !preview.ok && t.expression.trim() ? preview.text : null);
  return (
    <div class="row transform">
      <Field id={`transform-${index}-name`} label={`Computed field ${index + 1} name`} error={err(`${base}.name`)}>
        <input {...described(`transform-${index}-name`, err(`${base}.name`))} data-problem-path={`${base}.name`} value={t.name} spellcheck={false}
          onInput={(e) => update((d) => { d.transforms[index].name = e.currentTarget.value; })} />
      </Field>
      <Field id={`transform-${index}-type`} label={`Computed field ${index + 1} type`} error={err(`${base}.type`)}>
        <select {...described(`transform-${index}-type`)} value={t.type}
          onChange={(e) => update((d) => { d.transforms[index].type = e.currentTarget.value; })}>
          {FIELD_TYPES.slice(0, 5).map((x) => <option key={x} value={x}>{x}</option>)}
        </select>
      </Field>
      <Field id={`transform-${index}-expression`} label={`Computed field ${index + 1} expression (Spark SQL)`} error={exprErr}>
        <input {...described(`transform-${index}-expression`, exprErr)} data-problem-path={`${base}.expression`}
          aria-describedby={exprErr ? `transform-${index}-expression-error` : `transform-${index}-preview`} value={t.expression} spellcheck={false}
          onInput={(e) => update((d) => { d.transforms[index].expression = e.currentTarget.value; })} />
      </Field>
      <PreviewLine id={`transform-${index}-preview`} preview={preview?.ok ? preview : null} />
      <button type="button" class="remove" aria-label={`remove computed field ${t.name || index + 1}`}
        onClick={() => update((d) => { d.transforms.splice(index, 1); })}>Remove</button>
    </div>
  );
}

export function TransformStep(props: StepProps) {
  const { draft, update, err } = props;
  // Each computed field sees the earlier ones: their values on the sample are not known
  // here, so they are offered by name and type (the API evaluates them as null).
  const computed = draft.transforms.filter((t) => t.name.trim()).map((t) => ({ name: t.name, type: t.type }));
  const filterPreview = useEvaluation(draft, draft.filter, undefined, { fields: computed, event: {} });
  // one message for the filter: the document's problem, else the evaluation's
  const filterErr = err("filter") ?? (filterPreview && !filterPreview.ok && draft.filter.trim() ? filterPreview.text : null);
  return (
    <>
      <p class="muted">Both are optional. Expressions are Spark SQL over the fields (dot paths as written), e.g. <code>amount * qty</code>, <code>upper(user.name)</code>.</p>
      <fieldset>
        <legend>Computed fields</legend>
        {draft.transforms.map((_, i) => (
          <TransformRow key={i} {...props} index={i} earlier={{ fields: computed.slice(0, i), event: {} }} />
        ))}
        <button type="button" onClick={() => update((d) => { d.transforms.push({ name: "", expression: "", type: "string" }); })}>Add a computed field</button>
      </fieldset>
      <Field id="filter" label="Filter: keep events for which this is true" error={filterErr}>
        <input {...described("filter", filterErr)} data-problem-path="filter" aria-describedby={filterErr ? "filter-error" : "filter-preview"}
          value={draft.filter} spellcheck={false} placeholder="e.g. amount > 0"
          onInput={(e) => update((d) => { d.filter = e.currentTarget.value; })} />
      </Field>
      <PreviewLine id="filter-preview" preview={filterPreview?.ok ? filterPreview : null} />
    </>
  );
}
