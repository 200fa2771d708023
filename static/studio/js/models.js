// Models: test connections from the list and the edit page; fill the edit form from a
// preset; save it through the API (the key field is write-only: empty means "keep the
// stored key").

import { api, ApiError } from "./lib/api.js";
import { readJsonScript } from "./lib/dom.js";
import { toast } from "./lib/ui.js";
import { clearFieldErrors, showFieldErrors } from "./lib/forms.js";
import { OptionInputs } from "./lib/model_options.js";

for (const button of document.querySelectorAll("[data-test-url]")) {
  button.addEventListener("click", () => testConnection(button));
}

async function testConnection(button) {
  const out = button.closest("tbody, form").querySelector("[data-test-result]");
  const line = out.closest(".check-row");
  if (line) line.hidden = false;
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
  const options = new OptionInputs(form.querySelector("[data-option-inputs]"), data.option_fields, {
    stored: data.config?.options || {},
    storedProvider: data.config?.provider || null,
  });
  // data-provider-only lists the providers a field belongs to; the placeholders show
  // the picked provider's own service and an example model; the options are its own.
  const showProviderFields = () => {
    for (const el of form.querySelectorAll("[data-provider-only]")) {
      el.hidden = !el.dataset.providerOnly.split(" ").includes(provider.value);
    }
    options.show(provider.value);
    const picked = provider.selectedOptions[0];
    if (!picked) return;
    form.elements.base_url.placeholder = picked.dataset.baseUrl;
    form.elements.model.placeholder = picked.dataset.model;
    form.querySelector("[data-default-base-url]").textContent = picked.dataset.baseUrl;
  };
  provider.addEventListener("change", showProviderFields);
  showProviderFields();
  offerPresets(form, data.presets, showProviderFields, { suggestName: !data.config });
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    save(form, data, options);
  });
}

// A preset fills in the provider, base URL and model (and a new model's name, unless the
// user typed one); every field stays editable, and another provider or base URL (an
// empty one is the provider's own service) is "custom" again.
function offerPresets(form, presets, showProviderFields, { suggestName }) {
  const f = form.elements;
  const picker = form.querySelector("#m-preset");
  const note = form.querySelector("[data-preset-note]");
  const chosen = () => presets.find((p) => p.id === picker.value);
  const choose = (preset) => {
    picker.value = preset ? preset.id : "";
    note.textContent = preset ? preset.note : note.dataset.customNote;
  };
  picker.addEventListener("change", () => {
    const preset = chosen();
    choose(preset);
    if (!preset) return;
    f.provider.value = preset.provider;
    showProviderFields();
    f.base_url.value = preset.base_url;
    f.model.value = preset.model;
    // A new model's name is suggested until the user types one of their own.
    const name = f.name.value.trim();
    if (suggestName && (!name || presets.some((p) => p.name === name))) f.name.value = preset.name;
  });
  const leftPreset = () => {
    const preset = chosen();
    const baseUrl = f.base_url.value.trim() || f.provider.selectedOptions[0]?.dataset.baseUrl || "";
    const same = (a, b) => a.replace(/\/+$/, "") === b.replace(/\/+$/, "");
    if (preset && (!same(baseUrl, preset.base_url) || f.provider.value !== preset.provider)) {
      choose(null);
    }
  };
  f.base_url.addEventListener("input", leftPreset);
  f.provider.addEventListener("change", leftPreset);
}

async function save(form, data, optionInputs) {
  clearFieldErrors(form);
  const f = form.elements;
  const { options, errors } = optionInputs.read();
  if (errors.length) {
    showFieldErrors(form, errors);
    return;
  }
  const body = { name: f.name.value.trim(), provider: f.provider.value, options };
  if (f.provider.value !== "scripted") {
    body.base_url = f.base_url.value.trim();
    body.model = f.model.value.trim();
  }
  Object.assign(body, prices(f, { isNew: !data.config }), limits(f));
  if (f.remove_key?.checked) body.api_key = "";
  else if (f.api_key.value && !f.api_key.closest("[data-field]").hidden) body.api_key = f.api_key.value;
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
// Prices per million tokens: an empty one is "not known" (null). A new model whose
// prices are all left empty sends none, and starts with the price table's.
function prices(f, { isNew }) {
  const names = ["price_input", "price_cached_input", "price_output"];
  const values = Object.fromEntries(names.map((name) => [name, f[name].value.trim() || null]));
  if (isNew && names.every((name) => values[name] === null)) return {};
  return { ...values, price_currency: f.price_currency.value.trim().toUpperCase() || "USD" };
}

// Rate limits: empty is "no limit" (null); anything else goes as typed, so the server's
// error says what is wrong with it.
function limits(f) {
  const names = ["requests_per_minute", "tokens_per_minute"];
  return Object.fromEntries(names.map((name) => [name, f[name].value.trim() || null]));
}

document.body.dataset.ready = "models";
