// Wizard step 5: where rows go. The embedded ClickHouse (default) or a server (with Test
// connection); a new table from the mapping (names and types editable, defaults per field
// type) or an existing table's columns, each fed by a field (the API warns when a field's
// type does not fit its column).
import { useEffect, useState } from "preact/hooks";
import { api } from "../api";
import { Field, Message, described, errorWords } from "../components/ui";
import { clickhouseConnection, columnName, mappableFields, syncedMapping } from "./draft";
import type { StepProps } from "./draft";

const CH_TYPES = [
  "String", "LowCardinality(String)", "Int32", "Int64", "UInt64", "Float64", "Decimal(18, 4)", "Bool",
  "Date", "DateTime", "DateTime64(3, 'UTC')", "UUID", "Array(String)", "Map(String, String)",
  "Nullable(String)", "Nullable(Int64)", "Nullable(Float64)",
];

export function ClickHouseStep({ draft, update, err }: StepProps) {
  const c = draft.ch;
  const [result, setResult] = useState<{ ok: boolean; text: string } | null>(null);
  const [tables, setTables] = useState<string[]>([]);
  const [busy, setBusy] = useState(false);
  const [orderText, setOrderText] = useState<string | null>(null); // as typed (commas and all)

  useEffect(() => {
    if (draft.tableMode === "create") {
      update((d) => {
        d.mapping = syncedMapping(d);
        if (d.orderBy.length && d.orderBy.every((c) => d.mapping.some((m) => m.column === c))) return; // kept (an edit)
        if (d.dedup.enabled && d.dedup.mode !== "exact" && d.dedup.key.length) {
          const columns = d.dedup.key.map((k) => d.mapping.find((m) => m.field === k)?.column);
          d.orderBy = columns.every(Boolean) ? (columns as string[]) : [];
        } else d.orderBy = [];
      });
    }
  }, []);

  const test = async () => {
    setBusy(true);
    setResult(null);
    try {
      // as deploy would meet it: a directory deploy creates, one this server shares, or a probe
      const r = await api.clickhouseCheck(clickhouseConnection(draft));
      setTables(r.tables);
      setResult({ ok: r.ok, text: r.message });
    } catch (e) {
      setResult({ ok: false, text: `Could not connect: ${errorWords(e)}` });
    } finally {
      setBusy(false);
    }
  };
  const loadColumns = async () => {
    setBusy(true);
    setResult(null);
    try {
      const columns = await api.clickhouseColumns(clickhouseConnection(draft), draft.table);
      const fields = mappableFields(draft);
      update((d) => {
        d.mapping = columns.map((col) => ({
          column: col.name,
          type: col.type,
          field: fields.find((f) => columnName(f.name) === col.name || f.name === col.name)?.name ?? "",
        }));
      });
      setResult({ ok: true, text: `${columns.length} column(s) of ${draft.table} loaded: pick the field for each.` });
    } catch (e) {
      setResult({ ok: false, text: `Could not read the table's columns: ${errorWords(e)}` });
    } finally {
      setBusy(false);
    }
  };
  const setMode = (mode: "create" | "existing") => update((d) => {
    d.tableMode = mode;
    d.mapping = mode === "create" ? syncedMapping({ ...d, mapping: [] }) : [];
  });
  const input = (key: "path" | "host" | "port" | "username" | "password" | "database", label: string, type: "text" | "password" = "text", help?: string) => {
    const path = `sink.clickhouse.${key}`;
    return (
      <Field id={`ch-${key}`} label={label} error={err(path)} help={help}>
        <input {...described(`ch-${key}`, err(path), !!help)} data-problem-path={path} type={type as "text"} value={c[key]}
          autoComplete="off" spellcheck={false}
          onInput={(e) => update((d) => { d.ch[key] = e.currentTarget.value; })} />
      </Field>
    );
  };
  const fields = mappableFields(draft);
  let docIndex = -1;
  return (
    <>
      <fieldset>
        <legend>ClickHouse</legend>
        <div class="radio">
          <input type="radio" id="ch-embedded" name="ch-kind" checked={c.kind === "embedded"}
            onChange={() => update((d) => { d.ch.kind = "embedded"; })} />
          <label for="ch-embedded">Embedded (chdb, inside streamsift)</label>
        </div>
        <div class="radio">
          <input type="radio" id="ch-server" name="ch-kind" checked={c.kind === "server"}
            onChange={() => update((d) => {
              d.ch.kind = "server";
              // the server this server's pipelines already write to, when nothing was typed
              const known = d.known.servers?.[0];
              if (known && !d.ch.host) {
                Object.assign(d.ch, { host: known.host, port: known.port ? String(known.port) : d.ch.port,
                  database: known.database, username: known.username, secure: known.secure });
              }
            })} />
          <label for="ch-server">A ClickHouse server (HTTP port)</label>
        </div>
      </fieldset>
      {c.kind === "embedded" ? (
        input("path", "Data directory", "text", "on the server's machine: a relative path is inside the server's data directory")
      ) : (
        <>
          {input("host", "Host")}
          {input("port", "HTTP port", "text", "8123, or 8443 with HTTPS")}
          {input("username", "User name")}
          {input("password", "Password", "password", "kept encrypted by the server, never shown again")}
          {input("database", "Database")}
          <div class="check">
            <input id="ch-secure" type="checkbox" checked={c.secure} onChange={(e) => update((d) => { d.ch.secure = e.currentTarget.checked; })} />
            <label for="ch-secure">HTTPS</label>
          </div>
        </>
      )}
      <div class="buttons">
        <button type="button" onClick={test} disabled={busy}>Test connection</button>
      </div>
      {result && <Message kind={result.ok ? "ok" : "error"}>{result.text}</Message>}
      <Field id="ch-table" label="Table" error={err("sink.table")} help={tables.length ? `tables there: ${tables.join(", ")}` : undefined}>
        <input {...described("ch-table", err("sink.table"), tables.length > 0)} data-problem-path="sink.table" value={draft.table}
          spellcheck={false} onInput={(e) => update((d) => { d.table = e.currentTarget.value; })} />
      </Field>
      <fieldset>
        <legend>Table</legend>
        <div class="radio">
          <input type="radio" id="table-create" name="table-mode" checked={draft.tableMode === "create"} onChange={() => setMode("create")} />
          <label for="table-create">Create it from the fields (if it does not exist)</label>
        </div>
        <div class="radio">
          <input type="radio" id="table-existing" name="table-mode" checked={draft.tableMode === "existing"} onChange={() => setMode("existing")} />
          <label for="table-existing">Write into an existing table's columns</label>
        </div>
      </fieldset>
      {draft.tableMode === "existing" && (
        <div class="buttons"><button type="button" onClick={loadColumns} disabled={busy || !draft.table}>Load the table's columns</button></div>
      )}
      {draft.mapping.length > 0 && (
        <fieldset class="mapping">
          <legend>Columns</legend>
          {draft.mapping.map((m, i) => {
            if (m.field) docIndex += 1;
            const base = `sink.mapping[${docIndex}]`;
            const columnErr = m.field ? err(`${base}.column`) : null;
            const always = draft.tableMode === "existing"; // the loaded columns' fit, said at once
            const typeErr = m.field ? (err(`${base}.type`, always) ?? err(`${base}.field`, always) ?? err(base, always)) : null;
            return draft.tableMode === "create" ? (
              <div class="row" key={m.field}>
                <div class="field"><span class="label">Field</span><code data-testid="mapping-field">{m.field}</code></div>
                <Field id={`map-${i}-column`} label={`Column for ${m.field}`} error={columnErr}>
                  <input {...described(`map-${i}-column`, columnErr)} data-problem-path={`${base}.column`} value={m.column} spellcheck={false}
                    onInput={(e) => update((d) => { d.mapping[i].column = e.currentTarget.value; })} />
                </Field>
                <Field id={`map-${i}-type`} label={`Type of column ${m.column || m.field}`} error={typeErr}>
                  <input {...described(`map-${i}-type`, typeErr)} data-problem-path={`${base}.type`} value={m.type} spellcheck={false}
                    list="ch-types"
                    onInput={(e) => update((d) => { d.mapping[i].type = e.currentTarget.value; })} />
                </Field>
              </div>
            ) : (
              <div class="row" key={m.column}>
                <div class="field"><span class="label">Column</span><code>{m.column}</code> <span class="muted">{m.type}</span></div>
                <Field id={`map-${i}-field`} label={`Field for column ${m.column}`} error={typeErr}>
                  <select {...described(`map-${i}-field`, typeErr)} data-problem-path={`${base}.type`} value={m.field}
                    onChange={(e) => update((d) => { d.mapping[i].field = e.currentTarget.value; })}>
                    <option value="">— not written (its default) —</option>
                    {fields.map((f) => <option key={f.name} value={f.name}>{f.name} ({f.type})</option>)}
                  </select>
                </Field>
              </div>
            );
          })}
          {draft.tableMode === "create" && (
            <Field id="ch-order-by" label="ORDER BY (columns, comma-separated)" error={err("sink.order_by")}
              help="how the table sorts its rows; empty: no order (tuple())">
              <input {...described("ch-order-by", err("sink.order_by"), true)} data-problem-path="sink.order_by" spellcheck={false}
                value={orderText ?? draft.orderBy.join(", ")}
                onInput={(e) => {
                  const text = e.currentTarget.value;
                  setOrderText(text);
                  update((d) => { d.orderBy = text.split(",").map((x) => x.trim()).filter(Boolean); });
                }} />
            </Field>
          )}
          <datalist id="ch-types">{CH_TYPES.map((t) => <option key={t} value={t} />)}</datalist>
          {err("sink:") && <Message kind="error">{err("sink:")}</Message>}
        </fieldset>
      )}
    </>
  );
}
