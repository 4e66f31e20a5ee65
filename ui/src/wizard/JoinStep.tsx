// Wizard step 4 (optional): join a second topic, and a third and more. Each join step adds a
// topic (its sample and fields as in step 2, its own dedup) and says how it meets the left
// side: the first topic for step 1, the previous step's record after it. Per step: the mode
// (interval, latest or table), the keys and windows (a table: no window on its side, an
// optional ttl), inner or left, and the fields of the record it makes.
import { useEffect } from "preact/hooks";
import { Field, described } from "../components/ui";
import { type Draft } from "./draft";
import { defaultOutput, emptyStep, joinStepsOf, leftFields, likelyPair, type JoinStepDraft } from "./chain";
import { likelyKey, SourcePicker } from "./sourceSteps";
import { MODES } from "./joinWords";
import type { StepProps } from "./draft";

const TYPES: ["inner" | "left", string][] = [
  ["inner", "Inner: events without a match are not written (the mode above says how many rows a match makes)."],
  ["left", "Left: also one row for each left event that matched nothing (the joined topic's fields empty), once its window has passed."],
];

/** Step k of the draft (0: the join itself, then its `more`). */
const stepOf = (d: Draft, k: number): JoinStepDraft => (k === 0 ? d.join : d.join.more[k - 1]);

export function JoinStep(props: StepProps) {
  const { draft, update } = props;
  const j = draft.join;
  const steps = joinStepsOf(draft);
  // Each step's output follows its two sides until the user edits it.
  useEffect(() => {
    const empty = steps.map((s, k) => (s.right.fields.length && !s.output.length ? k : -1)).filter((k) => k >= 0);
    if (empty.length) update((d) => { for (const k of empty) stepOf(d, k).output = defaultOutput(d, k); });
  }, [j.enabled, steps.map((s) => `${s.right.fields.length}:${s.output.length}`).join()]);
  const last = steps.at(-1);
  return (
    <>
      <div class="check">
        <input id="join-on" type="checkbox" checked={j.enabled}
          onChange={(e) => update((d) => { d.join.enabled = e.currentTarget.checked; d.mapping = []; })} />
        <label for="join-on">Join with a second topic</label>
      </div>
      {steps.map((_, k) => <JoinStepSection key={k} {...props} k={k} />)}
      {last && last.right.fields.length > 0 && (
        <div class="buttons">
          <button type="button" onClick={() => update((d) => {
            // a new step starts as latest: a later topic is most often looked up (enrichment)
            d.join.more = [...(d.join.more ?? []), emptyStep("latest")];
            d.mapping = [];
          })}>Join with another topic</button>
        </div>
      )}
    </>
  );
}

/** The controls of join step `k`: its topic, dedup, mode, type, keys, windows and output. */
function JoinStepSection(props: StepProps & { k: number }) {
  const { draft, update, err, k } = props;
  const s = stepOf(draft, k);
  // step 1 keeps the names it always had; a later step's are its own
  const first = k === 0;
  const id = (name: string) => (first ? `join-${name}` : `s${k + 1}-${name}`);
  const path = (name: string) => (first ? `join.${name}` : `join[${k}].${name}`);
  const sourcePath = first ? "right" : `join[${k}].source`;
  const leftName = first ? draft.topic : `step ${k}`;
  const leftLabel = first ? draft.topic : `the rows of step ${k}`;
  const rightName = s.right.topic || (first ? "the second topic" : `topic ${k + 2}`);
  const rp = first ? "right-" : `s${k + 1}-`; // the ids of the topic's own controls
  const dedupOf = first ? "the second topic" : rightName;
  const select = (id: string, label: string, path: string, value: string, options: string[], set: (d: Draft, v: string) => void) => (
    <Field id={id} label={label} error={err(path)}>
      <select {...described(id, err(path))} data-problem-path={path} value={value}
        onChange={(e) => update((d) => set(d, e.currentTarget.value))}>
        <option value="">— pick a field —</option>
        {options.map((o) => <option key={o} value={o}>{o}</option>)}
      </select>
    </Field>
  );
  const text = (id: string, label: string, path: string, value: string, set: (d: Draft, v: string) => void, help?: string) => (
    <Field id={id} label={label} error={err(path)} help={help}>
      <input {...described(id, err(path), !!help)} data-problem-path={path} value={value} spellcheck={false}
        onInput={(e) => update((d) => set(d, e.currentTarget.value))} />
    </Field>
  );
  const radios = (group: string, legend: string, choices: [string, string][], value: string, set: (d: Draft, v: string) => void, problemPath?: string) => (
    <fieldset>
      <legend>{legend}</legend>
      {choices.map(([choice, line]) => (
        <div class="radio" key={choice}>
          <input type="radio" name={id(group)} id={id(`${group}-${choice}`)} checked={value === choice} aria-describedby={id(`${group}-${choice}-line`)}
            data-problem-path={problemPath} onChange={() => update((d) => set(d, choice))} />
          <label for={id(`${group}-${choice}`)}>{choice}</label>
          <span class="help" id={id(`${group}-${choice}-line`)}>{line}</span>
        </div>
      ))}
      {problemPath && err(problemPath) && <div class="error" id={id(`${group}-error`)} role="alert">{err(problemPath)}</div>}
    </fieldset>
  );
  const body = (
    <>
      <SourcePicker {...props} select={(d) => stepOf(d, k).right} idPrefix={rp} pathPrefix={sourcePath}
        who={first ? "Second topic" : `Topic ${k + 2}`}
        onSampled={(d, inferred) => {
          const step = stepOf(d, k);
          step.right.dedup.key = likelyKey(inferred)[0] ?? "";
          const pair = likelyPair(d, k);
          if (pair) [step.leftKey, step.rightKey] = pair;
          step.output = [];
          d.mapping = [];
        }} />
      {s.right.fields.length > 0 && (
        <>
          <fieldset>
            <legend>Duplicates in {dedupOf}</legend>
            <div class="check">
              <input id={`${rp}dedup-on`} type="checkbox" checked={s.right.dedup.enabled}
                onChange={(e) => update((d) => { stepOf(d, k).right.dedup.enabled = e.currentTarget.checked; })} />
              <label for={`${rp}dedup-on`}>Drop duplicate events of {dedupOf} (first wins)</label>
            </div>
            {s.right.dedup.enabled && select(`${rp}dedup-key`, `${first ? "Second topic" : rightName}'s dedup key`, `${sourcePath}.dedup.key`, s.right.dedup.key,
              s.right.fields.map((f) => f.name), (d, v) => { stepOf(d, k).right.dedup.key = v; })}
            {s.right.dedup.enabled && text(`${rp}dedup-window`, `${first ? "Second topic" : rightName}'s dedup window`, `${sourcePath}.dedup.time_window`, s.right.dedup.window,
              (d, v) => { stepOf(d, k).right.dedup.window = v; })}
          </fieldset>
          {radios("mode", first ? "Join mode" : `Join mode of step ${k + 1}`, MODES, s.mode, (d, v) => { stepOf(d, k).mode = v as JoinStepDraft["mode"]; }, path("mode"))}
          {radios("type", first ? "Join type" : `Join type of step ${k + 1}`, TYPES, s.type, (d, v) => { stepOf(d, k).type = v as JoinStepDraft["type"]; d.mapping = []; })}
          <div class="row">
            {select(id("left-key"), `Join key in ${leftLabel}`, path("left.key"), s.leftKey, leftFields(draft, k).map((f) => f.name), (d, v) => { stepOf(d, k).leftKey = v; })}
            {select(id("right-key"), `Join key in ${rightName}`, path("right.key"), s.rightKey, s.right.fields.map((f) => f.name),
              (d, v) => { stepOf(d, k).rightKey = v; stepOf(d, k).output = defaultOutput(d, k); })}
          </div>
          <div class="row">
            {text(id("left-window"), first ? `How long a ${draft.topic} event waits for a match` : `How long a row of step ${k} waits for a match`, path("left.time_window"), s.leftWindow,
              (d, v) => { stepOf(d, k).leftWindow = v; }, "e.g. 10m, 1h (at most 7d)")}
            {s.mode === "table"
              ? text(id("right-ttl"), `How long a ${rightName} value is kept (optional)`, path("right.ttl"), s.rightTtl ?? "", (d, v) => { stepOf(d, k).rightTtl = v; },
                "empty: until a tombstone replaces it; e.g. 7d (counted from the value's event time)")
              : text(id("right-window"), `How long a ${rightName} event waits for a match`, path("right.time_window"), s.rightWindow, (d, v) => { stepOf(d, k).rightWindow = v; }, "e.g. 10m, 1h (at most 7d)")}
          </div>
          <fieldset>
            <legend>{first ? "Fields of the joined record" : `Fields of the record step ${k + 1} makes`}</legend>
            {s.output.map((o, i) => {
              const side = o.from === "left" ? leftName : rightName;
              const out = `${first ? "" : rp}out-${i}`;
              return (
                <div class="row" key={`${o.from}:${o.field}`}>
                  <div class="check">
                    <input type="checkbox" id={`${out}-on`} checked={o.on}
                      onChange={(e) => update((d) => { stepOf(d, k).output[i].on = e.currentTarget.checked; d.mapping = []; })} />
                    <label for={`${out}-on`}>{side}: {o.field}</label>
                  </div>
                  {o.on && text(`${out}-as`, `Name of ${side}: ${o.field}`, `${path("output")}[${s.output.slice(0, i).filter((x) => x.on).length}]`, o.as,
                    (d, v) => { stepOf(d, k).output[i].as = v; d.mapping = []; })}
                </div>
              );
            })}
          </fieldset>
        </>
      )}
    </>
  );
  if (first) return body;
  return (
    <section class="join-step" aria-labelledby={id("title")}>
      <div class="title-row">
        <h3 id={id("title")}>Step {k + 1}: join the rows of step {k} with {s.right.topic || "another topic"}</h3>
        <button type="button" onClick={() => update((d) => { d.join.more.splice(k - 1, 1); d.mapping = []; })}>Remove step {k + 1}</button>
      </div>
      {body}
    </section>
  );
}
