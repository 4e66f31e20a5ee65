// The single page: a header, then the page the URL's hash names (#/, #/new, #/p/<id>, ...).
import { render } from "preact";
import { useEffect, useState } from "preact/hooks";
import { setToken, setUnauthorizedHandler, tokenAccepted } from "./api";
import { PipelinesPage } from "./pages/PipelinesPage";
import { PipelinePage } from "./pages/PipelinePage";
import { DlqPage } from "./pages/DlqPage";
import { UploadPage } from "./pages/UploadPage";
import { EditPage } from "./pages/EditPage";
import { Wizard } from "./wizard/Wizard";
import "uplot/dist/uPlot.min.css";
import "./styles.css";

function useHash(): string {
  const [hash, setHash] = useState(location.hash || "#/");
  useEffect(() => {
    const update = () => setHash(location.hash || "#/");
    addEventListener("hashchange", update);
    return () => removeEventListener("hashchange", update);
  }, []);
  return hash;
}

function TokenForm({ rejected, onDone }: { rejected: boolean; onDone: () => void }) {
  const [value, setValue] = useState("");
  const [wrong, setWrong] = useState(rejected);
  const [checking, setChecking] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);
  return (
    <form
      class="card token"
      onSubmit={async (e) => {
        e.preventDefault();
        if (!value || checking) return;
        setChecking(true);
        setFailure(null);
        try {
          if (await tokenAccepted(value)) {
            setToken(value);
            onDone();
            return;
          }
          setWrong(true);
          setValue("");
        } catch {
          setFailure("the streamsift server did not answer: is it still running?");
        } finally {
          setChecking(false);
        }
      }}
    >
      <h2>This server needs a token</h2>
      <p>
        It was started with a token (<code>--token</code> or STREAMSIFT_API_TOKEN). It is
        asked once and kept for this tab only.
      </p>
      <label for="token">API token</label>
      <input id="token" type="password" value={value} autoComplete="off" autoFocus
        aria-invalid={wrong} aria-describedby={wrong ? "token-error" : undefined}
        onInput={(e) => setValue(e.currentTarget.value)} />
      {wrong && (
        <p id="token-error" class="message error" role="alert">
          That token is not this server's: try again.
        </p>
      )}
      {failure && <p class="message error" role="alert">{failure}</p>}
      <button type="submit" class="primary" disabled={checking}>Use this token</button>
    </form>
  );
}

function Page({ hash }: { hash: string }) {
  const parts = hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  if (parts[0] === "new") return <Wizard />;
  if (parts[0] === "upload") return <UploadPage />;
  if (parts[0] === "p" && parts[1] && parts[2] === "dlq") return <DlqPage id={parts[1]} />;
  if (parts[0] === "p" && parts[1] && parts[2] === "edit") return <EditPage id={parts[1]} />;
  if (parts[0] === "p" && parts[1] && parts[2] === "wizard") return <Wizard editId={parts[1]} />;
  if (parts[0] === "p" && parts[1]) return <PipelinePage id={parts[1]} />;
  return <PipelinesPage />;
}

function App() {
  const hash = useHash();
  // null: no token asked for; else whether the token this tab had was refused.
  const [needToken, setNeedToken] = useState<boolean | null>(null);
  const [epoch, setEpoch] = useState(0);
  useEffect(
    () => setUnauthorizedHandler((rejected) => setNeedToken((was) => (was ?? false) || rejected)),
    [],
  );
  const current = (prefix: string) =>
    (prefix === "#/" ? hash === "#/" : hash.startsWith(prefix)) ? "page" : undefined;
  return (
    <>
      <header class="top">
        <a class="brand" href="#/">streamsift</a>
        <nav aria-label="main">
          <a href="#/" aria-current={current("#/")}>Pipelines</a>
          <a href="#/new" aria-current={current("#/new")}>New pipeline</a>
          <a href="#/upload" aria-current={current("#/upload")}>Upload</a>
          <a href="/docs">API</a>
        </nav>
      </header>
      <main id="main">
        {needToken !== null ? (
          <TokenForm rejected={needToken}
            onDone={() => { setNeedToken(null); setEpoch((n) => n + 1); }} />
        ) : (
          <Page key={`${hash}:${epoch}`} hash={hash} />
        )}
      </main>
    </>
  );
}

render(<App />, document.getElementById("app")!);
