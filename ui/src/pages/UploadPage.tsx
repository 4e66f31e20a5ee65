// Create a pipeline from a file: a streamsift YAML/JSON document or a GlassFlow pipeline JSON
// (the API tells them apart and converts GlassFlow's). Checked first, then created.
import { useState } from "preact/hooks";
import { api } from "../api";
import { Field, Message, described, errorWords } from "../components/ui";

export function UploadPage() {
  const [text, setText] = useState("");
  const [fileName, setFileName] = useState("");
  const [result, setResult] = useState<{ ok: boolean; text: string; problems?: string[] } | null>(null);
  const [busy, setBusy] = useState(false);

  const read = async (file: File | undefined) => {
    if (!file) return;
    setFileName(file.name);
    setText(await file.text());
    setResult(null);
  };
  const send = async (create: boolean) => {
    setBusy(true);
    setResult(null);
    const trimmed = text.trim();
    const asJson = trimmed.startsWith("{");
    try {
      let body: unknown = null;
      if (asJson) {
        try { body = JSON.parse(trimmed); } catch (e) { throw new Error(`the file is not valid JSON: ${(e as Error).message}`); }
      }
      if (create) {
        const created = asJson ? await api.create(body) : await api.createYaml(text);
        location.hash = `#/p/${encodeURIComponent(created.id)}`;
      } else {
        const r = asJson ? await api.validate(body) : await api.validateYaml(text);
        setResult({ ok: true, text: `ok: ${r.name}: ${r.summary}` });
      }
    } catch (e) {
      const problems = (e as any).problems as string[] | undefined;
      setResult({ ok: false, text: (e as Error).message ?? errorWords(e), problems });
    } finally {
      setBusy(false);
    }
  };
  return (
    <section aria-labelledby="upload-title">
      <h1 id="upload-title">Create a pipeline from a file</h1>
      <p>A streamsift pipeline (YAML or JSON) or a GlassFlow pipeline JSON (v1, v2 or v3; converted on the way in).</p>
      <form class="card" onSubmit={(e) => { e.preventDefault(); send(true); }}>
        <Field id="upload-file" label="Pipeline file">
          <input id="upload-file" type="file" accept=".yaml,.yml,.json,application/json,application/yaml"
            onChange={(e) => read(e.currentTarget.files?.[0])} />
        </Field>
        <Field id="upload-text" label={fileName ? `Contents of ${fileName} (editable)` : "Or paste the document"}>
          <textarea {...described("upload-text")} rows={14} spellcheck={false} value={text} onInput={(e) => setText(e.currentTarget.value)} />
        </Field>
        <div class="buttons">
          <button type="button" disabled={busy || !text.trim()} onClick={() => send(false)}>Check</button>
          <button type="submit" class="primary" disabled={busy || !text.trim()}>Create pipeline</button>
        </div>
        {result && (
          <Message kind={result.ok ? "ok" : "error"}>
            <div>{result.text}</div>
            {result.problems && result.problems.length > 0 && <ul>{result.problems.map((p) => <li key={p}>{p}</li>)}</ul>}
          </Message>
        )}
      </form>
    </section>
  );
}
