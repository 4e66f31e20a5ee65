// Wizard steps 1-2: the Kafka connection (with Test connection), then the topic, its sample
// event and the fields inferred from it (editable; nested fields as dot paths).
import { useEffect, useState } from "preact/hooks";
import { api, type Inferred } from "../api";
import { Field, Message, described, errorWords } from "../components/ui";
import { FIELD_TYPES, freeName, kafkaConnection, type Draft } from "./draft";
import type { StepProps } from "./draft";

const PROTOCOLS = ["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"];
const MECHANISMS = ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"];

export function KafkaStep({ draft, update, err }: StepProps) {
  const k = draft.kafka;
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const [busy, setBusy] = useState(false);
  const sasl = k.protocol.startsWith("SASL_");
  const ssl = k.protocol.endsWith("SSL");
  const test = async () => {
    setBusy(true);
    setResult(null);
    try {
      const r = await api.kafkaTest(kafkaConnection(draft));
      update((d) => { d.topics = r.topics; });
      setResult({ ok: true, text: `Connected: ${r.brokers.length} broker(s) (${r.brokers.join(", ")}), ${r.topics.length} topic(s).` });
    } catch (e) {
      setResult({ ok: false, text: `Could not connect: ${errorWords(e)}` });
    } finally {
      setBusy(false);
    }
  };
  const text = (key: keyof Draft["kafka"], label: string, path: string, type: "text" | "password" = "text", help?: string) => (
    <Field id={`kafka-${key}`} label={label} error={err(path)} help={help}>
      <input {...described(`kafka-${key}`, err(path), !!help)} data-problem-path={path} type={type as "text"}
        value={k[key]} autoComplete="off" spellcheck={false}
        onInput={(e) => update((d) => { (d.kafka as any)[key] = e.currentTarget.value; })} />
    </Field>
  );
  return (
    <>
      {text("bootstrap_servers", "Bootstrap servers", "source.bootstrap_servers", "text", "host:port, comma-separated for several brokers")}
      <Field id="kafka-protocol" label="Security protocol" error={err("source.security.protocol")}>
        <select {...described("kafka-protocol", err("source.security.protocol"))} data-problem-path="source.security.protocol"
          value={k.protocol} onChange={(e) => update((d) => { d.kafka.protocol = e.currentTarget.value; })}>
          {PROTOCOLS.map((p) => <option key={p} value={p}>{p}</option>)}
        </select>
      </Field>
      {sasl && (
        <>
          <Field id="kafka-mechanism" label="SASL mechanism" error={err("source.security.mechanism")}>
            <select {...described("kafka-mechanism", err("source.security.mechanism"))} data-problem-path="source.security.mechanism"
              value={k.mechanism} onChange={(e) => update((d) => { d.kafka.mechanism = e.currentTarget.value; })}>
              {MECHANISMS.map((m) => <option key={m} value={m}>{m}</option>)}
            </select>
          </Field>
          {text("username", "User name", "source.security.username")}
          {text("password", "Password", "source.security.password", "password", "kept encrypted by the server, never shown again")}
        </>
      )}
      {ssl && text("ca_file", "CA certificates file (PEM, on the server)", "source.security.ca_file", "text", "leave empty to use the system's CAs")}
      <div class="buttons">
        <button type="button" onClick={test} disabled={busy}>{busy ? "Testing…" : "Test connection"}</button>
      </div>
      {result && <Message kind={result.ok ? "ok" : "error"}>{result.text}</Message>}
    </>
  );
}

/** The parts of a source the topic picker fills: the draft itself (left source) or
 * a join step's topic (`draft.join.right`, `draft.join.more[k].right`). */
export interface SourceLike {
  topic: string;
  samples: Record<string, unknown>[];
  fields: { name: string; type: string }[];
  nullable: string[];
  eventTime: string;
}

/** Pick a topic, fetch its sample events, infer the fields; edit them, pick the event time. */
export function SourcePicker(props: StepProps & {
  select: (d: Draft) => SourceLike;
  idPrefix: string; // "" for the first source, "right-" for the joined one
  pathPrefix: string; // "source", "right" or "join[k].source": where its problems are reported
  who?: string; // how a joined topic's labels name it ("Second topic", "Topic 3")
  onSampled?: (d: Draft, inferred: Inferred, topic: string) => void;
}) {
  const { draft, update, err, select, idPrefix: ip, pathPrefix: pp } = props;
  const who = ip ? props.who ?? "Second topic" : null;
  const src = select(draft);
  const [loading, setLoading] = useState<string | null>(null);
  const [problem, setProblem] = useState<string | null>(null);
  const [shown, setShown] = useState(0);

  const loadTopics = async () => {
    setLoading("Loading topics…");
    setProblem(null);
    try {
      const r = await api.kafkaTest(kafkaConnection(draft));
      update((d) => { d.topics = r.topics; });
    } catch (e) {
      setProblem(`Could not list the topics: ${errorWords(e)}`);
    } finally {
      setLoading(null);
    }
  };
  useEffect(() => { if (!draft.topics.length) loadTopics(); }, []);

  const pick = async (topic: string) => {
    update((d) => { select(d).topic = topic; });
    if (!topic) return;
    setLoading(`Fetching sample events of ${topic}…`);
    setProblem(null);
    try {
      const sample = await api.sample(kafkaConnection(draft), topic, 20);
      const values = sample.messages.filter((m) => !m.error && m.value && typeof m.value === "object" && !Array.isArray(m.value))
        .map((m) => m.value as Record<string, unknown>);
      if (!values.length) {
        update((d) => { select(d).topic = topic; select(d).samples = []; });
        setProblem(sample.messages.length
          ? `None of the first ${sample.messages.length} messages of ${topic} is a JSON object: add the fields by hand.`
          : `${topic} has no messages yet: add the fields by hand, or produce an event and pick the topic again.`);
        return;
      }
      const inferred = await api.infer(values);
      setShown(0);
      update((d) => {
        const s = select(d);
        s.topic = topic;
        s.samples = values;
        s.fields = inferred.fields.map((f) => ({ name: f.name, type: f.type }));
        s.nullable = inferred.fields.filter((f) => f.nullable).map((f) => f.name);
        const time = inferred.event_time_candidates.find((c) => c.kind !== "epoch_millis");
        s.eventTime = time ? time.name : "";
        props.onSampled?.(d, inferred, topic);
      });
    } catch (e) {
      setProblem(`Could not read ${topic}: ${errorWords(e)}`);
    } finally {
      setLoading(null);
    }
  };

  const timeFields = src.fields.filter((f) => ["timestamp", "int", "float"].includes(f.type));
  const sample = src.samples[shown];
  const timeErr = err(`${pp}.schema.event_time`) ?? err(`${pp}.schema: event_time`);
  return (
    <>
      <div class="inline">
        <Field id={`${ip}topic`} label={who ?? "Topic"} error={err(`${pp}.topic`)}>
          <select {...described(`${ip}topic`, err(`${pp}.topic`))} data-problem-path={`${pp}.topic`} value={src.topic}
            onChange={(e) => pick(e.currentTarget.value)}>
            <option value="">— pick a topic —</option>
            {draft.topics.map((t) => <option key={t.name} value={t.name}>{t.name} ({t.partitions} partition{t.partitions === 1 ? "" : "s"})</option>)}
          </select>
        </Field>
        <button type="button" onClick={loadTopics}>Refresh topics</button>
      </div>
      {loading && <Message kind="info">{loading}</Message>}
      {problem && <Message kind="error">{problem}</Message>}
      {sample && (
        <div class="sample">
          <div class="title-row">
            <h3 id={`${ip}sample-title`}>Sample event {shown + 1} of {src.samples.length}</h3>
            <div class="buttons">
              <button type="button" disabled={shown === 0} onClick={() => setShown(shown - 1)}>Previous event</button>
              <button type="button" disabled={shown >= src.samples.length - 1} onClick={() => setShown(shown + 1)}>Next event</button>
            </div>
          </div>
          <pre aria-labelledby={`${ip}sample-title`} tabIndex={0} data-testid={`${ip}sample-event`}>{JSON.stringify(sample, null, 2)}</pre>
        </div>
      )}
      {src.topic && (
        <fieldset>
          <legend>Fields (nested fields as dot paths, e.g. user.id)</legend>
          {src.fields.map((f, i) => {
            const base = `${pp}.schema.fields[${i}]`;
            const nameErr = err(`${base}.name`) ?? err(base);
            const typeErr = err(`${base}.type`);
            const label = `${who ? `${who}'s field` : "Field"} ${i + 1}`;
            return (
              <div class="row" key={i}>
                <Field id={`${ip}field-${i}-name`} label={`${label} name`} error={nameErr}>
                  <input {...described(`${ip}field-${i}-name`, nameErr)} data-problem-path={`${base}.name`}
                    value={f.name} spellcheck={false}
                    onInput={(e) => update((d) => { select(d).fields[i].name = e.currentTarget.value; })} />
                </Field>
                <Field id={`${ip}field-${i}-type`} label={`${label} type`} error={typeErr}>
                  <select {...described(`${ip}field-${i}-type`, typeErr)} data-problem-path={`${base}.type`}
                    value={f.type} onChange={(e) => update((d) => { select(d).fields[i].type = e.currentTarget.value; })}>
                    {FIELD_TYPES.map((t) => <option key={t} value={t}>{t}</option>)}
                  </select>
                </Field>
                <button type="button" class="remove" aria-label={`remove ${who ? `${who.toLowerCase()}'s ` : ""}field ${f.name || i + 1}`}
                  onClick={() => update((d) => { select(d).fields.splice(i, 1); })}>Remove</button>
              </div>
            );
          })}
          <button type="button" onClick={() => update((d) => { select(d).fields.push({ name: "", type: "string" }); })}>Add a field</button>
          {err(`${pp}.schema.fields`) && <Message kind="error">{err(`${pp}.schema.fields`)}</Message>}
        </fieldset>
      )}
      {src.topic && (
        <Field id={`${ip}event-time`} label={who ? `${who}'s event time field` : "Event time field"} error={timeErr}
          help="Windows run on it. Without one, the Kafka message timestamp is used.">
          <select {...described(`${ip}event-time`, timeErr, true)} data-problem-path={`${pp}.schema`} value={src.eventTime}
            onChange={(e) => update((d) => { select(d).eventTime = e.currentTarget.value; })}>
            <option value="">the Kafka message timestamp</option>
            {timeFields.map((f) => <option key={f.name} value={f.name}>{f.name} ({f.type})</option>)}
          </select>
        </Field>
      )}
    </>
  );
}

/** A likely dedup key: a field unique in the sample, else an id-like one (a topic that
 * needs dedup holds repeats, so its sample may show no unique field). */
export function likelyKey(inferred: Inferred): string[] {
  const idLike = inferred.fields.find((f) => ["string", "int"].includes(f.type) && /(^|[._])id$/i.test(f.name));
  const key = inferred.dedup_key_candidates.slice(0, 1);
  return key.length ? key : idLike ? [idLike.name] : [];
}

export function TopicStep(props: StepProps) {
  const { draft, update, err } = props;
  return (
    <>
      <SourcePicker {...props} select={(d) => d} idPrefix="" pathPrefix="source"
        onSampled={(d, inferred, topic) => {
          d.dedup.key = likelyKey(inferred);
          d.mapping = [];
          // defaults that collide with nothing this server has (the demo's table, say)
          if (!d.table) d.table = freeName(topic.replace(/[^A-Za-z0-9_]/g, "_"), d.known.tables);
          if (!d.name) d.name = freeName(`${topic.replace(/[^A-Za-z0-9_-]/g, "-")}-pipeline`.replace(/^[^A-Za-z0-9]+/, ""), d.known.names, "-");
        }} />
      <Field id="start-from" label="Start from" error={err("source.start_from")}>
        <select {...described("start-from")} value={draft.startFrom}
          onChange={(e) => update((d) => { d.startFrom = e.currentTarget.value as "earliest" | "latest"; })}>
          <option value="earliest">earliest: the oldest message still in the topic</option>
          <option value="latest">latest: only messages produced after the start</option>
        </select>
      </Field>
    </>
  );
}
