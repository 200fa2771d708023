// The approval inbox page: when the inbox socket (app.js) says the waiting calls or the
// questions waiting for an answer changed, the lists are read again from the server
// and swapped in, keeping the rows still there as they are (a reason or an answer being
// typed, a selection, an open editor). Enter in an answer's box sends it (Shift+Enter:
// a new line), as in the session's own question card.

import { spanText, tickDeadlines } from "./lib/deadline.js";

const inbox = document.getElementById("inbox");
const questions = document.getElementById("questions");
const bulk = document.getElementById("bulk");
let shown = keys(document);

/** The rows shown, as "a:<session>:<call>" for a call and "q:<session>:<call>" for a
 * question, sorted. */
function keys(root) {
  const rows = (selector, kind) => [...root.querySelectorAll(selector)].map((row) => `${kind}:${row.dataset.key}`);
  return [...rows("#inbox tr[data-key]", "a"), ...rows("#questions tr[data-key]", "q")].sort().join(" ");
}

async function refresh() {
  const response = await fetch(window.location.pathname, { headers: { Accept: "text/html" } });
  if (!response.ok) return;
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
  swap(inbox, fresh.getElementById("inbox"));
  swap(questions, fresh.getElementById("questions"));
  if (bulk) bulk.hidden = !inbox?.querySelector("tr[data-key]");
  shown = keys(document);
  showWaits();
}

/** Puts the server's fresh copy of a section in place of the shown one, keeping the
 * shown rows that are in both. */
function swap(section, next) {
  if (!section || !next) return;
  for (const row of next.querySelectorAll("tr[data-key]")) {
    const kept = section.querySelector(`tr[data-key="${CSS.escape(row.dataset.key)}"]`);
    if (kept) row.replaceWith(kept);
  }
  section.replaceChildren(...next.childNodes);
  section.dataset.count = next.dataset.count;
  section.hidden = next.hidden;
}

/** How long each call or question has waited, and how long it may still wait (a call
 * then approved or denied by its time-out, a question then left unanswered), kept
 * current: "40 s", "12 min", "3 h 5 min". */
function showWaits() {
  for (const time of document.querySelectorAll("#inbox time.waited, #questions time.waited")) {
    time.textContent = spanText(Date.now() - Date.parse(time.dateTime));
  }
  tickDeadlines();
}
showWaits();
setInterval(showWaits, 5000);

document.addEventListener("keydown", (event) => {
  const box = event.target;
  if (event.key !== "Enter" || event.shiftKey || event.isComposing) return;
  if (!(box instanceof HTMLTextAreaElement) || !box.closest("form.answer")) return;
  event.preventDefault();
  box.form.requestSubmit();
});

document.addEventListener("studio:inbox", (event) => {
  const calls = event.detail.results.map((a) => `a:${a.session_id}:${a.call_id}`);
  const asked = (event.detail.questions || []).map((q) => `q:${q.session_id}:${q.call_id}`);
  if ([...calls, ...asked].sort().join(" ") !== shown) refresh();
});
document.body.dataset.ready = "approvals";
