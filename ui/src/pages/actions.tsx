// Stop / resume / terminate / delete a pipeline, each after a confirmation, and a link to
// edit it when it is at rest. Which buttons show follows the lifecycle (the server still
// decides: a refused one says why).
import { useState } from "preact/hooks";
import { api, type State } from "../api";
import { Confirm, errorWords } from "../components/ui";

type Action = "stop" | "terminate" | "resume" | "delete";

const ALLOWED: Record<State, Action[]> = {
  Created: ["stop", "terminate"],
  Running: ["stop", "terminate"],
  Resuming: ["stop", "terminate"],
  Retrying: ["stop", "terminate"],
  Stopping: ["terminate"],
  Terminating: [],
  Stopped: ["resume", "delete"],
  Failed: ["resume", "delete"],
};

const ASK: Record<Action, (name: string) => [string, string, string]> = {
  stop: (n) => [`Stop ${n}?`, "The micro-batch in flight finishes, then the pipeline stops. Resume continues where it stopped.", "Stop"],
  terminate: (n) => [`Terminate ${n}?`, "It stops at once. Nothing is lost or doubled: the batch in flight is redone on resume.", "Terminate"],
  resume: (n) => [`Resume ${n}?`, "It starts again from its checkpoint.", "Resume"],
  delete: (n) => [`Delete ${n}?`, "Its versions, history and checkpoint are removed. The ClickHouse table and its rows stay.", "Delete"],
};

export function PipelineActions(props: {
  id: string;
  state: State;
  onDone: (action: Action) => void;
  onError: (words: string) => void;
}) {
  const [asking, setAsking] = useState<Action | null>(null);
  const [busy, setBusy] = useState(false);
  const run = async (action: Action) => {
    setAsking(null);
    setBusy(true);
    try {
      if (action === "delete") await api.remove(props.id);
      else await api.action(props.id, action);
      props.onDone(action);
    } catch (e) {
      props.onError(`${action} ${props.id}: ${errorWords(e)}`);
    } finally {
      setBusy(false);
    }
  };
  const actions = ALLOWED[props.state] ?? [];
  return (
    <div class="actions">
      {actions.includes("resume") && (
        <>
          <a class="button" href={`#/p/${encodeURIComponent(props.id)}/wizard`} aria-label={`edit ${props.id} in the wizard`}>Edit in wizard</a>
          <a class="button" href={`#/p/${encodeURIComponent(props.id)}/edit`} aria-label={`edit ${props.id}`}>Edit YAML</a>
        </>
      )}
      {actions.map((a) => (
        <button
          type="button"
          key={a}
          class={a === "delete" || a === "terminate" ? "danger-outline" : ""}
          disabled={busy}
          aria-label={`${a} ${props.id}`}
          onClick={() => setAsking(a)}
        >
          {a[0].toUpperCase() + a.slice(1)}
        </button>
      ))}
      {asking && (
        <Confirm
          question={ASK[asking](props.id)[0]}
          detail={ASK[asking](props.id)[1]}
          action={ASK[asking](props.id)[2]}
          onConfirm={() => run(asking)}
          onCancel={() => setAsking(null)}
        />
      )}
    </div>
  );
}
