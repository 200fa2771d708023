// The playground: pick an agent, start or continue a session, chat. Messages go to the
// REST API (which queues a run); the answer streams back over the session websocket.

import { api, ApiError } from "./lib/api.js";
import { h, readJsonScript } from "./lib/dom.js";
import { ChatView } from "./lib/chat_view.js";
import { isActiveRun, isExecuting, SessionSocket, showConnection } from "./lib/live.js";
import { formatWhen, toast } from "./lib/ui.js";

const HISTORY_EVENTS = 400; // a continued session shows this many of its latest events
const RECENT_SESSIONS = 15;
const WAITING = {
  model: "Thinking…",
  tool: "Running a tool…",
  approval: "Waiting for your approval",
  answer: "Waiting for your answer",
  paused: "Paused: resume to go on",
  rate_limit: "Waiting for the model's rate limit…",
  retry: "Retrying the model…",
};

const data = readJsonScript("playground-data");
const $ = (id) => document.getElementById(id);
const picker = $("agent-picker");
const input = $("message");
const MESSAGE_PLACEHOLDER = input.placeholder;
const ANSWER_PLACEHOLDER = "Answer the agent's question…  (Enter to send)";
const transcript = $("transcript");
const chat = new ChatView(transcript, { sessionsUrl: data.urls.sessions, onChange: afterChange });

let agent = data.agents.find((a) => a.id === data.agent_id) || null;
let session = data.session;
let socket = null;
let run = null;
let waitingFor = null; // what the active run waits on, as its latest status frame says
let sending = false;

// Agents and sessions

for (const a of data.agents) picker.append(h("option", { value: a.id, selected: a === agent }, a.name));
picker.disabled = !data.agents.length;
picker.addEventListener("change", () => {
  agent = data.agents.find((a) => a.id === picker.value);
  openSession(null);
});
$("new-session").addEventListener("click", () => {
  openSession(null);
  input.focus();
});

function showAgent() {
  $("agent-description").textContent = agent ? agent.description || "No description." : "Create an agent first.";
  $("edit-agent").href = agent ? `${data.urls.builder}${agent.id}/` : data.urls.builder;
  $("empty-agent").textContent = agent ? agent.name : "your agent";
  const suggestion = $("suggestion");
  suggestion.replaceChildren();
  if (agent?.suggestion) {
    suggestion.append(h("button", { type: "button", class: "btn", onclick: () => send(agent.suggestion) }, `Try: ${agent.suggestion}`));
  }
}

async function loadSessions() {
  const list = $("session-list");
  if (!agent) return list.replaceChildren(h("li", { class: "hint" }, "No agent selected."));
  try {
    const page = await api(`${data.urls.sessions}?agent=${encodeURIComponent(agent.id)}`);
    // Newest first, each with when it started: sessions that asked the same thing
    // read alike by their titles alone.
    const items = page.results.slice(0, RECENT_SESSIONS).map((s) => h("li", {},
      h("a", {
        href: `${data.urls.playground}?session=${s.id}`,
        "aria-current": session?.id === s.id ? "true" : "false",
        title: s.title,
        onclick: (event) => {
          event.preventDefault();
          openSession(s);
        },
      },
      h("span", { class: "title" }, s.title || "Untitled session"),
      h("time", { class: "when", datetime: s.created_at }, formatWhen(s.created_at)))));
    list.replaceChildren(...(items.length ? items : [h("li", { class: "hint" }, "No sessions yet.")]));
  } catch (error) {
    list.replaceChildren(h("li", { class: "error" }, error.message));
  }
}

/** Show ``next`` (a Session JSON) or, with null, an empty new session. */
function openSession(next) {
  socket?.stop();
  socket = null;
  run = null;
  session = next;
  chat.reset();
  const query = session ? `?session=${session.id}` : agent ? `?agent=${agent.id}` : "";
  window.history.replaceState(null, "", `${data.urls.playground}${query}`);
  showSession();
  showAgent();
  loadSessions();
  if (session) connect(Math.max(0, session.last_seq - HISTORY_EVENTS));
  afterChange();
}

function showSession() {
  $("chat-title").textContent = session ? session.title || "Untitled session" : "New session";
  $("chat-meta").textContent = session ? `${session.agent_name} v${session.agent_version}` : agent ? `${agent.name} · a new session starts with your first message` : "";
  const link = $("open-timeline");
  link.hidden = !session;
  if (session) link.href = `${data.urls.timeline}${session.id}/`;
  const waterfall = $("open-waterfall");
  waterfall.hidden = !session;
  if (session) waterfall.href = `${data.urls.timeline}${session.id}/waterfall/`;
  $("conn").hidden = !session;
}

function connect(after) {
  socket = new SessionSocket(session.id, {
    after,
    onEvent: (event) => chat.add(event),
    onPartial: (event) => chat.addPartial(event),
    onStatus: (frame) => {
      const wasActive = isActiveRun(run);
      const before = run;
      run = frame.run;
      if (run?.resumed_from && isActiveRun(run)) chat.resumed(run, earlierLink(before, run));
      if (wasActive && !isActiveRun(run)) {
        chat.settle(run);
        loadSessions();
      }
      waitingFor = frame.waiting_for;
      afterChange();
    },
    onState: (state, detail) => showConnection($("conn"), state, detail),
    onError: (frame) => toast(frame.detail || frame.code, { error: true }),
  }).start();
}

/** Where the run ``resumed`` went on from shows in the timeline (when it is ``before``,
 * the run the page knew, its invocation is known). */
function earlierLink(before, resumed) {
  const timeline = `${data.urls.timeline}${session.id}/`;
  return before?.id === resumed.resumed_from && before.invocation_id ? `${timeline}#inv-${before.invocation_id}` : timeline;
}

// Sending

$("composer").addEventListener("submit", (event) => {
  event.preventDefault();
  send(input.value);
});
input.addEventListener("keydown", (event) => {
  if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
    event.preventDefault();
    send(input.value);
  }
});
input.addEventListener("input", autosize);

// Attached files go with the next message, as a multipart body.
const attach = $("attach");
attach.addEventListener("change", () => {
  $("attached").textContent = [...attach.files].map((file) => file.name).join(", ");
});

function messageBody(text) {
  if (!attach.files.length) return { text };
  const form = new FormData();
  form.append("text", text);
  for (const file of attach.files) form.append("files", file);
  return form;
}

function clearAttached() {
  attach.value = "";
  $("attached").textContent = "";
}

async function send(raw) {
  const text = raw.trim();
  if (!text || !agent || sending) return;
  if (isActiveRun(run)) {
    // The run waits for an answer: what the person types here is it, as in a chat.
    const question = chat.openQuestion();
    if (!question) return;
    input.value = "";
    autosize();
    await question.answer(text);
    return;
  }
  sending = true;
  afterChange();
  try {
    if (!session) {
      session = await api(data.urls.sessions, { method: "POST", body: { agent: agent.id } });
      window.history.replaceState(null, "", `${data.urls.playground}?session=${session.id}`);
      showSession();
      connect(0);
    }
    chat.addPending(text);
    input.value = "";
    autosize();
    const queued = await api(`${data.urls.sessions}${session.id}/messages/`, { method: "POST", body: messageBody(text) });
    clearAttached();
    // The socket may already have reported this run (even its end): keep the newer news.
    if (run?.id !== queued.id) run = queued;
    if (!session.title) {
      session.title = text.split("\n")[0].slice(0, 80);
      showSession();
      loadSessions();
    }
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    chat.pending.shift()?.remove();
    input.value = text;
    toast(error.message, { error: true });
  } finally {
    sending = false;
    afterChange();
  }
}

$("stop").addEventListener("click", async () => {
  if (!isActiveRun(run)) return;
  $("stop").disabled = true;
  try {
    await api(`${data.urls.runs}${run.id}/cancel/`, { method: "POST" });
  } catch (error) {
    toast(error.message, { error: true });
  }
});

$("resume-from-last-step").addEventListener("click", async () => {
  if (run?.status !== "interrupted") return;
  const button = $("resume-from-last-step");
  button.disabled = true;
  try {
    const queued = await api(`${data.urls.runs}${run.id}/resume-from-last-step/`, { method: "POST" });
    // The socket may already have reported the new run (even its end): keep the newer news.
    if (run?.id === queued.resumed_from) {
      chat.resumed(queued, earlierLink(run, queued));
      run = queued;
    }
  } catch (error) {
    toast(error.message, { error: true });
  } finally {
    button.disabled = false;
    afterChange();
  }
});

$("pause").addEventListener("click", async () => {
  if (!isActiveRun(run)) return;
  $("pause").disabled = true;
  try {
    // The socket's next status frame shows the change (and enables the button again).
    await api(`${data.urls.runs}${run.id}/${run.status === "paused" ? "resume" : "pause"}/`, { method: "POST" });
  } catch (error) {
    toast(error.message, { error: true });
    $("pause").disabled = false;
  }
});

/** What the status line says the active run is doing: a call made once the turn is
 * done says which (the summary, the key facts), not "Thinking…" after the answer. */
function waitingText() {
  const calling = waitingFor === "model" ? chat.afterTurn : null;
  return calling ? `${calling[0].toUpperCase()}${calling.slice(1)}…` : WAITING[waitingFor] || "Working…";
}

// Updates the controls and scrolls to the newest message, once a frame however many
// events arrive in it.
let framePending = false;
function afterChange() {
  if (framePending) return;
  framePending = true;
  requestAnimationFrame(() => {
    framePending = false;
    const active = isActiveRun(run);
    const question = active ? chat.openQuestion() : null;
    $("chat-waiting").textContent = active ? waitingText() : "";
    $("chat-empty").hidden = chat.messages > 0 || chat.pending.length > 0;
    $("send").disabled = sending || (active && !question) || !agent;
    input.placeholder = question ? ANSWER_PLACEHOLDER : MESSAGE_PLACEHOLDER;
    $("stop").hidden = !active;
    $("stop").disabled = false;
    $("pause").hidden = !isExecuting(run);
    $("pause").disabled = false;
    $("pause").textContent = run?.status === "paused" ? "Resume" : "Pause";
    $("resume-from-last-step").hidden = run?.status !== "interrupted" || sending;
    transcript.scrollTop = transcript.scrollHeight;
  });
}

function autosize() {
  input.style.height = "auto";
  input.style.height = `${Math.min(input.scrollHeight, 192)}px`;
}

openSession(session);
input.focus();
document.body.dataset.ready = "playground";
