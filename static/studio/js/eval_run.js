// An eval run's page: the cases the page came with, then the eval's websocket
// (/ws/evals/<id>/): a snapshot on connect and after every reconnect, then each case
// result as it changes and the eval's status, so the progress bar and the rows fill in
// live. Reconnects with backoff through lib/live.js's socket.
import { api, ApiError } from "./lib/api.js";
import { readJsonScript } from "./lib/dom.js";
import { EvalResults, percent } from "./lib/eval_view.js";
import { SessionSocket, showConnection, wsUrl } from "./lib/live.js";
import { confirmDialog, formatCost, toast } from "./lib/ui.js";

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

  _frame(frame) {
    this.handlers.onEvent?.(frame);
  }
}

const data = readJsonScript("eval-data");
let run = data.run;
const view = new EvalResults(document.getElementById("cases"), { sessionUrl: data.urls.session, repeats: run.repeats });
const cancel = document.getElementById("cancel-eval");
const status = document.getElementById("eval-status");

// An eval that ran every case "finished", in a plain badge: its pass rate says how it
// went (studio.models.evals.EvalStatus).
const FINISHED = "succeeded";

function showRun() {
  status.className = run.status === FINISHED ? "badge" : `badge ${run.status}`;
  status.textContent = run.status === FINISHED ? "finished" : run.status;
  cancel.hidden = !ACTIVE.has(run.status);
  const problem = document.getElementById("eval-error");
  problem.textContent = run.error_message || "";
  problem.hidden = !run.error_message || Boolean(document.querySelector('[data-testid="eval-error"]'));
}

function seconds(value) {
  return value === null || value === undefined ? "—" : `${value.toFixed(2)} s`;
}

// The eval's summary as the server computed it (studio.evals.summary), sent with every frame.
function showFigures() {
  const s = run.summary || {};
  const total = s.total || data.cases * run.repeats;
  const done = s.done || 0;
  const bar = document.getElementById("eval-progress");
  bar.max = Math.max(1, total);
  bar.value = done;
  document.getElementById("eval-count").textContent = `${done} of ${total} finished`;
  document.getElementById("fig-pass-rate").textContent = percent(s.pass_rate ?? null);
  document.getElementById("fig-k").textContent = `pass@${s.pass_at_k?.k ?? run.repeats}`;
  document.getElementById("fig-pass-at-k").textContent = percent(s.pass_at_k?.value ?? null);
  document.getElementById("fig-passed").textContent = `${s.counts?.passed ?? 0}/${s.judged ?? 0}`;
  const cost = s.cost?.total ? formatCost(s.cost.total, "USD", { complete: s.cost.complete !== false }) : "";
  document.getElementById("fig-cost").textContent = cost || "—";
  document.getElementById("fig-p50").textContent = seconds(s.latency_s?.p50);
  document.getElementById("fig-p95").textContent = seconds(s.latency_s?.p95);
  document.getElementById("no-cases").hidden = view.results.size > 0;
}

// {"type": "snapshot" | "update", "eval": {...}, "results": [...]} (studio.consumers.evals):
// a snapshot has every result, an update the changed ones; either replaces by case and repeat.
function onFrame(frame) {
  if (frame.type === "error") return;
  if (frame.eval) run = { ...run, ...frame.eval };
  view.merge(frame.results || []);
  showRun();
  showFigures();
  if (!ACTIVE.has(run.status) && !socket.stopped) finish(frame);
}

// An eval that ended (or was cancelled here) changes no more once its last results are
// in: ask for one more snapshot, which has them all, then let the socket go.
function finish(frame) {
  if (frame.type === "snapshot" || socket.ws?.readyState !== WebSocket.OPEN) {
    socket.stop();
    return;
  }
  socket.ws.send(JSON.stringify({ type: "snapshot" }));
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
    if (body?.status) onFrame({ eval: body });
  } catch (error) {
    toast(error instanceof ApiError ? error.message : String(error), { error: true });
  } finally {
    cancel.disabled = false;
  }
});

document.body.dataset.ready = "eval-run";
