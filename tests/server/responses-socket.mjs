// The Responses API over a WebSocket for the local model server: a `SocketStream` stands in for
// the HTTP response of one `response.create`, so a script runs on a socket exactly as it runs on
// POST …/responses. What the script writes as Server-Sent Events goes out as one text message
// per event (the event's JSON, as the API sends it); an HTTP error status goes out as the API's
// `error` event carrying that status. The socket stays open for the next response.

/** The JSON payload of each complete SSE event in `text`; returns them and the unfinished rest. */
function sseEvents(text) {
  const frames = text.split(/\r?\n\r?\n/);
  const rest = frames.pop();
  const payloads = [];
  for (const frame of frames) {
    const data = frame
      .split(/\r?\n/)
      .filter((line) => line.startsWith('data:'))
      .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5));
    if (data.length && data.join('\n') !== '[DONE]') payloads.push(data.join('\n'));
  }
  return { payloads, rest };
}

export class SocketStream {
  /** `ws`: the connection; `done()`: called once when this response is over. */
  constructor(ws, done) {
    this.ws = ws;
    this.done = done;
    this.status = 0;
    this.headersSent = false;
    this.buffer = '';
    this.finished = false;
  }

  /** The request as the exchange sees it: the handshake's, with `socket` standing for the connection. */
  req(handshake) {
    const ws = this.ws;
    return {
      method: 'POST',
      url: handshake.url,
      headers: handshake.headers,
      socket: { destroy: () => ws.terminate(), resetAndDestroy: () => ws.terminate() },
    };
  }

  get destroyed() {
    return this.ws.readyState !== this.ws.OPEN;
  }

  writeHead(status) {
    this.status = status;
    this.headersSent = true;
    return this;
  }

  flushHeaders() {
    this.headersSent = true;
  }

  write(text, callback) {
    if (!this.headersSent) this.writeHead(200);
    this.buffer += text;
    if (this.status === 200) {
      const { payloads, rest } = sseEvents(this.buffer);
      this.buffer = rest;
      for (const payload of payloads) if (!this.destroyed) this.ws.send(payload);
    }
    callback?.();
    return true;
  }

  end(text = '') {
    this.write(text);
    if (this.status === 200) {
      const { payloads } = sseEvents(`${this.buffer}\n\n`);
      for (const payload of payloads) if (!this.destroyed) this.ws.send(payload);
    } else if (!this.destroyed) {
      let error;
      try {
        error = JSON.parse(this.buffer).error;
      } catch {
        error = undefined;
      }
      error ??= { type: 'server_error', code: null, message: this.buffer };
      this.ws.send(JSON.stringify({ type: 'error', status: this.status, error }));
    }
    this.buffer = '';
    if (!this.finished) {
      this.finished = true;
      this.done();
    }
  }
}
