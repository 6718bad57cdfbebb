// The daemon's plain HTTP API (`POST /v1/solve`, `POST /v1/rps`), on the page's own origin, with
// the token the user gave, and every failure turned into a sentence.

const TOKEN_KEY = "patience.token";

/** A failure in words; `status` is the HTTP status, 0 when there was no answer at all. */
export class ApiError extends Error {
  constructor(message, status = 0) {
    super(message);
    this.name = "ApiError";
    this.status = status;
  }
}

/** The token for this tab, if the user gave one (kept in sessionStorage: gone with the tab). */
export function token() {
  try {
    return sessionStorage.getItem(TOKEN_KEY) || "";
  } catch {
    return "";
  }
}

export function setToken(value) {
  try {
    if (value) sessionStorage.setItem(TOKEN_KEY, value);
    else sessionStorage.removeItem(TOKEN_KEY);
  } catch {
    // Storage may be off (private modes): the token then lasts until the page is left.
  }
  memoryToken = value;
}

let memoryToken = "";

const SAID = {
  400: "The daemon could not read it",
  401: "The daemon needs a token",
  403: "The daemon refused it",
  404: "This daemon has no such API (is it an older version?)",
  405: "The daemon does not take that method",
  413: "Too large for the daemon's limits",
  415: "The daemon does not take that encoding",
  429: "The daemon is busy",
  499: "The call was cancelled",
  500: "The daemon failed",
  503: "The daemon is unavailable (shutting down or overloaded)",
  504: "The daemon ran out of time",
};

/** A refusal's sentence: what the status means, the daemon's own words, and when to retry. */
function refusal(response, text) {
  const status = response.status;
  const reason = response.headers.get("x-patience-reason");
  const retry = response.headers.get("retry-after");
  let message = `${SAID[status] || "The daemon refused the call"} (HTTP ${status}`;
  message += reason ? `, ${reason})` : ")";
  if (text) message += `: ${text}`;
  if (retry !== null) message += retry === "0" ? " Retry now." : ` Retry in ${retry} s.`;
  return message;
}

/**
 * POSTs `body` (text or a File) to `path` and returns the response once its head says it is
 * answering; throws an ApiError in words otherwise (AbortError when `signal` aborted it).
 */
export async function post(path, body, signal) {
  const headers = { "Content-Type": "text/plain; charset=utf-8" };
  const bearer = token() || memoryToken;
  if (bearer) headers.Authorization = `Bearer ${bearer}`;
  let response;
  try {
    response = await fetch(path, { method: "POST", body, headers, signal, cache: "no-store" });
  } catch (e) {
    if (e.name === "AbortError") throw e;
    throw new ApiError(`Cannot reach the daemon (${e.message}): is it still running?`);
  }
  if (!response.ok) {
    let text = "";
    try {
      text = (await response.text()).trim();
    } catch {
      // The words are a courtesy; the status says enough.
    }
    throw new ApiError(refusal(response, text), response.status);
  }
  return response;
}

/**
 * The lines of a response's body as they arrive (without their line ends). A body that ends cut
 * short (the daemon stopped, or a limit cut the call) throws an ApiError saying so.
 */
export async function* lines(response) {
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    let next;
    try {
      next = await reader.read();
    } catch (e) {
      if (e.name === "AbortError") throw e;
      throw new ApiError(
        `The daemon's answer was cut short (${e.message}): it may be shutting down, or a limit ` +
          "ended the call; its log says which.",
      );
    }
    if (next.done) break;
    const parts = (buffer + next.value).split("\n");
    buffer = parts.pop();
    yield* parts;
  }
  if (buffer !== "") yield buffer;
}

/** Each line of a JSON answer, parsed. */
export async function* objects(response) {
  for await (const line of lines(response)) {
    if (line.trim() === "") continue;
    try {
      yield [JSON.parse(line), line];
    } catch {
      throw new ApiError(`The daemon answered a line that is not JSON: ${line.slice(0, 80)}`);
    }
  }
}
