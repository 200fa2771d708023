// Behaviour every page shares: confirmation before destructive form posts, the "/"
// shortcut to the page's search box, and the folding navigation of narrow screens.

import { confirmDialog } from "./lib/ui.js";

document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.confirm || form.dataset.confirmed) return;
  event.preventDefault();
  if (await confirmDialog(form.dataset.confirm, { action: form.dataset.confirmAction || "Delete" })) {
    // The button that was pressed submits again: its formaction says what to delete
    // where one form serves many rows. Only this submission skips the question.
    form.dataset.confirmed = "1";
    form.requestSubmit(event.submitter ?? undefined);
    delete form.dataset.confirmed;
  }
});

document.addEventListener("keydown", (event) => {
  if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
  const target = event.target;
  if (target instanceof HTMLElement && (target.isContentEditable || /^(INPUT|TEXTAREA|SELECT)$/.test(target.tagName))) return;
  const search = document.querySelector('[data-shortcut="/"]');
  if (search) {
    event.preventDefault();
    search.focus();
    search.select?.();
  }
});

// The top navigation folds behind its "Menu" button on a narrow screen (studio.css);
// without this module it wraps instead.
const topbar = document.querySelector(".topbar");
const menu = topbar?.querySelector(".menu-toggle");
if (topbar && menu) {
  topbar.dataset.menu = "folded";
  const open = (yes) => menu.setAttribute("aria-expanded", String(yes));
  menu.addEventListener("click", () => open(menu.getAttribute("aria-expanded") !== "true"));
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape" && menu.getAttribute("aria-expanded") === "true") {
      open(false);
      menu.focus();
    }
  });
}

// The count of what waits for the user in the inbox (calls waiting for a decision and
// questions waiting for an answer), in the navigation of every page (and on its Menu
// button, for a narrow screen's folded navigation), kept live over /ws/approvals/;
// each change is also told to the page ("studio:inbox").
const badge = document.getElementById("approvals-badge");
const counts = [badge, document.getElementById("menu-count")];
if (badge) {
  let pause = 500;
  const connect = () => {
    const scheme = window.location.protocol === "https:" ? "wss:" : "ws:";
    const ws = new WebSocket(`${scheme}//${window.location.host}/ws/approvals/`);
    ws.addEventListener("message", (message) => {
      const frame = JSON.parse(message.data);
      if (frame.type !== "inbox") return;
      pause = 500;
      const waiting = frame.count + (frame.questions || []).length;
      for (const el of counts) {
        if (!el) continue;
        el.textContent = String(waiting);
        el.dataset.count = String(waiting);
        el.setAttribute("aria-label", `${waiting} waiting for you`);
      }
      document.dispatchEvent(new CustomEvent("studio:inbox", { detail: frame }));
    });
    ws.addEventListener("close", (event) => {
      if (event.code === 4401) return; // signed out
      setTimeout(connect, pause);
      pause = Math.min(pause * 2, 10000);
    });
  };
  connect();
}
