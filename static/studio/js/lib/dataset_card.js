// The session page's "Add a turn to a dataset" card is drawn by the server with the
// turns that had ended when the page was read. When a run ends on the page, its turn
// can be added too: the card is read again (its own route) and put in place,
// keeping whatever the reader had typed or picked. (The header's "Add to dataset" link
// is always there: one that appeared as a run ended would move the page under the
// pointer just as the reader reaches for the run's next step, such as Resume.)

/** Draw the card again from the server; a failure leaves the old card as it was. */
export async function redrawDatasetCard() {
  const card = document.getElementById("add-to-dataset");
  if (!card?.dataset.url) return;
  let fresh;
  try {
    const response = await fetch(card.dataset.url + window.location.search, { credentials: "same-origin" });
    if (!response.ok) return;
    const parsed = new DOMParser().parseFromString(await response.text(), "text/html");
    fresh = parsed.getElementById("add-to-dataset");
  } catch {
    return;
  }
  if (!fresh) return;
  keepEntries(card, fresh);
  card.replaceWith(document.adoptNode(fresh));
}

/** What the reader changed in ``card``'s fields, carried over to ``fresh``'s. */
function keepEntries(card, fresh) {
  for (const field of card.querySelectorAll("input[name], select[name]")) {
    if (field.type === "hidden") continue;
    const twin = fresh.querySelector(`[name="${field.name}"]`);
    if (!twin) continue;
    if (field.tagName === "SELECT") {
      const picked = field.selectedOptions[0];
      if (picked && !picked.defaultSelected && [...twin.options].some((o) => o.value === field.value)) twin.value = field.value;
    } else if (field.value !== field.defaultValue) {
      twin.value = field.value;
    }
  }
}
