// Load benchmark for quill-serve (prints figures; fails only on errors or
// leaked KV blocks, never on speed). N concurrent streaming clients for D
// seconds, each sending one request after another; half of them share a
// long common prefix (a system prompt), as chat users of one app do.
//   node load.mjs URL CLIENTS SECONDS MAX_TOKENS
import http from 'node:http';

const [url, clientsArg = '64', secondsArg = '60', maxTokensArg = '64'] = process.argv.slice(2);
const clients = Number(clientsArg), seconds = Number(secondsArg), maxTokens = Number(maxTokensArg);
const target = new URL(url);
const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
const prefix = 'Once upon a time, in a small town by the sea, there lived a girl who loved stories. ';

const ttft = [], itl = [];
let completed = 0, errors = 0, tokens = 0;
const firstErrors = [];

function streamOnce(body) {
  return new Promise((resolve) => {
    const start = performance.now();
    let last = null, buffer = '', usage = null;
    const req = http.request({ host: target.hostname, port: target.port, path: '/v1/completions', method: 'POST', agent,
      headers: { 'Content-Type': 'application/json' } }, (res) => {
      if (res.statusCode !== 200) {
        let text = '';
        res.on('data', (d) => { text += d; });
        res.on('end', () => resolve({ ok: false, why: `${res.statusCode} ${text.slice(0, 200)}` }));
        return;
      }
      res.setEncoding('utf8');
      res.on('data', (d) => {
        buffer += d;
        let cut;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const event = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          if (!event.startsWith('data: ') || event === 'data: [DONE]') continue;
          const chunk = JSON.parse(event.slice(6));
          if (chunk.usage) usage = chunk.usage;
          if (!chunk.choices?.length || chunk.choices[0].finish_reason) continue;
          const now = performance.now();
          if (last === null) ttft.push(now - start); else itl.push(now - last);
          last = now;
        }
      });
      res.on('end', () => resolve(usage ? { ok: true, tokens: usage.completion_tokens } : { ok: false, why: 'no usage chunk' }));
    });
    req.on('error', (e) => resolve({ ok: false, why: String(e) }));
    req.end(JSON.stringify(body));
  });
}

async function client(k, deadline) {
  for (let i = 0; performance.now() < deadline; ++i) {
    const shared = k % 2 === 0;
    const prompt = (shared ? prefix : '') + `Story ${k}-${i}: the ${['dog', 'cat', 'bird', 'fish'][i % 4]}`;
    const r = await streamOnce({ prompt, max_tokens: maxTokens, temperature: 0.8, seed: k * 1000 + i,
      ignore_eos: true, stream: true, stream_options: { include_usage: true } });
    if (r.ok) { ++completed; tokens += r.tokens; } else { ++errors; if (firstErrors.length < 5) firstErrors.push(r.why); }
  }
}

function percentile(values, p) {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))];
}

const start = performance.now();
const deadline = start + seconds * 1000;
await Promise.all([...Array(clients).keys()].map((k) => client(k, deadline)));
const elapsed = (performance.now() - start) / 1000;
agent.destroy();
await new Promise((r) => setTimeout(r, 300));
const metrics = await (await fetch(`${url}/metrics`)).text();
const used = Number(/^quill_kv_blocks_used (\d+)/m.exec(metrics)?.[1]);
console.log(JSON.stringify({
  clients, seconds: Number(elapsed.toFixed(1)), max_tokens: maxTokens, requests_completed: completed, errors,
  generated_tokens_per_s: Number((tokens / elapsed).toFixed(1)),
  ttft_ms_p50: Number(percentile(ttft, 50).toFixed(1)), ttft_ms_p99: Number(percentile(ttft, 99).toFixed(1)),
  itl_ms_p50: Number(percentile(itl, 50).toFixed(2)), itl_ms_p99: Number(percentile(itl, 99).toFixed(2)),
  kv_blocks_used_after: used,
}));
if (firstErrors.length) console.error('errors:', firstErrors);
if (errors > 0 || used !== 0) process.exit(1);
