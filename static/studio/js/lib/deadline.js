// How long a call waiting for approval or a question waiting for an answer may still
// wait: its time-out, counted from its request, then decides for nobody (a call approved
// or denied as its on_timeout says; a question left unanswered, the agent told so).
// Drawn as <time class="expires"> and kept current, every such element on the page,
// by one timer: the approvals inbox, and the approval and question cards of the
// timeline and the playground.

import { h } from "./dom.js";

const TICK_MS = 5000;
let ticking = false;

/** A duration in words, to the minute past one: "40 s", "12 min", "3 h 5 min". */
export function spanText(ms) {
  const seconds = Math.max(0, Math.floor(ms / 1000));
  const minutes = Math.floor(seconds / 60);
  return seconds < 60 ? `${seconds} s`
    : minutes < 60 ? `${minutes} min`
      : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

/** What a countdown element says now: "auto-deny in 4 min", "14 min left". */
export function leftText(time, now = Date.now()) {
  const left = Date.parse(time.dateTime) - now;
  const then = time.dataset.then;
  if (left <= 0) return then ? `auto-${then} any moment` : "no time left";
  return then ? `auto-${then} in ${spanText(left)}` : `${spanText(left)} left`;
}

/** Brings every countdown on the page up to date. */
export function tickDeadlines() {
  for (const time of document.querySelectorAll("time.expires[datetime]")) time.textContent = leftText(time);
}

/** A countdown to ``timeoutS`` seconds after ``askedAt`` (an ISO time), or null when it
 * waits as long as it must; ``then``: what the time-out does to a call ("approve" or
 * "deny"), none for a question. */
export function countdown(askedAt, timeoutS, then = null) {
  if (timeoutS === null || timeoutS === undefined || !askedAt) return null;
  const at = new Date(Date.parse(askedAt) + timeoutS * 1000).toISOString();
  const time = h("time", { class: "expires", datetime: at, dataset: then ? { then, testid: "expires" } : { testid: "expires" } });
  time.textContent = leftText(time);
  if (!ticking) {
    ticking = true;
    setInterval(tickDeadlines, TICK_MS);
  }
  return time;
}
