// The pipeline wizard: one step per screen; Back and Next keep every entry (one draft for
// all steps). As you type, the draft's document is validated by the API (debounced) and
// each problem is shown next to its field; Next stops at a step with problems.
import { useEffect, useRef, useState } from "preact/hooks";
import { api, ApiError } from "../api";
import { Message, errorWords } from "../components/ui";
import { emptyDraft, problemsFor, problemText, validationDocument, wizardPath, type Draft, type StepProps } from "./draft";
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

export function Wizard() {
  const [draft, setDraft] = useState<Draft>(emptyDraft);
  const [step, setStep] = useState(0);
  const [problems, setProblems] = useState<string[]>([]);
  const [general, setGeneral] = useState<string | null>(null);
  const [checked, setChecked] = useState(0); // bumped after each validation
  const [moving, setMoving] = useState(false); // Next is checking the step: one move at a time
  const movingNow = useRef(false); // the same, for a second click before the next render
  const heading = useRef<HTMLHeadingElement>(null);
  const seq = useRef(0);
  const name = STEPS[step];

  const validate = async (d: Draft, at: number): Promise<string[]> => {
    const mine = ++seq.current;
    let found: string[] = [];
    try {
      await api.validate(validationDocument(d, at, STEPS));
      setGeneral(null);
    } catch (e) {
      if (e instanceof ApiError && e.status === 422) {
        found = (e.problems.length ? e.problems : [e.message]).map(wizardPath);
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
    const timer = setTimeout(() => validate(draft, step), 350);
    return () => clearTimeout(timer);
  }, [draft, step]);

  useEffect(() => heading.current?.focus(), [step]);

  const update = (change: (d: Draft) => void) => {
    const next = structuredClone(draft);
    change(next);
    setDraft(next);
  };
  const stepProblems = (list: string[]) =>
    list.filter((p) => STEP_PATHS[name].some((path) => path === "" || problemsFor([p], path).length));
  const err = (path: string) => problemText(problemsFor(problems, path));

  const next = async () => {
    if (movingNow.current) return;
    movingNow.current = true;
    setMoving(true);
    let found: string[];
    try {
      found = stepProblems(await validate(draft, step));
    } finally {
      movingNow.current = false;
      setMoving(false);
    }
    const local = localProblem(draft, name);
    if (found.length || local) {
      if (local) setGeneral(local);
      setTimeout(() => (document.querySelector("[aria-invalid=true]") as HTMLElement | null)?.focus(), 0);
      return;
    }
    setGeneral(null);
    setStep(step + 1);
  };

  const unplaced = stepProblems(problems).filter(
    (p) => !document.querySelector(`[data-problem-path="${CSS.escape(p.split(":")[0])}"]`),
  );
  const props: StepProps = { draft, update, err };
  return (
    <section class="wizard" aria-labelledby="wizard-title">
      <h1 id="wizard-title">New pipeline</h1>
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
      <form class="card step" onSubmit={(e) => { e.preventDefault(); if (name !== "review") next(); }} noValidate>
        <h2 ref={heading} tabIndex={-1}>{TITLES[name]}</h2>
        {name === "kafka" && <KafkaStep {...props} />}
        {name === "topic" && <TopicStep {...props} />}
        {name === "dedup" && <DedupStep {...props} />}
        {name === "join" && <JoinStep {...props} />}
        {name === "transform" && <TransformStep {...props} />}
        {name === "clickhouse" && <ClickHouseStep {...props} />}
        {name === "review" && <ReviewStep {...props} problems={problems} checked={checked} />}
        {general && <Message kind="error">{general}</Message>}
        {name !== "review" && unplaced.length > 0 && (
          <Message kind="error">{unplaced.map((p) => <div key={p}>{p}</div>)}</Message>
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

/** What a step needs before Next that the document cannot say yet. */
function localProblem(d: Draft, step: string): string | null {
  if (step === "topic" && !d.topic) return "pick a topic first";
  if (step === "topic" && !d.fields.length) return "the schema needs at least one field: fetch a sample or add one";
  if (step === "dedup" && d.dedup.enabled && d.dedup.mode !== "exact" && !d.dedup.key.length)
    return "pick the key field(s) that identify an event, or turn deduplication off";
  if (step === "join" && d.join.enabled && !d.join.right.topic) return "pick the second topic, or turn the join off";
  if (step === "join" && d.join.enabled && (!d.join.leftKey || !d.join.rightKey)) return "pick the join key of each topic";
  if (step === "clickhouse" && !d.table) return "name the ClickHouse table";
  return null;
}
