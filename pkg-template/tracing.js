// Tracing exporters and the reference's `Observability` shape (SPEC §16). The spans are made in
// the wasm; `OtlpExporter` buffers the ended ones and posts them as OTLP/HTTP JSON (the body is
// built in the wasm, `__otlpBody`), one post per trace when its root span ends.
// @ts-ignore: `__otlpBody` is a hidden export (not in wasm_agent.d.ts)
import { __otlpBody } from './wasm_agent.js';

/**
 * `new Observability({ configs: { default: { serviceName, exporters, sampling } } })`, accepted
 * where `observability` is (the `default` config, else the first).
 */
export class Observability {
  /** @param {{ configs?: Record<string, object> }} config */
  constructor(config = {}) {
    if (config === null || typeof config !== 'object') throw new TypeError('new Observability(config): expected { configs: { default: { exporters } } }');
    const configs = config.configs ?? {};
    if (configs === null || typeof configs !== 'object') throw new TypeError('new Observability(config).configs: expected an object of configs by name');
    this.configs = configs;
  }

  /** The config in use: `default`, else the first. */
  getDefaultInstance() {
    return this.configs.default ?? Object.values(this.configs)[0];
  }
}

function positive(v, field, integer) {
  if (typeof v !== 'number' || !(v > 0) || !Number.isFinite(v) || (integer && !Number.isInteger(v))) {
    throw new TypeError(`new OtlpExporter(config).${field}: expected a positive ${integer ? 'integer' : 'number'}, got ${String(v)}`);
  }
  return v;
}

/**
 * Posts the spans of each finished trace to an OTLP/HTTP collector (`url`: the full traces URL).
 * A scorer's spans are a trace of their own (root `scorer_run`), posted when it ends. It has no
 * `onScoreEvent`: OTLP traces have no score record, so the scores themselves are not posted.
 */
export class OtlpExporter {
  #url;
  #headers;
  #serviceName;
  #timeoutMs;
  #maxBatchSize;
  #spans = [];
  #posts = new Set();
  #warned = false;

  constructor(config = {}) {
    const { url, headers = {}, serviceName, timeoutMs = 10000, maxBatchSize = 512 } = config ?? {};
    if (typeof url !== 'string' || !/^https?:\/\//.test(url)) {
      throw new TypeError(`new OtlpExporter(config).url: expected the collector's traces URL (e.g. http://localhost:4318/v1/traces), got ${typeof url === 'string' ? `'${url}'` : typeof url}`);
    }
    if (headers === null || typeof headers !== 'object' || Object.values(headers).some((v) => typeof v !== 'string')) {
      throw new TypeError('new OtlpExporter(config).headers: expected an object of header strings');
    }
    if (serviceName !== undefined && (typeof serviceName !== 'string' || serviceName === '')) {
      throw new TypeError('new OtlpExporter(config).serviceName: expected a non-empty string');
    }
    this.name = 'otlp';
    this.#url = url;
    this.#headers = { ...headers };
    this.#serviceName = serviceName;
    this.#timeoutMs = positive(timeoutMs, 'timeoutMs', false);
    this.#maxBatchSize = positive(maxBatchSize, 'maxBatchSize', true);
  }

  /** Called by the wasm: the `observability` config's service name, unless one was given. */
  __attach(serviceName) {
    this.#serviceName ??= serviceName;
  }

  exportTracingEvent(event) {
    if (event?.type !== 'span_ended') return;
    const s = event.exportedSpan;
    this.#spans.push({ ...s, startTime: +s.startTime, endTime: s.endTime === undefined ? undefined : +s.endTime });
    if (s.isRootSpan) {
      const trace = this.#spans.filter((x) => x.traceId === s.traceId);
      this.#spans = this.#spans.filter((x) => x.traceId !== s.traceId);
      this.#send(trace);
    }
  }

  /** Posts what is buffered; settles once every post so far was answered (or failed). */
  flush() {
    const all = this.#spans;
    this.#spans = [];
    this.#send(all);
    return Promise.all([...this.#posts]).then(() => undefined);
  }

  shutdown() {
    return this.flush();
  }

  #send(spans) {
    for (let i = 0; i < spans.length; i += this.#maxBatchSize) this.#post(spans.slice(i, i + this.#maxBatchSize));
  }

  #post(spans) {
    const controller = new AbortController();
    /** @type {any} */
    const timer = setTimeout(() => controller.abort(new Error(`no answer in ${this.#timeoutMs} ms`)), this.#timeoutMs);
    const post = (async () => {
      const body = __otlpBody(spans, this.#serviceName ?? 'wasm-agent');
      const res = await fetch(this.#url, {
        method: 'POST',
        headers: { ...this.#headers, 'content-type': 'application/json' },
        body,
        signal: controller.signal,
      });
      await res.arrayBuffer().catch(() => {});
      if (!res.ok) throw new Error(`the collector answered ${res.status}`);
    })()
      .catch((e) => {
        // Said once per exporter; the spans are dropped and the run is never affected.
        if (!this.#warned) {
          this.#warned = true;
          console.error(`wasm-agent: OtlpExporter could not post spans to ${this.#url}: ${e?.message ?? e}`);
        }
      })
      .finally(() => {
        clearTimeout(timer);
        this.#posts.delete(post);
      });
    this.#posts.add(post);
  }
}
