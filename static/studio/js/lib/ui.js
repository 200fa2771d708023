// Small shared widgets: toasts and a confirmation dialog (a <dialog>, never window.confirm).

import { h } from "./dom.js";

let toastTimer = null;

export function toast(message, { error = false, ms = 3500 } = {}) {
  document.querySelector(".toast")?.remove();
  const el = h("div", { class: error ? "toast error" : "toast", role: error ? "alert" : "status" }, message);
  document.body.append(el);
  clearTimeout(toastTimer);
  toastTimer = setTimeout(() => el.remove(), ms);
}

/** Resolves true when the person confirms. */
export function confirmDialog(message, { action = "Confirm", danger = true } = {}) {
  return new Promise((resolve) => {
    const dialog = h("dialog", { "aria-label": action },
      h("p", {}, message),
      h("div", { class: "actions" },
        h("button", { type: "button", class: "btn", value: "cancel", onclick: () => dialog.close("cancel") }, "Cancel"),
        h("button", { type: "button", class: danger ? "btn danger solid" : "btn primary", onclick: () => dialog.close("ok") }, action)));
    dialog.addEventListener("close", () => {
      resolve(dialog.returnValue === "ok");
      dialog.remove();
    });
    document.body.append(dialog);
    dialog.showModal();
    dialog.querySelector(".actions button:last-child").focus();
  });
}

export function formatDuration(ms) {
  if (ms === null || ms === undefined || Number.isNaN(ms)) return "";
  if (ms > 0 && ms < 0.5) return "<1 ms"; // it took some time: not "0 ms"
  // Each unit is chosen by the rounded figure, so 999.7 ms is "1.0 s", not "1000 ms".
  const whole = Math.max(0, Math.round(ms));
  if (ms < 1000 && whole < 1000) return `${whole} ms`;
  const s = ms / 1000;
  const tenths = s.toFixed(1);
  if (s < 60 && tenths !== "60.0") return `${tenths} s`;
  const seconds = Math.round(s);
  const m = Math.floor(seconds / 60);
  if (m < 60) return `${m}:${String(seconds % 60).padStart(2, "0")} min`;
  return `${Math.floor(m / 60)}:${String(m % 60).padStart(2, "0")} h`;
}

/** Tokens, one way everywhere (pages, chips, totals): "1,204 in · 88 out", and
 * "1,204 in (1,000 cached) · 88 out" when some input came from the prompt cache. */
export function formatTokens(input, output, cached = 0) {
  const served = cached ? ` (${cached.toLocaleString("en-US")} cached)` : "";
  return `${(input || 0).toLocaleString("en-US")} in${served} · ${(output || 0).toLocaleString("en-US")} out`;
}

/** "$0.0012", "$12.35", "0.50 EUR": a cost (a decimal string) as studio.figures.cost
 * writes it: two significant digits below one, cents above; "≥ $0.0012" when some calls'
 * costs are unknown (``complete`` false); "" when unknown. */
export function formatCost(amount, currency = "USD", { complete = true } = {}) {
  const value = Number(amount);
  if (amount === null || amount === undefined || amount === "" || !Number.isFinite(value)) return "";
  if (value === 0 && !complete) return ""; // only calls of unknown cost: "≥ $0.00" says nothing
  const places = value >= 1 || value === 0 ? 2 : Math.min(Math.max(2, 1 - Math.floor(Math.log10(value))), 10);
  const text = value.toFixed(places);
  const written = currency === "USD" ? `$${text}` : `${text} ${currency}`;
  return complete ? written : `≥ ${written}`;
}

/** A chart axis's ticks, every one with the decimals their spacing ``step`` needs: none
 * read alike ("0.895" beside "0.9", not "0.9" twice) and none in exponent form. Digits
 * are grouped as the server writes them (en-US), as ``formatTokens`` does. */
export function formatTicks(ticks, step) {
  let places = 0;
  while (places < 12 && Math.abs(step * 10 ** places - Math.round(step * 10 ** places)) > 1e-6) places += 1;
  const format = { minimumFractionDigits: places, maximumFractionDigits: places };
  return ticks.map((tick) => tick.toLocaleString("en-US", format));
}

export function formatClock(ms) {
  const total = Math.max(0, Math.floor(ms / 100));
  const tenths = total % 10;
  const secs = Math.floor(total / 10);
  return `${Math.floor(secs / 60)}:${String(secs % 60).padStart(2, "0")}.${tenths}`;
}

// One formatter per format for every call: toLocaleTimeString(locales, options) builds a
// new Intl.DateTimeFormat each time, which dominated the timeline's first render. Built
// on first use, not when the module loads: the first one loads the locale's data (tens of
// ms), which pages that never show a time (every page imports this module) skip.
function utcFormatter(options) {
  let format = null;
  return (iso) => {
    const date = iso ? new Date(iso) : null;
    if (!date || Number.isNaN(date.getTime())) return "";
    format ??= new Intl.DateTimeFormat("en-US", { ...options, hourCycle: "h23", timeZone: "UTC" });
    return format.format(date);
  };
}

/** A time of day as the server writes the page's own times: UTC, 24-hour ("22:05:30"
 * beside "Started Dec 6, 22:05"), whatever the browser's zone and locale. */
export const formatTime = utcFormatter({ hour: "2-digit", minute: "2-digit", second: "2-digit" });

/** A day and time as the server writes them ("Dec 8, 01:46", Django's "M j, H:i"), in
 * UTC as every time the pages show. */
export const formatWhen = utcFormatter({ month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
