// One node job per mode: what a service does at start (modules, addon, port, files) and its
// routine run-to-run noise (libuv's thread pool, epoll, timers, temp names, children).
'use strict';
const fs = require('fs');
const path = require('path');
const [mode, base] = process.argv.slice(2);
const out = (name) => path.join(base, 'out', name);

async function main() {
  switch (mode) {
    case 'cache': {  // a content cache made on demand (mkdir -p), one object written into it
      const dir = path.join(base, 'cache', 'v1', 'objects');
      fs.mkdirSync(dir, { recursive: true });
      fs.writeFileSync(path.join(dir, 'ab12'), 'object\n');
      break;
    }
    case 'addon': {  // a native addon built beside the service
      const addon = require(path.join(base, 'build', 'Release', 'tb23.node'));
      fs.writeFileSync(out('answer'), String(addon.answer()) + '\n');
      break;
    }
    case 'listen': {  // the service's port, one request of its own, then stop
      const http = require('http');
      const port = Number(fs.readFileSync(path.join(base, 'port'), 'utf8'));
      const server = http.createServer((req, res) => res.end('ok'));
      server.on('error', (e) => { console.error(`listen: ${e.message}`); process.exit(1); });
      await new Promise((r) => server.listen(port, '127.0.0.1', r));
      await new Promise((r) => http.get({ host: '127.0.0.1', port, agent: false }, (res) => { res.resume(); res.on('end', r); }));
      server.close();
      break;
    }
    case 'report': {  // the report, written through libuv's thread pool
      const rows = await Promise.all([...Array(8).keys()].map((i) => fs.promises.readFile(path.join(base, 'in', `part${i}.csv`), 'utf8')));
      await fs.promises.writeFile(out('report.csv'), rows.join(''));
      break;
    }
    case 'bigwrite': {  // a large export, written in chunks through the thread pool
      const fh = await fs.promises.open(out('export.bin'), 'w');
      const chunk = Buffer.alloc(64 * 1024, 120);
      for (let i = 0; i < 6; i++) await fh.write(chunk);
      await fh.close();
      break;
    }
    case 'config': {  // the service's JSON config
      const conf = JSON.parse(fs.readFileSync(path.join(base, 'conf', 'app.json'), 'utf8'));
      fs.writeFileSync(out('workers'), String(conf.workers) + '\n');
      break;
    }
    case 'swap': {  // deploy: the new release directory renamed over the current one
      fs.renameSync(path.join(base, 'next'), path.join(base, 'current'));
      break;
    }
    case 'pool': {  // forty reads at once: libuv's four workers finish them in varying order
      const names = fs.readdirSync(path.join(base, 'in')).sort();
      const sizes = await Promise.all(names.map(async (n) => (await fs.promises.readFile(path.join(base, 'in', n))).length));
      fs.writeFileSync(out('sizes'), sizes.join('\n') + '\n');
      break;
    }
    case 'http': {  // a server on a kernel-assigned port and five clients over epoll
      const http = require('http');
      const server = http.createServer((req, res) => setTimeout(() => res.end(req.url), Math.random() * 20));
      await new Promise((r) => server.listen(0, '127.0.0.1', r));
      const port = server.address().port;
      const got = await Promise.all([...Array(5).keys()].map((i) => new Promise((r) => http.get({ host: '127.0.0.1', port, path: `/${i}` }, (res) => { let b = ''; res.on('data', (d) => { b += d; }); res.on('end', () => r(b)); }))));
      server.close();
      fs.writeFileSync(out('answers'), got.join(' ') + ` port=${port}\n`);
      break;
    }
    case 'tempdir': {  // scratch directories and files with random names
      const crypto = require('crypto');
      for (let i = 0; i < 3; i++) {
        const dir = fs.mkdtempSync(path.join(base, 'tmp', 'job-'));
        const f = path.join(dir, crypto.randomBytes(6).toString('hex') + '.part');
        fs.writeFileSync(f, crypto.randomBytes(1000));
        fs.rmSync(dir, { recursive: true });
      }
      break;
    }
    case 'spawn': {  // children: pids vary, exit order of the async ones too
      const cp = require('child_process');
      cp.execFileSync('/bin/true');
      await Promise.all([0.01, 0.03, 0.02].map((s) => new Promise((r) => cp.execFile('/bin/sleep', [String(s)], r))));
      fs.writeFileSync(out('spawned'), `${process.pid}\n`);
      break;
    }
    case 'timers': {  // timers racing: which fires first varies
      const order = [];
      await Promise.all([...Array(6).keys()].map((i) => new Promise((r) => setTimeout(() => { order.push(i); r(); }, Math.random() * 30))));
      fs.writeFileSync(out('order'), order.join(',') + '\n');
      break;
    }
    default:
      throw new Error(`unknown mode ${mode}`);
  }
}

main().catch((e) => { console.error(`${mode}: ${e.message}`); process.exit(1); });
