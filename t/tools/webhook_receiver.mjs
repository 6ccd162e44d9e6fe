// The application's end of signin_events for the tests: every POST is checked with the
// standardwebhooks package (the Standard Webhooks reference library for JavaScript), as an
// application would, under the right secret and under a wrong one (which must refuse it).
//
// Usage:
//   node t/tools/webhook_receiver.mjs --port P --secret whsec_... --wrong-secret whsec_... --log FILE
//
// Each POST is one JSON line appended to FILE: {id, timestamp, signature, verified, wrong_key_refused,
// why, status, body (the raw text)}. Prints "ready" on stdout once listening.
//
// Test control, JSON bodies, under /_test/ only:
//   POST /_test/answer {statuses: [500, 500, ...], hang: N}  the next POSTs are answered with these
//                       statuses (then 204), after N that are never answered at all
import * as fs from 'node:fs';
import * as http from 'node:http';
import { parseArgs } from 'node:util';

import { Webhook } from 'standardwebhooks';

const { values: opt } = parseArgs({
  options: {
    port: { type: 'string' },
    secret: { type: 'string' },
    'wrong-secret': { type: 'string' },
    log: { type: 'string' },
  },
});

const right = new Webhook(opt.secret);
const wrong = new Webhook(opt['wrong-secret']);
let statuses = [];
let hang = 0;

function read(req) {
  return new Promise((resolve, reject) => {
    const parts = [];
    req.on('data', (c) => parts.push(c));
    req.on('end', () => resolve(Buffer.concat(parts).toString('utf8')));
    req.on('error', reject);
  });
}

const server = http.createServer(async (req, res) => {
  const body = await read(req);
  if (req.url === '/_test/answer') {
    const o = JSON.parse(body);
    statuses = o.statuses ?? [];
    hang = o.hang ?? 0;
    res.writeHead(204).end();
    return;
  }
  const line = {
    id: req.headers['webhook-id'] ?? null,
    timestamp: req.headers['webhook-timestamp'] ?? null,
    signature: req.headers['webhook-signature'] ?? null,
    verified: false,
    wrong_key_refused: false,
    why: null,
    status: null,
    body,
  };
  try {
    right.verify(body, req.headers);
    line.verified = true;
  } catch (e) {
    line.why = String(e && e.message);
  }
  try {
    wrong.verify(body, req.headers);
  } catch {
    line.wrong_key_refused = true;
  }
  if (hang > 0) {
    hang -= 1;
    line.status = 'hung';
    fs.appendFileSync(opt.log, JSON.stringify(line) + '\n');
    return;  // never answered: the sender's worker is killed meanwhile
  }
  line.status = statuses.length ? statuses.shift() : 204;
  fs.appendFileSync(opt.log, JSON.stringify(line) + '\n');
  res.writeHead(line.status, { 'content-length': 0 }).end();
});

server.listen(Number(opt.port), '127.0.0.1', () => process.stdout.write('ready\n'));
