// Models: test connections from the list and the edit page; save the edit form through
// the API (the key field is write-only: empty means "keep the stored key").

import { api, ApiError } from "./lib/api.js";
import { readJsonScript } from "./lib/dom.js";
import { toast } from "./lib/ui.js";
import { clearFieldErrors, showFieldErrors } from "./lib/forms.js";

for (const button of document.querySelectorAll("[data-test-url]")) {
  button.addEventListener("click", () => testConnection(button));
}

async function testConnection(button) {
  const out = button.closest("tr, form").querySelector("[data-test-result]");
  button.disabled = true;
  out.className = "check-result muted";
  out.textContent = "Testing…";
  try {
    const check = await api(button.dataset.testUrl, { method: "POST" });
    out.className = `check-result ${check.ok ? "ok" : "failed"}`;
    const latency = check.latency_ms ? ` (${Math.round(check.latency_ms)} ms)` : "";
    out.textContent = `${check.ok ? "OK" : "Failed"}: ${check.detail}${latency}`;
  } catch (error) {
    out.className = "check-result failed";
    out.textContent = error.message;
  } finally {
    button.disabled = false;
  }
}

const form = document.getElementById("model-form");
if (form) {
  const data = readJsonScript("model-data");
  const provider = form.elements.provider;
  const showProviderFields = () => {
    for (const el of form.querySelectorAll("[data-provider-only]")) {
      el.hidden = el.dataset.providerOnly !== provider.value;
    }
  };
  provider.addEventListener("change", showProviderFields);
  showProviderFields();
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    save(form, data);
  });
}

async function save(form, data) {
  clearFieldErrors(form);
  const f = form.elements;
  let options;
  try {
    options = f.options.value.trim() ? JSON.parse(f.options.value) : {};
  } catch (error) {
    showFieldErrors(form, [{ path: "options", detail: `not valid JSON: ${error.message}` }]);
    return;
  }
  const body = { name: f.name.value.trim(), provider: f.provider.value, options };
  if (f.provider.value === "openai_compatible") {
    body.base_url = f.base_url.value.trim();
    body.model = f.model.value.trim();
  }
  if (f.remove_key?.checked) body.api_key = "";
  else if (f.api_key.value) body.api_key = f.api_key.value;
  const existing = data.config;
  try {
    await api(existing ? `${data.urls.models}${existing.id}/` : data.urls.models, {
      method: existing ? "PATCH" : "POST",
      body,
    });
    f.api_key.value = "";
    window.location.assign(data.urls.list);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    showFieldErrors(form, error.errors.length ? error.errors : [{ path: "", detail: error.message }]);
    toast("The model was not saved.", { error: true });
  }
}
document.body.dataset.ready = "models";
