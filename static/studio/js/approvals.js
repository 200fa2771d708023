// The approval inbox page: when the inbox socket (app.js) says the waiting calls
// changed, the list is read again from the server and swapped in, keeping the rows
// still there as they are (a reason being typed, a selection, an open editor).

const inbox = document.getElementById("inbox");
let shown = keys(document);

function keys(root) {
  return [...root.querySelectorAll("#inbox tr[data-key]")].map((row) => row.dataset.key).join(" ");
}

async function refresh() {
  const response = await fetch(window.location.pathname, { headers: { Accept: "text/html" } });
  if (!response.ok) return;
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
  const next = fresh.getElementById("inbox");
  if (!next || !inbox) return;
  for (const row of next.querySelectorAll("tr[data-key]")) {
    const kept = inbox.querySelector(`tr[data-key="${CSS.escape(row.dataset.key)}"]`);
    if (kept) row.replaceWith(kept);
  }
  inbox.replaceChildren(...next.childNodes);
  inbox.dataset.count = next.dataset.count;
  shown = keys(document);
  showWaits();
}

/** How long each call has waited, kept current: "40 s", "12 min", "3 h 5 min". */
function showWaits() {
  for (const time of document.querySelectorAll("#inbox time.waited")) {
    const seconds = Math.max(0, Math.floor((Date.now() - Date.parse(time.dateTime)) / 1000));
    const minutes = Math.floor(seconds / 60);
    time.textContent = seconds < 60 ? `${seconds} s`
      : minutes < 60 ? `${minutes} min`
        : `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
  }
}
showWaits();
setInterval(showWaits, 5000);

document.addEventListener("studio:inbox", (event) => {
  const now = event.detail.results.map((a) => `${a.session_id}:${a.call_id}`).sort().join(" ");
  if (now !== shown.split(" ").filter(Boolean).sort().join(" ")) refresh();
});
document.body.dataset.ready = "approvals";
