// Wizard step 4 (optional): join a second topic. Its sample and fields as in step 2, its own
// dedup, the join's mode (interval, latest or table), the join keys and windows (a table:
// no second-topic window, an optional ttl), inner or left, and the joined record's fields.
import { useEffect } from "preact/hooks";
import { Field, described } from "../components/ui";
import { defaultOutput, type Draft } from "./draft";
import { likelyKey, SourcePicker } from "./sourceSteps";
import { MODES } from "./joinWords";
import type { StepProps } from "./draft";

const TYPES: ["inner" | "left", string][] = [
  ["inner", "Inner: events without a match are not written (the mode above says how many rows a match makes)."],
  ["left", "Left: also one row for each first-topic event that matched nothing (second-topic fields empty), once its window has passed."],
];

export function JoinStep(props: StepProps) {
  const { draft, update, err } = props;
  const j = draft.join;
  // Output fields follow the two schemas until the user edits them.
  useEffect(() => {
    if (j.enabled && j.right.fields.length && !j.output.length) update((d) => { d.join.output = defaultOutput(d); });
  }, [j.enabled, j.right.fields.length]);
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
  return (
    <>
      <div class="check">
        <input id="join-on" type="checkbox" checked={j.enabled}
          onChange={(e) => update((d) => { d.join.enabled = e.currentTarget.checked; d.mapping = []; })} />
        <label for="join-on">Join with a second topic</label>
      </div>
      {j.enabled && (
        <>
          <SourcePicker {...props} select={(d) => d.join.right} idPrefix="right-" pathPrefix="right"
            onSampled={(d, inferred) => {
              const key = likelyKey(inferred)[0] ?? "";
              d.join.right.dedup.key = key;
              // the likely join key: a right field named like a left field (user_id ~ user.id)
              const plain = (n: string) => n.replace(/[^A-Za-z0-9]/g, "").toLowerCase();
              const pair = d.fields.flatMap((l) => d.join.right.fields.filter((r) => plain(r.name) === plain(l.name))
                .map((r) => [l.name, r.name])).find(Boolean);
              if (pair) { d.join.leftKey = pair[0]; d.join.rightKey = pair[1]; }
              d.join.output = [];
              d.mapping = [];
            }} />
          {j.right.fields.length > 0 && (
            <>
              <fieldset>
                <legend>Duplicates in the second topic</legend>
                <div class="check">
                  <input id="right-dedup-on" type="checkbox" checked={j.right.dedup.enabled}
                    onChange={(e) => update((d) => { d.join.right.dedup.enabled = e.currentTarget.checked; })} />
                  <label for="right-dedup-on">Drop duplicate events of the second topic (first wins)</label>
                </div>
                {j.right.dedup.enabled && select("right-dedup-key", "Second topic's dedup key", "right.dedup.key", j.right.dedup.key,
                  j.right.fields.map((f) => f.name), (d, v) => { d.join.right.dedup.key = v; })}
                {j.right.dedup.enabled && text("right-dedup-window", "Second topic's dedup window", "right.dedup.time_window", j.right.dedup.window,
                  (d, v) => { d.join.right.dedup.window = v; })}
              </fieldset>
              <fieldset>
                <legend>Join mode</legend>
                {MODES.map(([mode, line]) => (
                  <div class="radio" key={mode}>
                    <input type="radio" name="join-mode" id={`join-mode-${mode}`} checked={j.mode === mode} aria-describedby={`join-mode-${mode}-line`}
                      data-problem-path="join.mode" onChange={() => update((d) => { d.join.mode = mode; })} />
                    <label for={`join-mode-${mode}`}>{mode}</label>
                    <span class="help" id={`join-mode-${mode}-line`}>{line}</span>
                  </div>
                ))}
                {err("join.mode") && <div class="error" id="join-mode-error" role="alert">{err("join.mode")}</div>}
              </fieldset>
              <fieldset>
                <legend>Join type</legend>
                {TYPES.map(([type, line]) => (
                  <div class="radio" key={type}>
                    <input type="radio" name="join-type" id={`join-type-${type}`} checked={j.type === type} aria-describedby={`join-type-${type}-line`}
                      onChange={() => update((d) => { d.join.type = type; d.mapping = []; })} />
                    <label for={`join-type-${type}`}>{type}</label>
                    <span class="help" id={`join-type-${type}-line`}>{line}</span>
                  </div>
                ))}
              </fieldset>
              <div class="row">
                {select("join-left-key", `Join key in ${draft.topic}`, "join.left.key", j.leftKey, draft.fields.map((f) => f.name), (d, v) => { d.join.leftKey = v; })}
                {select("join-right-key", `Join key in ${j.right.topic}`, "join.right.key", j.rightKey, j.right.fields.map((f) => f.name), (d, v) => { d.join.rightKey = v; d.join.output = defaultOutput(d); })}
              </div>
              <div class="row">
                {text("join-left-window", `How long a ${draft.topic} event waits for a match`, "join.left.time_window", j.leftWindow, (d, v) => { d.join.leftWindow = v; }, "e.g. 10m, 1h (at most 7d)")}
                {j.mode === "table"
                  ? text("join-right-ttl", `How long a ${j.right.topic} value is kept (optional)`, "join.right.ttl", j.rightTtl, (d, v) => { d.join.rightTtl = v; },
                    "empty: until a tombstone replaces it; e.g. 7d (counted from the value's event time)")
                  : text("join-right-window", `How long a ${j.right.topic} event waits for a match`, "join.right.time_window", j.rightWindow, (d, v) => { d.join.rightWindow = v; }, "e.g. 10m, 1h (at most 7d)")}
              </div>
              <fieldset>
                <legend>Fields of the joined record</legend>
                {j.output.map((o, i) => (
                  <div class="row" key={`${o.from}:${o.field}`}>
                    <div class="check">
                      <input type="checkbox" id={`out-${i}-on`} checked={o.on}
                        onChange={(e) => update((d) => { d.join.output[i].on = e.currentTarget.checked; d.mapping = []; })} />
                      <label for={`out-${i}-on`}>{o.from === "left" ? draft.topic : j.right.topic}: {o.field}</label>
                    </div>
                    {o.on && text(`out-${i}-as`, `Name of ${o.from === "left" ? draft.topic : j.right.topic}: ${o.field}`, `join.output[${j.output.slice(0, i).filter((x) => x.on).length}]`, o.as,
                      (d, v) => { d.join.output[i].as = v; d.mapping = []; })}
                  </div>
                ))}
              </fieldset>
            </>
          )}
        </>
      )}
    </>
  );
}
