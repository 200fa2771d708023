// Building DOM from data without ever parsing HTML: every string becomes a text node
// (textContent), links are limited to http(s), and no element takes raw markup.

const SAFE_PROTOCOLS = new Set(["http:", "https:"]);
const URL_PATTERN = /\bhttps?:\/\/[^\s<>"'`]+[^\s<>"'`.,;:!?)\]}]/g;

/** h("div", {class: "x", dataset: {seq: 3}, onclick: fn}, "text", child) */
export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key === "class") el.className = value;
    else if (key === "dataset") Object.assign(el.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "href") el.setAttribute("href", safeHref(value));
    else if (key === "text") el.textContent = value;
    else if (key === "value") el.value = value;
    else if (key === "checked" || key === "selected" || key === "disabled" || key === "open") el[key] = Boolean(value);
    else if (key === "innerHTML" || key === "style" || /^on/i.test(key) || key === "srcdoc") throw new Error(`refusing attribute ${key}`);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** A same-origin path, or an absolute http(s) URL; anything else becomes "#". */
export function safeHref(value) {
  const text = String(value);
  if (text.startsWith("/") && !text.startsWith("//")) return text;
  if (text.startsWith("#")) return text; // a place on this page
  try {
    const url = new URL(text);
    return SAFE_PROTOCOLS.has(url.protocol) ? url.href : "#";
  } catch {
    return "#";
  }
}

/** Text in which http(s) URLs become links that leak nothing to where they point. */
export function richText(text) {
  const fragment = document.createDocumentFragment();
  const source = String(text ?? "");
  let last = 0;
  for (const match of source.matchAll(URL_PATTERN)) {
    const href = safeHref(match[0]);
    if (href === "#") continue;
    fragment.append(source.slice(last, match.index));
    fragment.append(h("a", { href, rel: "noopener noreferrer nofollow", target: "_blank" }, match[0]));
    last = match.index + match[0].length;
  }
  fragment.append(source.slice(last));
  return fragment;
}

export function readJsonScript(id) {
  const el = document.getElementById(id);
  return el ? JSON.parse(el.textContent) : null;
}

export function pretty(value) {
  return JSON.stringify(value, null, 2);
}
