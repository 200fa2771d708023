// An eval run's page: the cases the page came with, then the eval's websocket
// (/ws/evals/<id>/): a snapshot on connect and after every reconnect, then each case
// result as it changes and the eval's status, so the progress bar and the rows fill in
// live. Reconnects with backoff through lib/live.js's socket.
import { api, ApiError } from "./lib/api.js";
import { readJsonScript } from "./lib/dom.js";
import { EvalResults, percent } from "./lib/eval_view.js";
import { SessionSocket, showConnection, wsUrl } from "./lib/live.js";
import { confirmDialog, toast } from "./lib/ui.js";

const ACTIVE = new Set(["queued", "running"]);
const FATAL = {
  4400: "The eval's live request was malformed.",
  4401: "Your sign-in expired. Reload the page to sign in again.",
  4403: "This eval is not yours.",
  4404: "This eval no longer exists.",
};

class EvalSocket extends SessionSocket {
  constructor(url, handlers) {
    super("", handlers);
    this.path = url;
    this.fatal = FATAL;
  }

  _url() {
    return wsUrl(this.path);
  }

  _frame(raw) {
    let frame;
    try {
      frame = JSON.parse(raw);
    } catch {
      return;
    }
    this.handlers.onEvent?.(frame);
  }
}

const data = readJsonScript("eval-data");
let run = data.run;
const view = new EvalResults(document.getElementById("cases"), { sessionUrl: data.urls.session, repeats: run.repeats });
const cancel = document.getElementById("cancel-eval");
const status = document.getElementById("eval-status");

function showRun() {
  status.className = `badge ${run.status}`;
  status.textContent = run.status;
  cancel.hidden = !ACTIVE.has(run.status);
  const problem = document.getElementById("eval-error");
  problem.textContent = run.error_message || "";
  problem.hidden = !run.error_message || Boolean(document.querySelector('[data-testid="eval-error"]'));
}

function showFigures() {
  const f = view.figures(run.cases * run.repeats);
  const bar = document.getElementById("eval-progress");
  bar.max = Math.max(1, f.total);
  bar.value = f.done;
  document.getElementById("eval-count").textContent = `${f.done} of ${f.total} finished`;
  document.getElementById("fig-pass-rate").textContent = percent(f.passRate);
  document.getElementById("fig-pass-at-k").textContent = percent(f.passAtK);
  document.getElementById("fig-passed").textContent = `${f.passed}/${f.done}`;
  document.getElementById("fig-cost").textContent = f.cost || "—";
  document.getElementById("fig-p50").textContent = f.p50 === null ? "—" : `${f.p50.toFixed(2)} s`;
  document.getElementById("fig-p95").textContent = f.p95 === null ? "—" : `${f.p95.toFixed(2)} s`;
  document.getElementById("no-cases").hidden = view.results.size > 0;
}

function onFrame(frame) {
  if (frame.type === "error") return;
  if (frame.eval_run) run = { ...run, ...frame.eval_run };
  const results = [...(frame.results || []), ...(frame.result ? [frame.result] : [])];
  view.merge(results);
  showRun();
  showFigures();
  if (!ACTIVE.has(run.status) && !socket.stopped) socket.stop();
}

view.merge(data.results);
showRun();
showFigures();

// An eval that has ended changes no more: the page has all of it, no socket needed.
const conn = document.getElementById("conn");
const socket = new EvalSocket(data.urls.socket, {
  onEvent: onFrame,
  onState: (state, detail) => (ACTIVE.has(run.status) ? showConnection(conn, state, detail) : showConnection(conn, "idle", "Finished")),
});
if (ACTIVE.has(run.status)) socket.start();
else showConnection(conn, "idle", "Finished");

cancel.addEventListener("click", async () => {
  if (!(await confirmDialog("Cancel this eval? Cases still running stop; finished ones keep their results.", { action: "Cancel eval" }))) return;
  cancel.disabled = true;
  try {
    const body = await api(data.urls.cancel, { method: "POST" });
    if (body?.status) onFrame({ eval_run: body });
  } catch (error) {
    toast(error instanceof ApiError ? error.message : String(error), { error: true });
  } finally {
    cancel.disabled = false;
  }
});

document.body.dataset.ready = "eval-run";
