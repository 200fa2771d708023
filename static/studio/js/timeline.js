// The live timeline of one session. Renders the newest page of events, which comes with
// the page, at once; the websocket continues after the last of them (streaming live
// ones); older pages come in over the REST API. Keeps the run bar, totals and session
// state current.

import { api } from "./lib/api.js";
import { h, pretty, readJsonScript } from "./lib/dom.js";
import { isActiveRun, isExecuting, SessionSocket, showConnection, WAITING_LABELS } from "./lib/live.js";
import { TimelineView } from "./lib/timeline_view.js";
import { openForkForm } from "./lib/fork.js";
import { redrawDatasetCard } from "./lib/dataset_card.js";
import { tallyText } from "./lib/calls.js";
import { costText, runsCost } from "./lib/span_costs.js";
import { formatClock, formatDuration, formatTokens, toast } from "./lib/ui.js";

const MAX_LOADED_EVENTS = 3000; // beyond this the oldest invocations are unloaded again
const MAX_INBOX = 500; // frames held for the next animation frame (none run in a hidden tab)
const END_MARGIN_PX = 16; // room left under the newest event when the page follows it
const PERSON_WAITS = { approval: "waiting for approval", answer: WAITING_LABELS.answer }; // the badge

const data = readJsonScript("timeline-data");
const session = data.session;
const $ = (id) => document.getElementById(id);
const timelineEl = $("timeline");
const loadEarlier = $("load-earlier");
// An imported session (a run bundle's) is read-only: no fork, no resume; replay it. An
// ingested one (sent over OTLP by an agent that runs elsewhere) cannot be controlled at
// all: no pause, cancel, resume, fork or replay, only read.
const ingested = !!data.ingested;
const readOnly = !!data.session.imported_from || ingested;
const view = new TimelineView(timelineEl, { sessionsUrl: data.urls.sessions, waterfallUrl: data.urls.waterfall, forkable: !readOnly });

// The newest stored events, up to session.last_seq as the server read it with the session.
const newest = data.events || [];
let events = [...newest]; // stored events loaded, ascending seq
let firstSeq = newest.length ? newest[0].seq : session.last_seq + 1;
let currentRun = null;
let waitingFor = null;
const runs = new Map(data.runs.map((run) => [run.id, run]));
const state = structuredClone(session.state || {});
for (const run of data.runs) view.setRun(run);
view.batch(() => {
  for (const event of newest) view.add(event);
});

// What the socket sends is applied once an animation frame, in the order it came: a
// backlog of hundreds of events costs one style and layout pass instead of one each.
const inbox = [];
let flushPending = false;

function receive(apply) {
  inbox.push(apply);
  if (inbox.length >= MAX_INBOX) flush();
  else if (!flushPending) {
    flushPending = true;
    requestAnimationFrame(flush);
  }
}

function flush() {
  flushPending = false;
  if (!inbox.length) return;
  const follow = following();
  const batch = inbox.splice(0);
  view.batch(() => {
    for (const apply of batch) apply();
  });
  refresh(follow);
}

const socket = new SessionSocket(session.id, {
  after: newest.length ? newest[newest.length - 1].seq : session.last_seq,
  onEvent: (event) => receive(() => {
    events.push(event);
    view.add(event);
    if (event.seq > session.last_seq) Object.assign(state, event.actions?.state_delta || {});
    if (event.seq > session.last_seq && Object.keys(event.actions?.artifact_delta || {}).length) refreshArtifacts();
    if (events.length > MAX_LOADED_EVENTS) unloadOldest();
  }),
  onPartial: (event) => receive(() => view.addPartial(event)),
  onStatus: (frame) => receive(() => {
    currentRun = frame.run;
    waitingFor = frame.waiting_for;
    if (currentRun) {
      const before = runs.get(currentRun.id);
      if ((!before || isActiveRun(before)) && !isActiveRun(currentRun)) redrawDatasetCard();
      runs.set(currentRun.id, currentRun);
      view.setRun(currentRun);
    }
    view.setActive(isActiveRun(currentRun) ? currentRun.invocation_id : null, waitingFor);
    showRun();
  }),
  onState: (connection, detail) => showConnection($("conn"), connection, detail),
  onError: (frame) => toast(frame.detail || frame.code, { error: true }),
}).start();

// "Fork here": the form that forks this session at that event (lib/fork.js).
timelineEl.addEventListener("click", (click) => {
  const button = click.target instanceof Element ? click.target.closest("button.fork-here") : null;
  if (!button) return;
  click.preventDefault(); // inside a tool call's summary: do not fold it
  const event = events.find((e) => e.seq === Number(button.dataset.forkSeq));
  if (event) openForkForm(event, { forksUrl: data.urls.forks, timelineUrl: data.urls.timeline, versions: data.versions });
});

// Older pages

loadEarlier.addEventListener("click", () => loadEarlierPage());

async function loadEarlierPage() {
  const after = Math.max(0, firstSeq - 1 - data.page_size);
  const limit = firstSeq - 1 - after;
  loadEarlier.disabled = true;
  try {
    const page = await api(`${data.urls.sessions}${session.id}/events/?after=${after}&limit=${limit}`);
    const older = page.results.filter((event) => event.seq < firstSeq);
    const before = document.documentElement.scrollHeight;
    events = [...older, ...events];
    firstSeq = after + 1;
    rebuild();
    window.scrollBy(0, document.documentElement.scrollHeight - before);
  } catch (error) {
    toast(error.message, { error: true });
  } finally {
    loadEarlier.disabled = false;
  }
}

function unloadOldest() {
  const excess = events.length - MAX_LOADED_EVENTS;
  let cut = excess;
  while (cut < events.length - 1 && events[cut].invocation_id === events[cut - 1]?.invocation_id) cut += 1;
  events = events.slice(cut);
  firstSeq = events[0].seq;
  rebuild();
}

function rebuild() {
  view.reset();
  view.batch(() => {
    for (const event of events) view.add(event);
  });
  view.setActive(isActiveRun(currentRun) ? currentRun.invocation_id : null, waitingFor);
  scheduleRefresh(false);
}

// The run bar: what runs now, for how long, on what it waits; pause, resume, cancel.

const pauseButton = $("pause-run");
pauseButton.addEventListener("click", async () => {
  if (!currentRun) return;
  const action = currentRun.status === "paused" ? "resume" : "pause";
  pauseButton.disabled = true;
  try {
    // The socket's next status frame shows the change (and enables the button again).
    await api(`${data.urls.runs}${currentRun.id}/${action}/`, { method: "POST" });
  } catch (error) {
    toast(error.message, { error: true });
    pauseButton.disabled = false;
  }
});

const cancelButton = $("cancel-run");
cancelButton.addEventListener("click", async () => {
  if (!currentRun) return;
  cancelButton.disabled = true;
  try {
    await api(`${data.urls.runs}${currentRun.id}/cancel/`, { method: "POST" });
    toast("Cancelling the run…");
  } catch (error) {
    toast(error.message, { error: true });
    cancelButton.disabled = false;
  }
});

// An interrupted run, the session's latest, can go on from its last completed step: a
// new run, which the socket then streams like any other.
const resumeButton = $("resume-from-last-step");
resumeButton.addEventListener("click", async () => {
  if (currentRun?.status !== "interrupted") return;
  resumeButton.disabled = true;
  try {
    if (currentRun.error_code === "forked") {
      await api(data.urls.continue, { method: "POST", body: {} });
      toast("Going on from the fork point…");
    } else {
      await api(`${data.urls.runs}${currentRun.id}/resume-from-last-step/`, { method: "POST" });
      toast("Resuming the run from its last step…");
    }
  } catch (error) {
    toast(error.message, { error: true });
    resumeButton.disabled = false;
  }
});

// A fork stops where it was forked: its copy of the run cut there reads "interrupted"
// (error_code "forked"). It goes on from there when the model answers that step next
// (a user message, a tool result), else from a new message.
const resumeWhy = $("resume-why").textContent;
function showForkStop(forked) {
  $("resume-why").textContent = !forked ? resumeWhy
    : data.fork.resumable ? "This fork stops at its fork point. Go on from there: the agent reads the record, edits included."
      : "This fork stops at its fork point, after the model's reply: send a message to go on.";
  resumeButton.textContent = forked ? "Continue from the fork point" : "Resume from last step";
  resumeButton.hidden = forked && !data.fork.resumable;
  $("fork-go-on").hidden = !forked || data.fork.resumable;
}
// Replay: the latest run, once ended, again on its recorded outputs in a new session
// (with the version picked: recorded outputs are reused until its requests differ).
const replayControls = $("replay-controls");
const replayButton = $("replay-run");
replayButton?.addEventListener("click", async () => {
  if (!currentRun || isActiveRun(currentRun)) return;
  replayButton.disabled = true;
  try {
    const body = { agent_version: $("replay-version").value || null };
    const replay = await api(`${data.urls.runs}${currentRun.id}/replay/`, { method: "POST", body });
    window.location.assign(`/sessions/${replay.session}/`);
  } catch (error) {
    toast(error.message, { error: true });
    replayButton.disabled = false;
  }
});

function showRun() {
  if (replayControls) replayControls.hidden = !currentRun || isActiveRun(currentRun) || !!currentRun.resumed_from;
  const active = isActiveRun(currentRun);
  $("runbar").hidden = !active;
  $("resume-bar").hidden = currentRun?.status !== "interrupted" || readOnly;
  showForkStop(currentRun?.error_code === "forked");
  resumeButton.disabled = false;
  const waiting = active && waitingFor in PERSON_WAITS;
  const status = waiting ? "waiting" : currentRun ? currentRun.status : session.status;
  const badge = $("session-status");
  badge.className = `badge ${status}`;
  badge.textContent = status === "waiting" ? PERSON_WAITS[waitingFor] || "waiting for a person" : status;
  if (!active) return;
  cancelButton.disabled = false;
  cancelButton.hidden = ingested;
  pauseButton.hidden = ingested || !isExecuting(currentRun);
  pauseButton.disabled = false;
  pauseButton.textContent = currentRun.status === "paused" ? "Resume" : "Pause";
  $("run-state").textContent = currentRun.status;
  $("run-state").className = `badge ${currentRun.status}`;
  $("run-waiting").textContent = waitingFor ? WAITING_LABELS[waitingFor] || `waiting for ${waitingFor}` : "";
}

setInterval(() => {
  if (!isActiveRun(currentRun)) return;
  const now = Date.now();
  const since = Date.parse(currentRun.started_at || currentRun.created_at);
  $("run-timer").textContent = formatClock(now - since);
  view.tick(now);
}, 100);

// Totals, state, emptiness: refreshed at most once a frame.

let refreshPending = false;
let followPending = false;

function scheduleRefresh(follow) {
  followPending ||= follow;
  if (refreshPending) return;
  refreshPending = true;
  requestAnimationFrame(() => {
    refreshPending = false;
    refresh(followPending);
    followPending = false;
  });
}

function refresh(follow) {
  refreshSide();
  if (follow) scrollToEnd();
}

function refreshSide() {
  $("timeline-empty").hidden = events.length > 0 || socket.state !== "live";
  loadEarlier.hidden = firstSeq <= 1;
  loadEarlier.textContent = `Load earlier events (${firstSeq - 1} more)`;
  let input = 0;
  let output = 0;
  for (const run of runs.values()) {
    const tokens = view.tokens(run.invocation_id, run);
    input += tokens.input;
    output += tokens.output;
  }
  const c = view.counts;
  const rows = [
    ["Events", String(socket.lastSeq || session.last_seq)],
    ["Runs", String(runs.size)],
    ["Tokens", formatTokens(input, output)],
    ["Model calls", `${c.modelCalls}${c.modelCalls ? ` · avg ${formatDuration(c.latencyMs / c.modelCalls)}` : ""}${c.failedCalls ? ` · ${c.failedCalls} failed` : ""}${c.cutCalls ? ` · ${c.cutCalls} cut off` : ""}${c.retries ? ` · ${c.retries} ${c.retries === 1 ? "retry" : "retries"}` : ""}`],
    ["Tool calls", tallyText(view.callTally())],
    ["Errors", String(c.errors)],
  ];
  const cost = costText(runsCost(runs.values()));
  if (cost) rows.splice(3, 0, ["Cost", cost]);
  if (firstSeq > 1) rows.push(["Loaded", `#${firstSeq}–#${socket.lastSeq}`]);
  $("totals").replaceChildren(...rows.flatMap(([term, value]) => [h("dt", {}, term), h("dd", {}, value)]));
  $("session-state").textContent = Object.keys(state).length ? pretty(state) : "{}";
}

/** Where the timeline ends on screen: the bottom of its column, not of the page (the
 * side panels are often longer, beside it on a wide screen and below it on a narrow one). */
function timelineEnd() {
  return timelineEl.parentElement.getBoundingClientRect().bottom;
}

/** Whether the reader is at the timeline's end (so the page follows new events): its end
 * is in the window or just below it. Measured once a frame, before that frame's first
 * change: reading layout after every event of a fast stream would force a layout per
 * event. */
function following() {
  if (refreshPending) return followPending;
  const end = timelineEnd();
  return end >= 0 && end <= window.innerHeight + 160;
}

/** Brings the timeline's end up to the window's bottom edge; never scrolls back up.
 * Runs out of view are laid out at an estimated height (`content-visibility`) until they
 * are drawn, and those scrolled into view may then grow the timeline: it looks again on
 * the next frames, unless the reader has scrolled meanwhile. */
function scrollToEnd(settle = 4) {
  const below = timelineEnd() + END_MARGIN_PX - window.innerHeight;
  if (below <= 0) return;
  window.scrollBy(0, below);
  const left = window.scrollY;
  if (settle > 0) requestAnimationFrame(() => window.scrollY === left && scrollToEnd(settle - 1));
}

// ?seq=<n> (the waterfall's links to a span's events): that event, in view and marked.

async function focusSeq(seq) {
  while (seq < firstSeq && firstSeq > 1 && events.length < MAX_LOADED_EVENTS) {
    const before = firstSeq;
    await loadEarlierPage();
    if (firstSeq === before) break; // the page could not be read (it said why)
  }
  const el = timelineEl.querySelector(`[data-seq="${seq}"]`);
  if (!el) {
    toast(`Event #${seq} is further back than the timeline holds.`, { error: true });
    return;
  }
  for (let open = el.closest("details"); open; open = open.parentElement?.closest("details")) open.open = true;
  el.classList.add("focused");
  el.scrollIntoView({ block: "center" });
}

// The first frame shows the newest events with their totals, scrolled to the newest.
const wanted = Number(new URLSearchParams(window.location.search).get("seq"));
refresh(newest.length > 0 && !wanted);
if (wanted > 0) await focusSeq(wanted);
document.body.dataset.ready = "timeline";

/** A tool saved artifacts: the Artifacts panel is rendered again by the server (names
 * and texts escaped there; `data.urls.artifacts`) and swapped in; on failure, a hint
 * asks for a reload. */
let artifactsTimer = null;
function refreshArtifacts() {
  clearTimeout(artifactsTimer);
  artifactsTimer = setTimeout(async () => {
    try {
      const response = await fetch(data.urls.artifacts, { credentials: "same-origin" });
      if (!response.ok) throw new Error(String(response.status));
      const page = new DOMParser().parseFromString(await response.text(), "text/html");
      const fresh = page.getElementById("artifacts");
      if (!fresh) throw new Error("no artifacts panel");
      $("artifacts").replaceWith(document.adoptNode(fresh));
    } catch {
      $("artifacts-new").hidden = false;
    }
  }, 300);
}
