// Edit a stopped pipeline: its document as YAML (secrets as ***, which keep their stored
// values), checked by the API's validate route as you type, saved as a new version (PUT).
// A change of what the checkpoint's state is built on needs "start afresh" (reset_state);
// the server says so, in words, when it is missing.
import { useEffect, useState } from "preact/hooks";
import YAML from "yaml";
import { ApiError, api, type Pipeline } from "../api";
import { Message, errorWords } from "../components/ui";

const AT_REST = ["Stopped", "Failed"];

type Check = { ok: true; summary: string } | { ok: false; lines: string[] } | null;

export function EditPage({ id }: { id: string }) {
  const [pipeline, setPipeline] = useState<Pipeline | null>(null);
  const [text, setText] = useState<string | null>(null);
  const [loadError, setLoadError] = useState<string | null>(null);
  const [check, setCheck] = useState<Check>(null);
  const [reset, setReset] = useState(false);
  const [busy, setBusy] = useState(false);
  const [saved, setSaved] = useState<Pipeline | null>(null);
  const [problem, setProblem] = useState<string | null>(null);

  useEffect(() => {
    Promise.all([api.pipeline(id), api.document(id)])
      .then(([p, doc]) => { setPipeline(p); setText(YAML.stringify(doc)); })
      .catch((e) => setLoadError(errorWords(e)));
  }, [id]);

  // the API's own validation, 400 ms after the last keystroke
  useEffect(() => {
    if (text === null) return;
    let alive = true;
    const timer = setTimeout(async () => {
      try {
        const r = await api.validateYaml(text);
        if (alive) setCheck({ ok: true, summary: r.summary });
      } catch (e) {
        if (!alive) return;
        const lines = e instanceof ApiError && e.problems.length ? e.problems : [errorWords(e)];
        // The validate route does not know the stored secrets: a schema registry reached
        // with a masked password is left to the edit itself, which restores it first.
        const open = lines.filter((l) => !l.includes("masked (***)"));
        setCheck(open.length ? { ok: false, lines: open } : { ok: true, summary: "the rest is checked on Save, with the stored secrets" });
      }
    }, 400);
    return () => { alive = false; clearTimeout(timer); };
  }, [text]);

  const save = async () => {
    if (text === null) return;
    setBusy(true);
    setProblem(null);
    setSaved(null);
    try {
      const p = await api.edit(id, text, reset);
      setSaved(p);
      setPipeline(p);
      setReset(false);
    } catch (e) {
      setProblem(`Not saved: ${errorWords(e)}`);
    } finally {
      setBusy(false);
    }
  };

  const atRest = pipeline ? AT_REST.includes(pipeline.state) : false;
  const described = ["edit-doc-help", check ? "edit-doc-check" : null].filter(Boolean).join(" ");
  const href = `#/p/${encodeURIComponent(id)}`;
  return (
    <section aria-labelledby="edit-title">
      <p><a href={href}>← {id}</a></p>
      <h1 id="edit-title">Edit {id}</h1>
      {loadError && <Message kind="error">{loadError}</Message>}
      {pipeline && (
        <p class="muted">Version {pipeline.version}, {pipeline.state}. Saving stores a new version; the pipeline runs it when resumed, and a replay of its dead letters uses it at once.</p>
      )}
      {pipeline && !atRest && (
        <Message kind="info">{id} is {pipeline.state}: only a stopped pipeline can be edited. Stop it on <a href={href}>its page</a> first.</Message>
      )}
      {text !== null && (
        <form class="card" onSubmit={(e) => { e.preventDefault(); save(); }}>
          <div class={`field${check && !check.ok ? " invalid" : ""}`}>
            <label for="edit-doc">Pipeline document (YAML)</label>
            <textarea id="edit-doc" rows={24} spellcheck={false} value={text} aria-describedby={described}
              aria-invalid={check && !check.ok ? "true" : undefined}
              onInput={(e) => { setText(e.currentTarget.value); setSaved(null); }} />
            <div class="help" id="edit-doc-help">Secrets shown as <code>***</code> keep their stored values; type a new value to change one. The name stays.</div>
            {check?.ok && <div class="preview" id="edit-doc-check" role="status">ok: {check.summary}</div>}
            {check && !check.ok && (
              <div class="error" id="edit-doc-check" role="alert">
                <ul>{check.lines.map((l) => <li key={l}>{l}</li>)}</ul>
              </div>
            )}
          </div>
          <div class="check">
            <input id="edit-reset" type="checkbox" checked={reset} aria-describedby="edit-reset-help"
              onChange={(e) => setReset(e.currentTarget.checked)} />
            <label for="edit-reset">Start afresh (reset_state)</label>
            <span class="help" id="edit-reset-help">Drops the read offsets and the dedup/join state, so the topics are read again from start_from: needed when the topics, the dedup key or window, or the join keys change.</span>
          </div>
          <div class="buttons">
            <button type="submit" class="primary" disabled={busy || !atRest || (check !== null && !check.ok)}>Save</button>
          </div>
          {problem && <Message kind="error">{problem}</Message>}
          {saved && (
            <Message kind="ok">
              Saved as version {saved.version}. <a href={href}>Resume it on its page</a>, or <a href={`${href}/dlq`}>replay its dead letters</a> with this version.
            </Message>
          )}
        </form>
      )}
    </section>
  );
}
