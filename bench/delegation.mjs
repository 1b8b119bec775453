// One delegation round trip (SPEC §18) against calling the sub-agent directly, on the local
// model server: `node bench/delegation.mjs [--runs 30] [--n 200]` after `./x build`.
//
// - direct: `researcher.stream('go')` on `deltas:N`, from the call to its `finish` chunk;
// - delegated: a supervisor whose model (`supervisor:researcher:go`) calls agent-researcher; from
//   the supervisor's `tool-call` chunk to its `tool-result` (the same sub-agent run, plus
//   building it, forwarding each of its chunks as `tool-output`, and the result).
// The difference of the medians is what delegation adds (target: ≤ 1 ms plus the sub-agent's own
// time). Each mode checks that the sub-agent's N deltas arrived.

import { Agent } from '../pkg/index.node.js';
import { startModelServer } from '../tests/server/model-server.mjs';

const arg = (name, dflt) => {
  const at = process.argv.indexOf(`--${name}`);
  return at > 0 ? Number(process.argv[at + 1]) : dflt;
};
const RUNS = arg('runs', 30);
const N = arg('n', 200);

const server = await startModelServer({ port: 0 });
const model = (script) => ({ id: `openai/${script}`, url: server.url, apiKey: 'bench', api: 'chat' });
const researcher = new Agent({ id: 'researcher', instructions: 'You research.', model: model(`deltas:${N}`) });
const supervisor = new Agent({ id: 'boss', instructions: 'You supervise.', model: model('supervisor:researcher:go'), agents: { researcher } });

async function direct() {
  const t0 = performance.now();
  const out = await researcher.stream('go');
  let deltas = 0;
  for await (const c of out.fullStream) {
    if (c.type === 'text-delta') deltas++;
    if (c.type === 'finish') {
      const ms = performance.now() - t0;
      if (deltas !== N) throw new Error(`direct: ${deltas} deltas, expected ${N}`);
      return ms;
    }
  }
  throw new Error('direct: no finish');
}

async function delegated() {
  const out = await supervisor.stream('go');
  let t0;
  let ms;
  let deltas = 0;
  for await (const c of out.fullStream) {
    if (c.type === 'tool-call') t0 = performance.now();
    if (c.type === 'tool-output' && c.payload.output.type === 'text-delta') deltas++;
    if (c.type === 'tool-result') ms = performance.now() - t0;
  }
  if (deltas !== N || ms === undefined) throw new Error(`delegated: ${deltas} deltas, expected ${N}`);
  return ms;
}

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
};

await direct();
await delegated();
const times = { direct: [], delegated: [] };
for (let i = 0; i < RUNS; i++) {
  times.direct.push(await direct());
  times.delegated.push(await delegated());
}
const d = median(times.direct);
const g = median(times.delegated);
console.log(`sub-agent of ${N} deltas, ${RUNS} runs each (medians)`);
console.log(`  direct     ${d.toFixed(2)} ms  (call → finish)`);
console.log(`  delegated  ${g.toFixed(2)} ms  (tool-call → tool-result)`);
console.log(`  added      ${(g - d).toFixed(2)} ms per delegation (target ≤ 1 ms)`);
await server.close();
