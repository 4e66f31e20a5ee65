// Wizard step 6: the pipeline's name, its document as YAML (shown with secrets masked;
// downloadable), the problems the API still finds, and Deploy.
import { useState } from "preact/hooks";
import YAML from "yaml";
import { api } from "../api";
import { Field, Message, described, download, errorWords } from "../components/ui";
import { toDocument } from "./draft";
import type { StepProps } from "./draft";

export function masked(doc: Record<string, any>): Record<string, any> {
  const copy = structuredClone(doc);
  const sec = copy.source?.security;
  if (sec?.password) sec.password = "***";
  if (copy.sink?.clickhouse?.password) copy.sink.clickhouse.password = "***";
  return copy;
}

export function ReviewStep({ draft, update, err, problems, checked }: StepProps & { problems: string[]; checked: number }) {
  const [deploying, setDeploying] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  const doc = toDocument(draft);
  const yaml = YAML.stringify(masked(doc));
  const nameErr = err("name");
  const deploy = async () => {
    setDeploying(true);
    setFailure(null);
    try {
      const created = await api.create(doc);
      location.hash = `#/p/${encodeURIComponent(created.id)}`;
    } catch (e) {
      setFailure(`Not deployed: ${errorWords(e)}`);
    } finally {
      setDeploying(false);
    }
  };
  return (
    <>
      <Field id="pipeline-name" label="Pipeline name" error={nameErr} help="letters, digits, _ and -; names its consumer group and checkpoint">
        <input {...described("pipeline-name", nameErr, true)} data-problem-path="name" value={draft.name} spellcheck={false}
          onInput={(e) => update((d) => { d.name = e.currentTarget.value; })} />
      </Field>
      <h3 id="yaml-title">Pipeline document</h3>
      <pre class="yaml" aria-labelledby="yaml-title" tabIndex={0} data-testid="review-yaml">{yaml}</pre>
      <div class="buttons">
        <button type="button" onClick={() => download(`${draft.name || "pipeline"}.yaml`, YAML.stringify(doc))}>Download YAML</button>
        <button type="button" class="primary" disabled={deploying || problems.length > 0 || checked === 0} onClick={deploy}>
          {deploying ? "Deploying…" : "Deploy"}
        </button>
      </div>
      <p class="muted">The downloaded file holds the passwords you entered; the one shown here has them as ***.</p>
      {problems.length > 0 && (
        <Message kind="error">
          <div>Fix these before deploying:</div>
          <ul>{problems.map((p) => <li key={p}>{p}</li>)}</ul>
        </Message>
      )}
      {failure && <Message kind="error">{failure}</Message>}
    </>
  );
}
