// rs_grpc_client for gRPC for Node (@grpc/grpc-js): the same options and
// output as tests/conformance/grpc_client.cpp, so the conformance tests drive
// both real clients the same way (docs/conformance.md, "gRPC").
//   node grpc_client.js --target HOST:PORT (--service-config FILE | --service-config-json TEXT)
//     [--calls N] [--concurrency C] [--deadline-ms D] [--gap-ms G] [--method /pkg.Svc/M] [--id-prefix P]
// One JSON line per call: {call, request, status, code, message, start_ms, elapsed_ms}.
'use strict';

const fs = require('fs');
const grpc = require('@grpc/grpc-js');

function parseArgs(argv) {
  const o = {
    target: '', serviceConfig: '', method: '/rs.Scripted/Call', idPrefix: 'r',
    calls: 1, concurrency: 1, deadlineMs: 0, gapMs: 0,
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, v] = [argv[i], argv[i + 1]];
    if (v === undefined) throw new Error(`${flag} needs a value`);
    switch (flag) {
      case '--target': o.target = v; break;
      case '--service-config': o.serviceConfig = fs.readFileSync(v, 'utf8'); break;
      case '--service-config-json': o.serviceConfig = v; break;
      case '--method': o.method = v; break;
      case '--id-prefix': o.idPrefix = v; break;
      case '--calls': o.calls = Number(v); break;
      case '--concurrency': o.concurrency = Number(v); break;
      case '--deadline-ms': o.deadlineMs = Number(v); break;
      case '--gap-ms': o.gapMs = Number(v); break;
      default: throw new Error(`unknown option ${flag}`);
    }
  }
  if (!o.target || !(o.calls >= 1) || !(o.concurrency >= 1)) {
    throw new Error('--target and positive --calls/--concurrency are needed');
  }
  return o;
}

function main() {
  let o;
  try {
    o = parseArgs(process.argv.slice(2));
  } catch (e) {
    process.stderr.write(`grpc_client.js: ${e.message}\n`);
    process.exit(2);
  }
  const options = { 'grpc.enable_retries': 1 };
  if (o.serviceConfig) options['grpc.service_config'] = o.serviceConfig;
  const target = o.target.startsWith('ipv4:') ? o.target : `ipv4:${o.target}`;
  let client;
  try {
    client = new grpc.Client(target, grpc.credentials.createInsecure(), options);
  } catch (e) {
    // grpc-js validates the service config when the channel is made.
    process.stderr.write(`grpc_client.js: service config refused by grpc-js: ${e.message}\n`);
    process.exit(3);
  }
  const t0 = process.hrtime.bigint();
  const sinceStart = (t) => Number(t - t0) / 1e6;
  const pass = (b) => b;
  // A call's number is taken when it is scheduled, not when it starts: two
  // answers in one turn of the event loop must not both schedule call N.
  let next = 1;
  let scheduled = 0;
  let done = 0;

  const launch = () => {
    const index = next++;
    const id = `${o.idPrefix}-${index}`;
    const md = new grpc.Metadata();
    md.set('x-rs-request', id);
    const callOptions = {};
    if (o.deadlineMs > 0) callOptions.deadline = new Date(Date.now() + o.deadlineMs);
    const start = process.hrtime.bigint();
    client.makeUnaryRequest(o.method, pass, pass, Buffer.from('x'), md, callOptions, (err) => {
      const end = process.hrtime.bigint();
      const code = err ? err.code : grpc.status.OK;
      process.stdout.write(JSON.stringify({
        call: index, request: id, status: grpc.status[code], code,
        message: err ? err.details : '', start_ms: sinceStart(start),
        elapsed_ms: Number(end - start) / 1e6,
      }) + '\n');
      done++;
      if (scheduled < o.calls) {
        scheduled++;
        setTimeout(launch, o.gapMs);
      } else if (done === o.calls) {
        client.close();
      }
    });
  };
  while (scheduled < o.calls && scheduled < o.concurrency) {
    scheduled++;
    launch();
  }
}

main();
