// The pipeline wizard: one step per screen; Back and Next keep every entry (one draft for
// all steps). As you type, the draft's document is validated by the API (debounced) and
// each problem is shown next to its field; Next stops at a step with problems.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError } from "../api";
import { Message, errorWords, fmt } from "../components/ui";
import {
  clickhouseConnection, emptyDraft, kafkaConnection, problemsFor, problemText, validationDocument, wizardPath,
  type Draft, type StepProps,
} from "./draft";
import { fromDocument } from "./edit";
import { joinStepsOf } from "./chain";
import { forgetDraft, loadDraft, saveDraft } from "./storage";
import { plainLine } from "./words";
import { JoinStep } from "./JoinStep";
import { KafkaStep, TopicStep } from "./sourceSteps";
import { DedupStep, TransformStep } from "./shapeSteps";
import { ClickHouseStep } from "./ClickHouseStep";
import { ReviewStep } from "./ReviewStep";

export const STEPS = ["kafka", "topic", "dedup", "join", "transform", "clickhouse", "review"];
const TITLES: Record<string, string> = {
  kafka: "Kafka connection",
  topic: "Topic and sample event",
  dedup: "Deduplication",
  join: "Join (optional)",
  transform: "Filter and computed fields",
  clickhouse: "ClickHouse",
  review: "Review and deploy",
};
// Problem paths each step answers for (the rest belong to other steps).
const STEP_PATHS: Record<string, string[]> = {
  kafka: ["source.bootstrap_servers", "source.security"],
  topic: ["source.topic", "source.schema", "source.start_from"],
  dedup: ["dedup"],
  join: ["right", "join", "sources"],
  transform: ["transform", "filter"],
  clickhouse: ["sink"],
  review: [""],
};

export function Wizard({ editId }: { editId?: string } = {}) {
  const [draft, setDraft] = useState<Draft | null>(null);
  const [stored, setStored] = useState<Record<string, any> | null>(null); // the edited document
  const [restored, setRestored] = useState<string | null>(null); // when the kept draft was saved
  const [step, setStep] = useState(0);
  const [problems, setProblems] = useState<string[]>([]);
  const [general, setGeneral] = useState<string | null>(null);
  const [checked, setChecked] = useState(0); // bumped after each validation
  const [moving, setMoving] = useState(false); // Next is checking the step: one move at a time
  const [touched, setTouched] = useState<string[]>([]); // problem paths the user changed
  const [tried, setTried] = useState<number[]>([]); // steps whose Next was pressed
  const movingNow = useRef(false); // the same, for a second click before the next render
  const heading = useRef<HTMLHeadingElement>(null);
  const seq = useRef(0);
  const name = STEPS[step];

  // Start: the pipeline being edited, else the draft this browser kept, else the server's defaults.
  useEffect(() => {
    if (editId) {
      api.document(editId)
        .then((doc) => { setStored(doc); setDraft(fromDocument(doc)); })
        .catch((e) => setGeneral(errorWords(e)));
      return;
    }
    const saved = loadDraft();
    if (saved) {
      // a draft kept by an older UI: its gaps filled (the join's mode and steps too)
      const empty = emptyDraft();
      setDraft({ ...empty, ...saved.draft, join: { ...empty.join, ...saved.draft.join } });
      setStep(Math.min(saved.step, STEPS.length - 1));
      setRestored(saved.at);
      return;
    }
    api.defaults().then((d) => setDraft(emptyDraft(d))).catch(() => setDraft(emptyDraft()));
  }, [editId]);

  // Keep the new pipeline's draft in this browser (not an edit: the server has that one).
  useEffect(() => { if (draft && !editId) saveDraft(draft, step); }, [draft, step]);

  const validate = async (d: Draft, at: number): Promise<string[]> => {
    const mine = ++seq.current;
    let found: string[] = [];
    try {
      await api.validate(validationDocument(d, at, STEPS));
      setGeneral(null);
    } catch (e) {
      if (e instanceof ApiError && e.status === 422) {
        found = (e.problems.length ? e.problems : [e.message]).map(wizardPath)
          // an edit's secrets are *** until saved: the server restores them then
          .filter((l) => !(editId && l.includes("masked (***)")));
        setGeneral(null);
      } else {
        setGeneral(errorWords(e));
      }
    }
    if (mine === seq.current) { setProblems(found); setChecked((c) => c + 1); }
    return found;
  };

  // Validate as you type (debounced), against the same rules as the API.
  useEffect(() => {
    if (!draft) return;
    const timer = setTimeout(() => validate(draft, step), 350);
    return () => clearTimeout(timer);
  }, [draft, step]);

  useEffect(() => heading.current?.focus(), [step]);

  if (!draft) {
    return (
      <section class="wizard" aria-labelledby="wizard-title">
        <h1 id="wizard-title">{editId ? `Edit ${editId}` : "New pipeline"}</h1>
        {general ? <Message kind="error">{general}</Message> : <Message kind="info">Loading…</Message>}
      </section>
    );
  }

  const update = (change: (d: Draft) => void) => {
    const next = structuredClone(draft);
    change(next);
    setDraft(next);
  };
  const stepProblems = (list: string[]) =>
    list.filter((p) => STEP_PATHS[name].some((path) => path === "" || problemsFor([p], path).length));
  // A message shows once its field was changed, or once Next was pressed on the step; on the
  // review everything shows but the optional alerts' fields (each once it was changed). A
  // path ending in ":" is a group's own message (an e-mail channel's): shown once a field in
  // the group was changed.
  const shown = (at: string) => {
    const alerts = at.startsWith("alerts");
    const path = alerts ? at.replace(/:$/, "") : at;
    return tried.includes(step) || (name === "review" && !alerts) ||
      touched.some((t) => t === path || t.startsWith(`${path}.`) || t.startsWith(`${path}[`) || path.startsWith(`${t}.`) || path.startsWith(`${t}[`));
  };
  const err = (path: string, always = false) => (always || shown(path) ? problemText(problemsFor(problems, path)) : null);
  const touch = (e: Event) => {
    const at = (e.target as HTMLElement | null)?.closest?.("[data-problem-path]")?.getAttribute("data-problem-path");
    if (at && !touched.includes(at)) setTouched([...touched, at]);
  };

  const next = async () => {
    if (movingNow.current) return;
    movingNow.current = true;
    setMoving(true);
    if (!tried.includes(step)) setTried([...tried, step]);
    let found: string[];
    let blocked: string | null = null;
    try {
      found = stepProblems(await validate(draft, step));
      if (!found.length) blocked = localProblem(draft, name) ?? await reachable(draft, name, update);
    } finally {
      movingNow.current = false;
      setMoving(false);
    }
    if (found.length || blocked) {
      setGeneral(blocked);
      setTimeout(() => (document.querySelector("[aria-invalid=true]") as HTMLElement | null)?.focus(), 0);
      return;
    }
    setGeneral(null);
    setStep(step + 1);
  };

  const discard = () => {
    forgetDraft();
    setDraft(null); // nothing to type into until the defaults are back
    setRestored(null);
    setStep(0);
    setTouched([]);
    setTried([]);
    api.defaults().then((d) => setDraft(emptyDraft(d))).catch(() => setDraft(emptyDraft()));
  };

  const unplaced = tried.includes(step) ? stepProblems(problems).filter(
    (p) => !document.querySelector(`[data-problem-path="${CSS.escape(p.split(":")[0])}"]`),
  ) : [];
  const props: StepProps = { draft, update, err };
  return (
    <section class="wizard" aria-labelledby="wizard-title">
      <div class="title-row">
        <h1 id="wizard-title">{editId ? `Edit ${editId}` : "New pipeline"}</h1>
        {!editId && <button type="button" onClick={discard}>Discard draft</button>}
      </div>
      {editId && <p><a href={`#/p/${encodeURIComponent(editId)}`}>← {editId}</a> · <a href={`#/p/${encodeURIComponent(editId)}/edit`}>edit as YAML</a></p>}
      {restored && (
        <Message kind="info">Your draft from {fmt.dateTime(restored)} was kept in this browser: carry on, or discard it to start afresh. Passwords are never kept: type them again.</Message>
      )}
      <ol class="steps" aria-label="steps">
        {STEPS.map((s, i) => (
          <li key={s} aria-current={i === step ? "step" : undefined} class={i < step ? "done" : ""}>
            {i < step ? (
              <button type="button" class="link" onClick={() => setStep(i)}>{i + 1}. {TITLES[s]}</button>
            ) : (
              <span>{i + 1}. {TITLES[s]}</span>
            )}
          </li>
        ))}
      </ol>
      <form class="card step" onSubmit={(e) => { e.preventDefault(); if (name !== "review") next(); }}
        onInput={touch} onChange={touch} noValidate>
        <h2 ref={heading} tabIndex={-1}>{TITLES[name]}</h2>
        {name === "kafka" && <KafkaStep {...props} />}
        {name === "topic" && <TopicStep {...props} />}
        {name === "dedup" && <DedupStep {...props} />}
        {name === "join" && <JoinStep {...props} />}
        {name === "transform" && <TransformStep {...props} />}
        {name === "clickhouse" && <ClickHouseStep {...props} />}
        {name === "review" && (
          <ReviewStep {...props} problems={problems} checked={checked}
            editing={editId && stored ? { id: editId, stored } : null} />
        )}
        {general && <Message kind="error">{general}</Message>}
        {name !== "review" && unplaced.length > 0 && (
          <Message kind="error">{unplaced.map((p) => <div key={p}>{plainLine(p)}</div>)}</Message>
        )}
        <div class="buttons nav">
          <button type="button" disabled={step === 0} onClick={() => { setGeneral(null); setStep(step - 1); }}>Back</button>
          {name !== "review" && (
            <button type="submit" class="primary" disabled={moving} aria-busy={moving}>Next</button>
          )}
        </div>
      </form>
    </section>
  );
}

/** Next's check of what the step connects to: Kafka must answer; a ClickHouse must be
 * reachable or be one deploy can create or share. Null when the step may be left. */
async function reachable(d: Draft, step: string, update: (change: (d: Draft) => void) => void): Promise<string | null> {
  // an edited pipeline's stored password is *** here: the server has the real one, so a
  // probe from the wizard would be refused for the wrong reason; Save checks with it
  if (step === "kafka" && d.kafka.password === "***") return null;
  if (step === "clickhouse" && d.ch.kind === "server" && d.ch.password === "***") return null;
  try {
    if (step === "kafka") {
      const r = await api.kafkaTest(kafkaConnection(d));
      update((x) => { x.topics = r.topics; });
    }
    if (step === "clickhouse") await api.clickhouseCheck(clickhouseConnection(d));
    return null;
  } catch (e) {
    const what = step === "kafka" ? "Kafka" : "ClickHouse";
    return `${what} did not answer as needed, so this step cannot be left yet: ${errorWords(e)}`;
  }
}

/** What a step needs before Next that the document cannot say yet. */
function localProblem(d: Draft, step: string): string | null {
  if (step === "topic" && !d.topic) return "pick a topic first";
  if (step === "topic" && !d.fields.length) return "the schema needs at least one field: fetch a sample or add one";
  if (step === "dedup" && d.dedup.enabled && d.dedup.mode !== "exact" && !d.dedup.key.length)
    return "pick the key field(s) that identify an event, or turn deduplication off";
  if (step === "join") {
    const at = joinStepsOf(d).findIndex((s) => !s.right.topic || !s.leftKey || !s.rightKey);
    const s = joinStepsOf(d)[at];
    if (s && !s.right.topic) return at ? `pick the topic of step ${at + 1}, or remove the step` : "pick the second topic, or turn the join off";
    if (s) return at ? `pick the join keys of step ${at + 1}` : "pick the join key of each topic";
  }
  if (step === "clickhouse" && !d.table) return "name the ClickHouse table";
  return null;
}
