// The "New eval" form: the evaluators ticked (each with its fields) become the
// EvaluatorSpec list the eval API validates; it starts the eval and the browser opens
// its page. The API's errors show above the form, naming the field.
import { api, ApiError } from "./lib/api.js";

const form = document.getElementById("eval-form");
const problem = document.getElementById("form-error");

function fieldsOf(box) {
  return box.querySelector(".evaluator-fields");
}

function showTicked() {
  for (const box of form.querySelectorAll(".evaluator")) {
    const fields = fieldsOf(box);
    if (fields) fields.hidden = !box.querySelector('input[name="use"]').checked;
  }
}

function valueOf(input) {
  if (input.type === "checkbox") return input.checked;
  if (input.dataset.int !== undefined) return input.value === "" ? undefined : Number(input.value);
  if (input.dataset.json !== undefined) {
    try {
      return JSON.parse(input.value);
    } catch {
      throw new Error(`${input.labels?.[0]?.textContent || input.name} is not valid JSON.`);
    }
  }
  return input.value.trim() === "" ? undefined : input.value;
}

function spec(box) {
  const kind = box.dataset.kind;
  const result = kind === "custom" ? { kind, name: box.dataset.name } : { kind };
  const fields = fieldsOf(box);
  for (const input of fields ? fields.querySelectorAll("input, select, textarea") : []) {
    const value = valueOf(input);
    if (value !== undefined) result[input.name] = value;
  }
  return result;
}

function ticked() {
  return [...form.querySelectorAll(".evaluator")].filter(
    (box) => box.querySelector('input[name="use"]').checked,
  );
}

function body() {
  const evaluators = ticked().map(spec);
  if (!evaluators.length) throw new Error("Tick at least one evaluator.");
  const agent = form.agent_version.selectedOptions[0].dataset;
  const dataset = form.dataset_version.selectedOptions[0].dataset;
  return {
    agent: agent.agent,
    version: Number(agent.number),
    dataset: dataset.dataset,
    dataset_version: Number(dataset.number),
    evaluators,
    concurrency: Number(form.concurrency.value),
    repeats: Number(form.repeats.value),
  };
}

// Where an error is, in words: "evaluators.2.params.max" names the evaluator ticked
// third ("max_words, params.max"), not its place in a list the user never saw.
function place(path) {
  const found = /^evaluators\.(\d+)\.?(.*)$/.exec(path || "");
  const box = found && ticked()[Number(found[1])];
  if (!box) return path || "form";
  const name = box.querySelector("strong").textContent;
  return found[2] ? `${name}, ${found[2]}` : name;
}

function say(message, errors = []) {
  problem.textContent = "";
  problem.append(message);
  for (const error of errors) {
    const line = document.createElement("div");
    line.textContent = `${place(error.path)}: ${error.detail}`;
    problem.append(line);
  }
  problem.hidden = false;
  problem.scrollIntoView({ block: "nearest" });
}

form.addEventListener("change", showTicked);
form.addEventListener("submit", async (event) => {
  event.preventDefault();
  problem.hidden = true;
  const button = document.getElementById("start-eval");
  let payload;
  try {
    payload = body();
  } catch (error) {
    say(error.message);
    return;
  }
  button.disabled = true;
  try {
    const run = await api(form.dataset.api, { method: "POST", body: payload });
    window.location.assign(`${form.dataset.page}${encodeURIComponent(run.id)}/`);
  } catch (error) {
    button.disabled = false;
    if (error instanceof ApiError) say(error.message, error.errors);
    else throw error;
  }
});
showTicked();
document.body.dataset.ready = "eval-new";
