// fetch() for Studio's REST API: JSON in and out, the CSRF token, and errors as
// ApiError carrying the API's {"code", "detail", "errors": [{path, code, detail}]}.

export class ApiError extends Error {
  constructor(status, body) {
    super(body?.detail || `request failed (${status})`);
    this.status = status;
    this.code = body?.code || "error";
    this.errors = Array.isArray(body?.errors) ? body.errors : [];
  }
}

export function csrfToken() {
  return document.querySelector('meta[name="csrf-token"]')?.content || "";
}

export async function api(url, { method = "GET", body, signal } = {}) {
  const headers = { Accept: "application/json" };
  // A FormData body (files) goes as multipart; the browser writes its boundary.
  const form = body instanceof FormData;
  if (body !== undefined && !form) headers["Content-Type"] = "application/json";
  if (method !== "GET") headers["X-CSRFToken"] = csrfToken();
  let response;
  try {
    response = await fetch(url, {
      method,
      headers,
      body: body === undefined || form ? body : JSON.stringify(body),
      credentials: "same-origin",
      signal,
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, { code: "network", detail: "Studio could not be reached. Check your connection." });
  }
  const text = await response.text();
  let data = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    data = { detail: `unexpected response (${response.status})` };
  }
  if (!response.ok) throw new ApiError(response.status, data);
  return data;
}
