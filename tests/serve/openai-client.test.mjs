// quill-serve through the official OpenAI client (npm `openai`, pinned in
// package.json), against a server harness.py started on a loopback port
// (QUILL_SERVER_URL, with --api-key QUILL_API_KEY and a chat template).
// Expected values come from other paths through the server (streamed vs
// whole, /tokenize counts, n = 1 vs sample 0, solo vs under load), never from
// hard-coded generations.
import OpenAI from 'openai';
import assert from 'node:assert/strict';
import { test } from 'node:test';

const base = process.env.QUILL_SERVER_URL;
const key = process.env.QUILL_API_KEY;
const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: key, maxRetries: 0 });
const model = 'stories';

async function tokenCount(text, addSpecial = true) {
  const r = await fetch(`${base}/tokenize`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${key}` },
    body: JSON.stringify({ content: text, add_special: addSpecial }),
  });
  assert.equal(r.status, 200);
  return (await r.json()).tokens.length;
}

async function streamedCompletion(params) {
  const stream = await client.completions.create({ ...params, stream: true });
  const texts = {};
  const finish = {};
  for await (const chunk of stream)
    for (const c of chunk.choices) {
      texts[c.index] = (texts[c.index] ?? '') + c.text;
      if (c.finish_reason) finish[c.index] = c.finish_reason;
    }
  return { texts, finish };
}

async function expectApiError(promise, status, check = () => {}) {
  await assert.rejects(promise, (e) => {
    assert.ok(e instanceof OpenAI.APIError, `not an APIError: ${e}`);
    assert.equal(e.status, status, `status ${e.status}: ${e.message}`);
    assert.equal(typeof e.error?.message, 'string');
    assert.equal(typeof e.error?.type, 'string');
    check(e);
    return true;
  });
}

test('models lists the artifact', async () => {
  const list = await client.models.list();
  assert.equal(list.data.length, 1);
  assert.equal(list.data[0].object, 'model');
  assert.equal(list.data[0].owned_by, 'quill');
});

test('a completion: text, usage, finish_reason length', async () => {
  const prompt = 'Once upon a time';
  const r = await client.completions.create({ model, prompt, max_tokens: 24, temperature: 0, ignore_eos: true });
  assert.equal(r.object, 'text_completion');
  assert.equal(r.choices.length, 1);
  assert.ok(r.choices[0].text.length > 0);
  assert.equal(r.choices[0].finish_reason, 'length');
  assert.equal(r.usage.completion_tokens, 24);
  assert.equal(r.usage.prompt_tokens, await tokenCount(prompt));
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens + 24);
});

test('greedy is deterministic and streaming reassembles the same text', async () => {
  const params = { model, prompt: 'The little dog', max_tokens: 40, temperature: 0.8, seed: 1234 };
  const whole = await client.completions.create(params);
  const again = await client.completions.create(params);
  assert.equal(again.choices[0].text, whole.choices[0].text);
  const streamed = await streamedCompletion(params);
  assert.equal(streamed.texts[0], whole.choices[0].text);
  assert.equal(streamed.finish[0], whole.choices[0].finish_reason);
});

test('chat completion, whole and streamed, with usage in the stream', async () => {
  const params = {
    model, messages: [{ role: 'system', content: 'You tell stories.' }, { role: 'user', content: 'A story about a cat' }],
    max_tokens: 32, temperature: 0.7, seed: 99,
  };
  const whole = await client.chat.completions.create(params);
  assert.equal(whole.object, 'chat.completion');
  assert.equal(whole.choices[0].message.role, 'assistant');
  assert.ok(['stop', 'length'].includes(whole.choices[0].finish_reason));
  const stream = await client.chat.completions.create({ ...params, stream: true, stream_options: { include_usage: true } });
  let text = '';
  let role = null;
  let usage = null;
  for await (const chunk of stream) {
    assert.equal(chunk.object, 'chat.completion.chunk');
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) {
      if (c.delta.role) role = c.delta.role;
      text += c.delta.content ?? '';
    }
  }
  assert.equal(role, 'assistant');
  assert.equal(text, whole.choices[0].message.content);
  assert.deepEqual(usage, whole.usage);
});

test('n choices: indexes, sample 0 is the n = 1 run', async () => {
  const params = { model, prompt: 'Lily and Tom', max_tokens: 20, temperature: 1.0, seed: 5 };
  const one = await client.completions.create(params);
  const many = await client.completions.create({ ...params, n: 3 });
  assert.deepEqual(many.choices.map((c) => c.index).sort(), [0, 1, 2]);
  const byIndex = Object.fromEntries(many.choices.map((c) => [c.index, c.text]));
  assert.equal(byIndex[0], one.choices[0].text);
  const streamed = await streamedCompletion({ ...params, n: 3 });
  for (const i of [0, 1, 2]) assert.equal(streamed.texts[i], byIndex[i]);
  const completionTokens = many.usage.completion_tokens;
  assert.ok(completionTokens >= 3 && completionTokens <= 60);
});

test('chat logprobs: one entry per token, bytes decode to the token', async () => {
  const r = await client.chat.completions.create({
    model, messages: [{ role: 'user', content: 'Hi' }], max_tokens: 12, temperature: 0,
    logprobs: true, top_logprobs: 3,
  });
  const content = r.choices[0].logprobs.content;
  assert.equal(content.length, r.usage.completion_tokens);
  for (const entry of content) {
    assert.ok(entry.logprob <= 0);
    assert.equal(entry.top_logprobs.length, 3);
    for (let k = 1; k < 3; ++k) assert.ok(entry.top_logprobs[k - 1].logprob >= entry.top_logprobs[k].logprob);
    // Greedy: the chosen token is the most likely one.
    assert.equal(entry.logprob, entry.top_logprobs[0].logprob);
    const decoded = Buffer.from(entry.bytes).toString('utf8');
    if (!decoded.includes('\uFFFD')) assert.equal(entry.token, decoded);
  }
  const joined = Buffer.concat(content.map((e) => Buffer.from(e.bytes))).toString('utf8');
  assert.ok(joined.startsWith(r.choices[0].message.content.slice(0, 4)) || r.choices[0].message.content.length === 0);
});

test('completion logprobs: the legacy shape', async () => {
  const r = await client.completions.create({ model, prompt: 'One day', max_tokens: 10, temperature: 0, logprobs: 2 });
  const lp = r.choices[0].logprobs;
  assert.equal(lp.tokens.length, r.usage.completion_tokens);
  assert.equal(lp.token_logprobs.length, lp.tokens.length);
  assert.equal(lp.top_logprobs.length, lp.tokens.length);
  assert.equal(lp.text_offset.length, lp.tokens.length);
  for (const v of lp.token_logprobs) assert.ok(v <= 0);
  for (let i = 1; i < lp.text_offset.length; ++i) assert.ok(lp.text_offset[i] >= lp.text_offset[i - 1]);
});

test('stop strings end the text before them', async () => {
  const base = { model, prompt: 'Once upon a time', max_tokens: 60, temperature: 0, ignore_eos: true };
  const free = await client.completions.create(base);
  const text = free.choices[0].text;
  // A word the free run writes after its start: the stopped run ends before it.
  const words = text.split(' ').filter((w) => w.length >= 3);
  assert.ok(words.length >= 3, text);
  const stop = ' ' + words[2];
  const cut = text.indexOf(stop);
  const stopped = await client.completions.create({ ...base, stop: [stop, 'zzzz'] });
  assert.equal(stopped.choices[0].text, text.slice(0, cut));
  assert.equal(stopped.choices[0].finish_reason, 'stop');
  assert.ok(!stopped.choices[0].text.includes(stop));
  const streamed = await streamedCompletion({ ...base, stop });
  assert.equal(streamed.texts[0], text.slice(0, cut));
  assert.equal(streamed.finish[0], 'stop');
});

test('penalties and logit_bias change the sampling chain', async () => {
  const base = { model, prompt: 'The sun was', max_tokens: 30, temperature: 0 };
  const plain = await client.completions.create(base);
  const banned = await client.completions.create({ ...base, logit_bias: Object.fromEntries([...Array(512).keys()].filter((i) => i >= 3 && i % 2 === 0).map((i) => [String(i), -100])) });
  assert.notEqual(banned.choices[0].text, plain.choices[0].text);
  const penalized = await client.completions.create({ ...base, frequency_penalty: 2, presence_penalty: 2, repetition_penalty: 1.5 });
  assert.ok(typeof penalized.choices[0].text === 'string');
});

test('a seeded request gets its solo text under concurrent load', async () => {
  const params = { model, prompt: 'There was a cat', max_tokens: 40, temperature: 0.9, seed: 424242 };
  const solo = (await client.completions.create(params)).choices[0].text;
  const noise = [];
  for (let i = 0; i < 16; ++i)
    noise.push(client.completions.create({ model, prompt: `Story number ${i} about a ${i % 2 ? 'dog' : 'bird'}`, max_tokens: 30 + i, temperature: 1, seed: i }));
  const loaded = [];
  for (let i = 0; i < 4; ++i) loaded.push(client.completions.create(params));
  const results = await Promise.all([...noise, ...loaded]);
  for (const r of results.slice(16)) assert.equal(r.choices[0].text, solo);
});

test('errors: status and OpenAI error object', async () => {
  await expectApiError(client.completions.create({ model, prompt: 'x', max_tokens: -1 }), 400, (e) => assert.equal(e.error.param, 'max_tokens'));
  await expectApiError(client.completions.create({ model, prompt: 'x', temperature: -1 }), 400);
  await expectApiError(client.completions.create({ model, prompt: 'x', n: 1000 }), 400);
  await expectApiError(client.completions.create({ model, prompt: 'x', top_p: 1.5 }), 400);
  await expectApiError(client.chat.completions.create({ model, messages: [] }), 400);
  await expectApiError(client.completions.create({ model, prompt: 'word '.repeat(600) }), 400, (e) => assert.equal(e.code, 'context_length_exceeded'));
  await expectApiError(client.completions.create({ model, prompt: 'x', n: 17 }), 400);
  const noKey = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'wrong', maxRetries: 0 });
  await expectApiError(noKey.models.list(), 401, (e) => assert.equal(e.code, 'invalid_api_key'));
  const r = await fetch(`${base}/v1/models`);
  assert.equal(r.status, 401);
  const bad = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: '{"prompt": "x",' });
  assert.equal(bad.status, 400);
  assert.equal(typeof (await bad.json()).error.message, 'string');
  const missing = await fetch(`${base}/v1/nothing`, { headers: { Authorization: `Bearer ${key}` } });
  assert.equal(missing.status, 404);
  const health = await fetch(`${base}/health`);
  assert.equal(health.status, 200);
});

test('tokenize and detokenize round-trip', async () => {
  const text = 'Once upon a time, there was a little girl.';
  const r = await fetch(`${base}/tokenize`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: JSON.stringify({ content: text, with_pieces: true }) });
  const { tokens } = await r.json();
  assert.ok(tokens.length > 3);
  assert.equal(tokens.map((t) => t.piece).join('').trim(), text);
  const d = await fetch(`${base}/detokenize`, { method: 'POST', headers: { Authorization: `Bearer ${key}` }, body: JSON.stringify({ tokens: tokens.map((t) => t.id) }) });
  assert.equal((await d.json()).content, text);
});

test('streamed chunks never split a UTF-8 character', async () => {
  // Favour the byte tokens of 0xC3, 0xA9 ("é" together) and 0xE2: the model
  // then emits whole characters and broken sequences mixed.
  const params = { model: 'stories', prompt: 'Once', max_tokens: 40, temperature: 1, seed: 3, ignore_eos: true,
    logit_bias: { [3 + 0xc3]: 100, [3 + 0xa9]: 100, [3 + 0xe2]: 100 } };
  const whole = await client.completions.create(params);
  const r = await fetch(`${base}/v1/completions`, { method: 'POST', headers: { Authorization: `Bearer ${key}` },
    body: JSON.stringify({ ...params, stream: true }) });
  const raw = Buffer.from(await r.arrayBuffer());
  const strict = new TextDecoder('utf-8', { fatal: true });
  let text = '';
  for (const event of strict.decode(raw).split('\n\n')) {
    if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
    const piece = JSON.parse(event.slice(6)).choices[0]?.text ?? '';
    // A lone surrogate would mean a character split across chunks.
    assert.ok(!/[\uD800-\uDFFF]/.test(piece.replace(/[\uD800-\uDBFF][\uDC00-\uDFFF]/g, '')));
    text += piece;
  }
  assert.equal(text, whole.choices[0].text);
  assert.ok(text.includes('\u00e9') || text.includes('\uFFFD'), text);
});
