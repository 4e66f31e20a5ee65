// Create a pipeline from a file: a streamsift YAML/JSON document or a GlassFlow pipeline JSON
// (the API tells them apart and converts GlassFlow's). Checked as soon as a file is picked or
// the text changes: the document's problems, a name already taken and topics its brokers do
// not have (POST /api/v1/ui/upload/check); then created.
import { useEffect, useState } from "preact/hooks";
import { api, type UploadCheck } from "../api";
import { Field, Message, described, errorWords } from "../components/ui";
import { plainLine } from "../wizard/words";

type Result = { ok: true; check: UploadCheck } | { ok: false; text: string; problems?: string[] } | null;

/** The request body for `text`: JSON when it reads as JSON, else YAML; a JSON syntax error thrown in words. */
function body(text: string): { json: unknown } | { yaml: string } {
  const trimmed = text.trim();
  if (!trimmed.startsWith("{")) return { yaml: text };
  try {
    return { json: JSON.parse(trimmed) };
  } catch (e) {
    throw new Error(`the file is not valid JSON: ${(e as Error).message}`);
  }
}

export function UploadPage() {
  const [text, setText] = useState("");
  const [fileName, setFileName] = useState("");
  const [result, setResult] = useState<Result>(null);
  const [checking, setChecking] = useState(false);
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);

  const check = async (value: string): Promise<Result> => {
    try {
      return { ok: true, check: await api.uploadCheck(body(value)) };
    } catch (e) {
      const problems = ((e as any).problems as string[] | undefined)?.map(plainLine);
      return { ok: false, text: (e as Error).message ?? errorWords(e), problems };
    }
  };
  // checked as it changes (a picked file at once, typing after a pause)
  useEffect(() => {
    if (!text.trim()) { setResult(null); return; }
    let alive = true;
    const timer = setTimeout(async () => {
      setChecking(true);
      const r = await check(text);
      if (alive) { setResult(r); setChecking(false); }
    }, fileName ? 0 : 600);
    return () => { alive = false; clearTimeout(timer); };
  }, [text]);

  const read = async (file: File | undefined) => {
    if (!file) return;
    setFileName(file.name);
    setResult(null);
    setText(await file.text());
  };
  const create = async () => {
    setBusy(true);
    setFailure(null);
    try {
      const b = body(text);
      const created = "json" in b ? await api.create(b.json) : await api.createYaml(b.yaml);
      location.hash = `#/p/${encodeURIComponent(created.id)}`;
    } catch (e) {
      setFailure(`Not created: ${errorWords(e)}`);
    } finally {
      setBusy(false);
    }
  };
  const blocking = result && (!result.ok || result.check.problems.length > 0);
  return (
    <section aria-labelledby="upload-title">
      <h1 id="upload-title">Create a pipeline from a file</h1>
      <p>A streamsift pipeline (YAML or JSON) or a GlassFlow pipeline JSON (v1, v2 or v3; converted on the way in). It is checked as soon as you pick it.</p>
      <form class="card" onSubmit={(e) => { e.preventDefault(); create(); }}>
        <Field id="upload-file" label="Pipeline file">
          <input id="upload-file" type="file" accept=".yaml,.yml,.json,application/json,application/yaml"
            onChange={(e) => read(e.currentTarget.files?.[0])} />
        </Field>
        <Field id="upload-text" label={fileName ? `Contents of ${fileName} (editable)` : "Or paste the document"}>
          <textarea {...described("upload-text")} rows={14} spellcheck={false} value={text}
            onInput={(e) => { setFileName(""); setText(e.currentTarget.value); }} />
        </Field>
        {checking && <Message kind="info">Checking…</Message>}
        {!checking && result?.ok && result.check.problems.length === 0 && (
          <Message kind="ok">ok: {result.check.name}: {result.check.summary}</Message>
        )}
        {!checking && result?.ok && result.check.notes.length > 0 && (
          <Message kind="info"><ul>{result.check.notes.map((n) => <li key={n}>{n}</li>)}</ul></Message>
        )}
        {!checking && result?.ok && result.check.problems.length > 0 && (
          <Message kind="error">
            <div>{result.check.name} cannot be created as it is:</div>
            <ul>{result.check.problems.map((p) => <li key={p}>{p}</li>)}</ul>
          </Message>
        )}
        {!checking && result && !result.ok && (
          <Message kind="error">
            <div>{result.text}</div>
            {result.problems && result.problems.length > 0 && <ul>{result.problems.map((p) => <li key={p}>{p}</li>)}</ul>}
          </Message>
        )}
        <div class="buttons">
          <button type="submit" class="primary" disabled={busy || checking || !text.trim() || Boolean(blocking)}>Create pipeline</button>
        </div>
        {failure && <Message kind="error">{failure}</Message>}
      </form>
    </section>
  );
}
