// A pipeline's alert rules (its document's `alerts:` section, config/alerts.py): what the
// wizard's alerts section gathers, the section it writes, the draft an edit reads back, and
// the rules said in words (the review's summary and the pipeline page).

type Doc = Record<string, any>;

export interface WebhookDraft { url: string; secret: string; extra: Doc }
export interface SlackDraft { url: string; extra: Doc }
export interface EmailDraft {
  host: string;
  port: string;
  security: "starttls" | "ssl" | "none";
  from: string;
  to: string; // comma-separated addresses
  username: string;
  password: string;
  extra: Doc;
}

export interface AlertsDraft {
  failed: boolean;
  retrying: { on: boolean; minutes: string };
  lag: { on: boolean; above: string; minutes: string };
  dlq: { on: boolean; by: string; minutes: string };
  webhooks: WebhookDraft[];
  slack: SlackDraft[];
  email: EmailDraft[];
  /** Conditions the stored document turned off (`false`): kept off while not ticked. */
  off: string[];
}

export function emptyAlerts(): AlertsDraft {
  return {
    failed: false,
    retrying: { on: false, minutes: "5" },
    lag: { on: false, above: "10000", minutes: "1" },
    dlq: { on: false, by: "1", minutes: "10" },
    webhooks: [],
    slack: [],
    email: [],
    off: [],
  };
}

export const emptyWebhook = (): WebhookDraft => ({ url: "", secret: "", extra: {} });
export const emptySlack = (): SlackDraft => ({ url: "", extra: {} });
export const emptyEmail = (): EmailDraft => ({
  host: "", port: "587", security: "starttls", from: "", to: "", username: "", password: "", extra: {},
});

/** Whether the draft sets anything (a section to write). */
export function hasAlerts(a: AlertsDraft): boolean {
  return a.failed || a.retrying.on || a.lag.on || a.dlq.on || a.off.length > 0 ||
    a.webhooks.length + a.slack.length + a.email.length > 0;
}

const UNIT: Record<string, number> = { ms: 0.001, s: 1, m: 60, h: 3600, d: 86400 };

/** Seconds of a duration as config/durations.py reads it ("5m", "1h30m", 90), or null. */
export function durationSeconds(value: unknown): number | null {
  if (typeof value === "number") return value >= 0 ? value : null;
  if (typeof value !== "string") return null;
  const text = value.trim().toLowerCase();
  let pos = 0, total = 0;
  for (const m of text.matchAll(/(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)/g)) {
    if (m.index !== pos) return null;
    total += Number(m[1]) * UNIT[m[2]];
    pos = m.index + m[0].length;
  }
  return pos && pos === text.length ? total : null;
}

/** A number of minutes as the form shows it ("5", "1.5"). */
const minutesText = (value: unknown, fallback: string) => {
  const s = durationSeconds(value);
  return s === null ? fallback : String(Math.round((s / 60) * 1000) / 1000);
};

/** The duration the document gets for minutes typed in the form: `5m`; anything else as
 * typed, so the API names the problem. */
function duration(minutes: string): string {
  const t = minutes.trim();
  return /^\d+(\.\d+)?$/.test(t) ? `${t}m` : t;
}

/** A whole number typed in the form as a number; anything else as typed (the API says why). */
function count(text: string): number | string {
  const t = text.trim();
  return /^\d+$/.test(t) ? Number(t) : t;
}

const ruleOn = (v: unknown) => v === true || (v !== null && typeof v === "object" && (v as Doc).enabled !== false);
const ruleOff = (v: unknown) => v === false || (v !== null && typeof v === "object" && (v as Doc).enabled === false);
const rest = (o: Doc, known: string[]) => Object.fromEntries(Object.entries(o).filter(([k]) => !known.includes(k)));

/** The draft a stored `alerts:` section describes (secrets stay `***`: the server keeps them). */
export function alertsFromDocument(section: Doc | null | undefined): AlertsDraft {
  const a = emptyAlerts();
  if (!section || typeof section !== "object") return a;
  const rule = (v: unknown): Doc => (v && typeof v === "object" ? (v as Doc) : {});
  a.failed = ruleOn(section.failed);
  a.retrying = { on: ruleOn(section.retrying), minutes: minutesText(rule(section.retrying).longer_than, a.retrying.minutes) };
  const lag = rule(section.lag);
  a.lag = { on: ruleOn(section.lag), above: lag.above != null ? String(lag.above) : a.lag.above, minutes: minutesText(lag.longer_than, "0") };
  const dlq = rule(section.dlq_growth);
  a.dlq = { on: ruleOn(section.dlq_growth), by: dlq.by != null ? String(dlq.by) : "1", minutes: minutesText(dlq.within, a.dlq.minutes) };
  a.off = ["failed", "retrying", "lag", "dlq_growth"].filter((c) => ruleOff(section[c]));
  a.webhooks = ((section.webhooks ?? []) as Doc[]).map((w) => ({
    url: String(w.url ?? ""), secret: String(w.secret ?? ""), extra: rest(w, ["url", "secret"]),
  }));
  a.slack = ((section.slack ?? []) as Doc[]).map((s) => ({ url: String(s.webhook_url ?? ""), extra: rest(s, ["webhook_url"]) }));
  a.email = ((section.email ?? []) as Doc[]).map((e) => ({
    host: String(e.host ?? ""), port: e.port != null ? String(e.port) : "587",
    security: (["starttls", "ssl", "none"].includes(e.security) ? e.security : "starttls") as EmailDraft["security"],
    from: String(e.from ?? ""), to: (Array.isArray(e.to) ? e.to : e.to ? [e.to] : []).join(", "),
    username: String(e.username ?? ""), password: e.password != null ? String(e.password) : "",
    extra: rest(e, ["host", "port", "security", "from", "to", "username", "password"]),
  }));
  return a;
}

/** The document's `alerts:` section for the draft (config/alerts.py's shape), or null. */
export function alertsSection(a: AlertsDraft): Doc | null {
  if (!hasAlerts(a)) return null;
  const out: Doc = {};
  const off = (c: string) => { if (a.off.includes(c)) out[c] = false; };
  if (a.failed) out.failed = true; else off("failed");
  if (a.retrying.on) out.retrying = { longer_than: duration(a.retrying.minutes) }; else off("retrying");
  if (a.lag.on) out.lag = { above: count(a.lag.above), longer_than: duration(a.lag.minutes) }; else off("lag");
  if (a.dlq.on) out.dlq_growth = { by: count(a.dlq.by), within: duration(a.dlq.minutes) }; else off("dlq_growth");
  if (a.webhooks.length) out.webhooks = a.webhooks.map((w) => ({ url: w.url.trim(), secret: w.secret, ...w.extra }));
  if (a.slack.length) out.slack = a.slack.map((s) => ({ webhook_url: s.url.trim(), ...s.extra }));
  if (a.email.length) {
    out.email = a.email.map((e) => {
      const mail: Doc = {
        host: e.host.trim(), port: count(e.port), security: e.security, from: e.from.trim(),
        to: e.to.split(",").map((t) => t.trim()).filter(Boolean),
      };
      if (e.username.trim() || e.password) { mail.username = e.username.trim(); mail.password = e.password; }
      return { ...mail, ...e.extra };
    });
  }
  return out;
}

// ---------------------------------------------------------------- in words

const plural = (n: number, unit: string) => `${n} ${unit}${n === 1 ? "" : "s"}`;

/** A duration in words: "5 minutes", "1 hour 30 minutes", "45 seconds". */
export function durationWords(value: unknown, fallback: string): string {
  const total = durationSeconds(value);
  if (total === null) return value == null ? fallback : String(value);
  if (total === 0) return "0 seconds";
  const parts: string[] = [];
  let left = Math.round(total * 1000) / 1000;
  for (const [unit, size] of [["day", 86400], ["hour", 3600], ["minute", 60]] as const) {
    const n = Math.floor(left / size);
    if (n) { parts.push(plural(n, unit)); left -= n * size; }
  }
  if (left) parts.push(plural(Math.round(left * 1000) / 1000, "second"));
  return parts.join(" ");
}

const number = (v: unknown) => (typeof v === "number" ? v.toLocaleString("en") : String(v));

function host(url: unknown): string | null {
  try {
    return new URL(String(url)).host || null;
  } catch {
    return null;
  }
}

const list = (xs: string[]) => (xs.length <= 1 ? xs.join("") : `${xs.slice(0, -1).join(", ")} and ${xs.at(-1)}`);

/** The channels of a section in words: "webhook hooks.example.com", "Slack", "e-mail to a@b via smtp.example.com:587". */
export function channelWords(section: Doc): string[] {
  const out: string[] = [];
  for (const w of (section.webhooks ?? []) as Doc[]) out.push(`webhook ${host(w.url) ?? "(no URL yet)"}`);
  for (const s of (section.slack ?? []) as Doc[]) {
    const h = s.webhook_url && s.webhook_url !== "***" ? host(s.webhook_url) : null;
    out.push(h ? `Slack ${h}` : "Slack");
  }
  for (const e of (section.email ?? []) as Doc[]) {
    const to = Array.isArray(e.to) ? e.to.join(", ") : String(e.to ?? "");
    out.push(`e-mail to ${to || "(nobody yet)"} via ${e.host || "(no server yet)"}:${e.port ?? 587}`);
  }
  return out;
}

/** The rules of an `alerts:` section in words, one sentence each (none when it sets nothing). */
export function alertSentences(section: Doc | null | undefined): string[] {
  if (!section || typeof section !== "object") return [];
  const channels = channelWords(section);
  const via = channels.length
    ? `, via ${list(channels)}`
    : " (no channel of its own: only the server's --alerts channels hear of it)";
  const out: string[] = [];
  const rule = (v: unknown): Doc => (v && typeof v === "object" ? (v as Doc) : {});
  if (ruleOn(section.failed)) out.push(`Alerts when it has Failed${via}.`);
  if (ruleOn(section.retrying))
    out.push(`Alerts when it has been Retrying for more than ${durationWords(rule(section.retrying).longer_than, "5 minutes")}${via}.`);
  if (ruleOn(section.lag)) {
    const lag = rule(section.lag);
    const long = durationSeconds(lag.longer_than ?? 0);
    out.push(`Alerts when its lag is above ${number(lag.above)} messages${long ? ` for ${durationWords(lag.longer_than, "")}` : ""}${via}.`);
  }
  if (ruleOn(section.dlq_growth)) {
    const dlq = rule(section.dlq_growth);
    const by = dlq.by ?? 1;
    out.push(`Alerts when ${by === 1 ? "a dead letter arrives" : `its dead letters grow by ${number(by)} or more`} within ${durationWords(dlq.within, "10 minutes")}${via}.`);
  }
  const off = ["failed", "retrying", "lag", "dlq_growth"].filter((c) => ruleOff(section[c]));
  const names: Record<string, string> = { failed: "Failed", retrying: "Retrying", lag: "lag", dlq_growth: "dead-letter growth" };
  if (off.length) out.push(`No alert on ${list(off.map((c) => names[c]))} for this pipeline, even if the server's --alerts file has such a rule.`);
  if (!out.length && channels.length)
    out.push(`Tells ${list(channels)} of the alerts the server's --alerts rules raise (sets no condition of its own).`);
  return out;
}
