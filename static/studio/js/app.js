// Behaviour every page shares: confirmation before destructive form posts, and the
// "/" shortcut to the page's search box.

import { confirmDialog } from "./lib/ui.js";

document.addEventListener("submit", async (event) => {
  const form = event.target;
  if (!(form instanceof HTMLFormElement) || !form.dataset.confirm || form.dataset.confirmed) return;
  event.preventDefault();
  if (await confirmDialog(form.dataset.confirm, { action: form.dataset.confirmAction || "Delete" })) {
    form.dataset.confirmed = "1";
    form.requestSubmit();
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
