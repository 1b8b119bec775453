// The model server's deterministic embeddings endpoints (OpenAI/Mistral and Google shapes).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { startModelServer } from './model-server.mjs';
import { embedText } from './embeddings.mjs';

let server;
before(async () => {
  server = await startModelServer({ port: 0 });
});
after(() => server.close());

const cosine = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0);

async function post(path, body) {
  const res = await fetch(`${new URL(server.url).origin}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
  return { status: res.status, body: await res.json() };
}

test('texts that share words are close, others are not', () => {
  const question = embedText('What do validator nodes do?');
  const solana = embedText('Tell me about solana validators');
  const cooking = embedText('How long should I knead bread dough before baking?');
  assert.ok(cosine(question, solana) > 0.3, `validators: ${cosine(question, solana)}`);
  assert.equal(cosine(question, cooking), 0);
  assert.deepEqual(embedText('Solana validators'), embedText('solana validators'), 'deterministic, case-blind');
  assert.ok(Math.abs(cosine(solana, solana) - 1) < 1e-9, 'unit length');
});

test('POST /v1/embeddings answers in the OpenAI shape with the requested dimensions', async () => {
  const r = await post('/v1/embeddings', { model: 'text-embedding-3-small', input: ['solana validators', 'bread'], dimensions: 64 });
  assert.equal(r.status, 200);
  assert.equal(r.body.object, 'list');
  assert.deepEqual(r.body.data.map((d) => d.index), [0, 1]);
  assert.equal(r.body.data[0].embedding.length, 64);
  assert.deepEqual(r.body.data[0].embedding, embedText('solana validators', 64));
  const one = await post('/v1/embeddings', { model: 'mistral-embed', input: 'hello there' });
  assert.equal(one.body.data.length, 1);
  assert.equal(one.body.data[0].embedding.length, 256);
  const bad = await post('/v1/embeddings', { model: 'x', input: [1] });
  assert.equal(bad.status, 400);
  assert.match(bad.body.error.message, /input/);
  const down = await post('/v1/embeddings', { model: 'error-500', input: ['x'] });
  assert.equal(down.status, 500);
});

test('POST …:batchEmbedContents answers in the Google shape', async () => {
  const r = await post('/v1beta/models/text-embedding-004:batchEmbedContents', {
    requests: [
      { model: 'models/text-embedding-004', content: { parts: [{ text: 'validator nodes' }] }, outputDimensionality: 32 },
      { model: 'models/text-embedding-004', content: { parts: [{ text: 'pasta' }] } },
    ],
  });
  assert.equal(r.status, 200);
  assert.equal(r.body.embeddings.length, 2);
  assert.equal(r.body.embeddings[0].values.length, 32);
  assert.equal(r.body.embeddings[1].values.length, 256);
  const requests = await (await fetch(`${new URL(server.url).origin}/__requests`)).json();
  assert.ok(requests.some((q) => q.path.endsWith(':batchEmbedContents')), 'recorded like model requests');
});
