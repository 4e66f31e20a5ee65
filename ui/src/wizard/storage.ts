// The wizard's draft kept in this browser (localStorage) until it is deployed or discarded,
// so a reload does not lose it. Passwords are never written there: they are asked again.
import type { Draft } from "./draft";

const KEY = "streamsift.wizard-draft";

export interface Saved {
  draft: Draft;
  step: number;
  at: string;
}

export function loadDraft(): Saved | null {
  try {
    const raw = localStorage.getItem(KEY);
    if (!raw) return null;
    const saved = JSON.parse(raw) as Saved;
    return saved && saved.draft && typeof saved.step === "number" ? saved : null;
  } catch {
    return null;
  }
}

export function saveDraft(draft: Draft, step: number): void {
  const copy = structuredClone(draft);
  copy.kafka.password = "";
  copy.ch.password = "";
  // the alert channels' secrets (a Slack webhook URL is one) are asked again too
  for (const w of copy.alerts?.webhooks ?? []) w.secret = "";
  for (const s of copy.alerts?.slack ?? []) s.url = "";
  for (const e of copy.alerts?.email ?? []) e.password = "";
  try {
    localStorage.setItem(KEY, JSON.stringify({ draft: copy, step, at: new Date().toISOString() }));
  } catch {
    // a full or disabled storage: the draft lives for this page only
  }
}

export function forgetDraft(): void {
  localStorage.removeItem(KEY);
}
