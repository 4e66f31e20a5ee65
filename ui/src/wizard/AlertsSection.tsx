// The review step's alerts (optional, folded away until opened): the conditions that alert
// and the channels that hear of them, written as the document's `alerts:` section
// (config/alerts.py; docs/operations.md "Alerts"). Every check is the API's, each message next
// to its field once that field was changed; stored secrets stay *** unless typed again.
import { useState } from "preact/hooks";
import { Field, Message, described } from "../components/ui";
import { emptyEmail, emptySlack, emptyWebhook, hasAlerts, type AlertsDraft } from "./alerts";
import type { Draft, StepProps } from "./draft";

const MASK = "***";
const KEPT = "stored by the server: leave *** to keep it, or type a new one";

type Kind = "webhooks" | "slack" | "email";

/** Remove channel `index` of `kind`; a later channel's *** moves to another place, where the
 * server would put the removed one's secret back: it is cleared, to be typed again. */
function removeChannel(d: Draft, kind: Kind, index: number) {
  const list = d.alerts[kind] as any[];
  list.splice(index, 1);
  for (const c of list.slice(index)) {
    if (kind === "webhooks" && c.secret === MASK) c.secret = "";
    if (kind === "slack" && c.url === MASK) c.url = "";
    if (kind === "email" && c.password === MASK) c.password = "";
  }
}

// Checkboxes and the select change the draft on "input", which comes before "change": the
// form's touch (on "input") re-renders, and a change not yet in the draft would be undone.
export function AlertsSection({ draft, update, err }: StepProps) {
  const a = draft.alerts;
  const [open, setOpen] = useState(hasAlerts(a));
  const set = (change: (x: AlertsDraft) => void) => update((d) => change(d.alerts));

  const text = (id: string, label: string, path: string, value: string, onValue: (v: string) => void,
    opts: { type?: string; help?: string; inputMode?: "numeric" | "decimal"; placeholder?: string } = {}) => {
    const e = err(path);
    return (
      <Field id={id} label={label} error={e} help={opts.help}>
        <input {...described(id, e, Boolean(opts.help))} data-problem-path={path} type={(opts.type ?? "text") as "text"}
          value={value} spellcheck={false} autoComplete="off" inputMode={opts.inputMode} placeholder={opts.placeholder}
          onInput={(ev) => onValue(ev.currentTarget.value)} />
      </Field>
    );
  };
  const check = (id: string, label: string, path: string, on: boolean, onValue: (v: boolean) => void) => (
    <div class="check">
      <input id={id} type="checkbox" data-problem-path={path} checked={on} onInput={(e) => onValue(e.currentTarget.checked)} />
      <label for={id}>{label}</label>
    </div>
  );
  const secretHelp = (value: string, help: string) => (value === MASK ? KEPT : help);

  return (
    <section class="alerts-section" aria-labelledby="alerts-toggle-title">
      <h3 id="alerts-toggle-title">Alerts (optional)</h3>
      <p class="muted">
        {hasAlerts(a) ? "This pipeline has alert rules of its own (below, and in its summary)." : "No alert rules of its own: the server's --alerts file, if any, still applies."}
      </p>
      <div class="buttons">
        <button type="button" aria-expanded={open} aria-controls="alerts-section" onClick={() => setOpen(!open)}>
          {open ? "Hide the alert settings" : "Set alerts"}
        </button>
      </div>
      <div id="alerts-section" hidden={!open} data-testid="alerts-section">
        <fieldset>
          <legend>Alert when</legend>
          {check("alert-failed", "the pipeline has Failed", "alerts.failed", a.failed, (v) => set((x) => { x.failed = v; }))}
          {check("alert-retrying", "it has been Retrying for a while", "alerts.retrying", a.retrying.on, (v) => set((x) => { x.retrying.on = v; }))}
          {a.retrying.on && (
            <div class="row">
              {text("alert-retrying-minutes", "Retrying for more than (minutes)", "alerts.retrying.longer_than", a.retrying.minutes,
                (v) => set((x) => { x.retrying.minutes = v; }), { inputMode: "decimal" })}
            </div>
          )}
          {check("alert-lag", "its lag stays high (messages in Kafka not yet read)", "alerts.lag", a.lag.on, (v) => set((x) => { x.lag.on = v; }))}
          {a.lag.on && (
            <div class="row">
              {text("alert-lag-above", "Lag above (messages)", "alerts.lag.above", a.lag.above, (v) => set((x) => { x.lag.above = v; }), { inputMode: "numeric" })}
              {text("alert-lag-minutes", "For at least (minutes)", "alerts.lag.longer_than", a.lag.minutes, (v) => set((x) => { x.lag.minutes = v; }), { inputMode: "decimal" })}
            </div>
          )}
          {check("alert-dlq", "dead letters keep arriving", "alerts.dlq_growth", a.dlq.on, (v) => set((x) => { x.dlq.on = v; }))}
          {a.dlq.on && (
            <div class="row">
              {text("alert-dlq-by", "Dead letters grew by at least", "alerts.dlq_growth.by", a.dlq.by, (v) => set((x) => { x.dlq.by = v; }), { inputMode: "numeric" })}
              {text("alert-dlq-minutes", "Within (minutes)", "alerts.dlq_growth.within", a.dlq.minutes, (v) => set((x) => { x.dlq.minutes = v; }), { inputMode: "decimal" })}
            </div>
          )}
          {a.off.length > 0 && (
            <p class="muted">Not ticked and turned off in the stored definition ({a.off.join(", ")}): the server's rule for it stays off for this pipeline.</p>
          )}
        </fieldset>

        <fieldset>
          <legend>Webhooks</legend>
          <p class="muted">A JSON POST per alert and per resolution, signed with HMAC-SHA256 by the secret (header X-Streamsift-Signature).</p>
          {a.webhooks.map((w, i) => (
            <div class="row" key={`webhook-${i}`}>
              {text(`alert-webhook-${i}-url`, `Webhook ${i + 1} URL`, `alerts.webhooks[${i}].url`, w.url,
                (v) => set((x) => { x.webhooks[i].url = v; }), { type: "url", placeholder: "https://ops.example.com/hooks/streamsift" })}
              {text(`alert-webhook-${i}-secret`, `Webhook ${i + 1} signing secret`, `alerts.webhooks[${i}].secret`, w.secret,
                (v) => set((x) => { x.webhooks[i].secret = v; }), { type: "password", help: secretHelp(w.secret, "a long random string; the receiver checks the signature with it") })}
              <button type="button" class="remove" aria-label={`remove webhook ${i + 1}`}
                onClick={() => update((d) => removeChannel(d, "webhooks", i))}>Remove</button>
            </div>
          ))}
          <button type="button" onClick={() => set((x) => { x.webhooks.push(emptyWebhook()); })}>Add a webhook</button>
        </fieldset>

        <fieldset>
          <legend>Slack</legend>
          {a.slack.map((s, i) => (
            <div class="row" key={`slack-${i}`}>
              {text(`alert-slack-${i}-url`, `Slack ${i + 1} incoming-webhook URL`, `alerts.slack[${i}].webhook_url`, s.url,
                (v) => set((x) => { x.slack[i].url = v; }), { type: "password", help: secretHelp(s.url, "https://hooks.slack.com/services/…: a secret in itself, never shown again") })}
              <button type="button" class="remove" aria-label={`remove Slack channel ${i + 1}`}
                onClick={() => update((d) => removeChannel(d, "slack", i))}>Remove</button>
            </div>
          ))}
          <button type="button" onClick={() => set((x) => { x.slack.push(emptySlack()); })}>Add a Slack channel</button>
        </fieldset>

        <fieldset>
          <legend>E-mail</legend>
          {a.email.map((m, i) => {
            const base = `alerts.email[${i}]`;
            const group = err(`${base}:`);
            return (
              <div class="row" key={`email-${i}`}>
                {text(`alert-email-${i}-host`, `E-mail ${i + 1} SMTP host`, `${base}.host`, m.host, (v) => set((x) => { x.email[i].host = v; }), { placeholder: "smtp.example.com" })}
                {text(`alert-email-${i}-port`, `E-mail ${i + 1} SMTP port`, `${base}.port`, m.port, (v) => set((x) => { x.email[i].port = v; }), { inputMode: "numeric" })}
                <Field id={`alert-email-${i}-security`} label={`E-mail ${i + 1} encryption`} error={err(`${base}.security`)}>
                  <select {...described(`alert-email-${i}-security`, err(`${base}.security`))} data-problem-path={`${base}.security`} value={m.security}
                    onInput={(e) => set((x) => { x.email[i].security = e.currentTarget.value as any; })}>
                    <option value="starttls">STARTTLS (usually port 587)</option>
                    <option value="ssl">TLS from the start (usually port 465)</option>
                    <option value="none">None (no login possible)</option>
                  </select>
                </Field>
                {text(`alert-email-${i}-from`, `E-mail ${i + 1} from`, `${base}.from`, m.from, (v) => set((x) => { x.email[i].from = v; }), { type: "email", placeholder: "streamsift@example.com" })}
                {text(`alert-email-${i}-to`, `E-mail ${i + 1} to (comma-separated)`, `${base}.to`, m.to, (v) => set((x) => { x.email[i].to = v; }), { placeholder: "oncall@example.com" })}
                {text(`alert-email-${i}-username`, `E-mail ${i + 1} SMTP user (optional)`, `${base}.username`, m.username, (v) => set((x) => { x.email[i].username = v; }))}
                {text(`alert-email-${i}-password`, `E-mail ${i + 1} SMTP password (optional)`, `${base}.password`, m.password,
                  (v) => set((x) => { x.email[i].password = v; }), { type: "password", help: secretHelp(m.password, "with the user, to log in; kept encrypted by the server") })}
                {group && <Message kind="error">{group}</Message>}
                <button type="button" class="remove" aria-label={`remove e-mail ${i + 1}`}
                  onClick={() => update((d) => removeChannel(d, "email", i))}>Remove</button>
              </div>
            );
          })}
          <button type="button" onClick={() => set((x) => { x.email.push(emptyEmail()); })}>Add an e-mail channel</button>
        </fieldset>
        {hasAlerts(a) && !a.webhooks.length && !a.slack.length && !a.email.length && (
          <p class="muted" data-testid="alerts-no-channel">No channel of its own: only the server's --alerts channels (if any) hear of these alerts.</p>
        )}
      </div>
    </section>
  );
}
