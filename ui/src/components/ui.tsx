// Small shared pieces: a labelled field with its message, a confirmation dialog, a
// message line, a poller. Every control gets a label (for=id) and its message is tied to
// it with aria-describedby, so screen readers say both.
import type { ComponentChildren } from "preact";
import { useEffect, useRef, useState } from "preact/hooks";

export function Field(props: {
  id: string;
  label: string;
  error?: string | null;
  help?: ComponentChildren;
  children: ComponentChildren;
}) {
  return (
    <div class={`field${props.error ? " invalid" : ""}`}>
      <label for={props.id}>{props.label}</label>
      {props.children}
      {props.help && <div class="help" id={`${props.id}-help`}>{props.help}</div>}
      {props.error && (
        <div class="error" id={`${props.id}-error`} role="alert" data-field={props.id}>
          {props.error}
        </div>
      )}
    </div>
  );
}

/** aria attributes for the input of a Field. */
export function described(id: string, error?: string | null, help?: boolean) {
  const ids = [help ? `${id}-help` : null, error ? `${id}-error` : null].filter(Boolean);
  return {
    id,
    "aria-invalid": error ? ("true" as const) : undefined,
    "aria-describedby": ids.length ? ids.join(" ") : undefined,
  };
}

export function Message({ kind, children }: { kind: "ok" | "error" | "info"; children: ComponentChildren }) {
  return (
    <div class={`message ${kind}`} role={kind === "error" ? "alert" : "status"}>
      {children}
    </div>
  );
}

/** A modal asking to confirm `question`; Escape or Cancel closes it. */
export function Confirm(props: {
  question: string;
  detail?: string;
  action: string;
  onConfirm: () => void;
  onCancel: () => void;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    ref.current?.showModal();
  }, []);
  return (
    <dialog ref={ref} class="confirm" aria-labelledby="confirm-title" onCancel={props.onCancel}>
      <h2 id="confirm-title">{props.question}</h2>
      {props.detail && <p>{props.detail}</p>}
      <div class="buttons">
        <button type="button" onClick={props.onCancel}>Cancel</button>
        <button type="button" class="danger" onClick={props.onConfirm}>{props.action}</button>
      </div>
    </dialog>
  );
}

/** Call `load` now and every `ms` while mounted; returns its last result and error. */
export function usePoll<T>(load: () => Promise<T>, ms: number, deps: unknown[] = []) {
  const [data, setData] = useState<T | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let alive = true;
    let timer = 0;
    const run = async () => {
      try {
        const value = await load();
        if (alive) { setData(value); setError(null); }
      } catch (e) {
        if (alive) setError(e instanceof Error ? (e as any).words ?? e.message : String(e));
      }
      if (alive) timer = window.setTimeout(run, ms);
    };
    run();
    return () => { alive = false; clearTimeout(timer); };
  }, [...deps, tick]);
  return { data, error, refresh: () => setTick(tick + 1) };
}

export function errorWords(e: unknown): string {
  return e instanceof Error ? ((e as any).words ?? e.message) : String(e);
}

export const fmt = {
  int: (n: number | null | undefined) => (n == null ? "–" : n.toLocaleString("en")),
  rate: (n: number | null | undefined) =>
    n == null ? "–" : n >= 100 ? Math.round(n).toLocaleString("en") : n.toFixed(1),
  time: (iso: string | null | undefined) =>
    iso ? new Date(iso).toLocaleTimeString("en-GB", { hour12: false }) : "–",
  dateTime: (iso: string | null | undefined) =>
    iso ? new Date(iso).toLocaleString("en-GB", { hour12: false }) : "–",
  bytes: (n: number | null | undefined) => {
    if (n == null) return "–";
    const units = ["B", "KB", "MB", "GB", "TB"];
    let value = n;
    let unit = 0;
    while (value >= 1000 && unit < units.length - 1) {
      value /= 1000;
      unit += 1;
    }
    return `${unit ? value.toFixed(1) : value} ${units[unit]}`;
  },
};

/** Save `text` as a file named `name` (no request leaves the page). */
export function download(name: string, text: string, type = "application/yaml"): void {
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = document.createElement("a");
  a.href = url;
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}
