// Agents list: import an exported JSON document through the API.

import { api, ApiError } from "./lib/api.js";
import { toast } from "./lib/ui.js";

const button = document.getElementById("import-button");
const input = document.getElementById("import-file");
const errorBox = document.getElementById("import-error");

button.addEventListener("click", () => input.click());

input.addEventListener("change", async () => {
  const file = input.files[0];
  input.value = "";
  if (!file) return;
  errorBox.hidden = true;
  let document_;
  try {
    document_ = JSON.parse(await file.text());
  } catch {
    showError(`${file.name} is not valid JSON.`);
    return;
  }
  try {
    const agent = await api(button.dataset.importUrl, { method: "POST", body: document_ });
    toast(`Imported ${agent.name}.`);
    window.location.assign(`${window.location.pathname}${agent.id}/`);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    const details = error.errors.map((e) => (e.path ? `${e.path}: ${e.detail}` : e.detail));
    showError(`Could not import ${file.name}: ${details.join("; ") || error.message}`);
  }
});

function showError(message) {
  errorBox.textContent = message;
  errorBox.hidden = false;
}
document.body.dataset.ready = "agents";
