// Brotli copies of the site's files (run by app/site/compress.py at `kvlab build-site`).
//
//   node app/site/compress.mjs QUALITY LARGE_BYTES LARGE_QUALITY < jobs.json
//
// Files of LARGE_BYTES or more are compressed at LARGE_QUALITY. jobs.json: [{"file": PATH, "gunzip": false}, ...]. Writes PATH.br when it is smaller than PATH;
// with "gunzip", PATH is a gzip file and PATH.br holds its content (decompressed), brotli-compressed.
// Prints the number of files written. Python's standard library has no brotli; Node's zlib has it
// built in. zlib.brotliCompress runs on libuv's thread pool, so the files compress in parallel.
import fs from "node:fs";
import zlib from "node:zlib";

const [quality, largeBytes, largeQuality] = process.argv.slice(2).map(Number);
const jobs = JSON.parse(fs.readFileSync(0, "utf-8"));
const { BROTLI_PARAM_QUALITY, BROTLI_PARAM_LGWIN, BROTLI_PARAM_SIZE_HINT, BROTLI_MAX_WINDOW_BITS } = zlib.constants;

async function one({ file, gunzip }) {
  const served = fs.readFileSync(file);
  const data = gunzip ? zlib.gunzipSync(served) : served;
  const packed = await new Promise((resolve, reject) => zlib.brotliCompress(data, {
    // The largest window a browser decodes (24 bits, 16 MB): Pyodide's WebAssembly and the snapshot are larger.
    params: { [BROTLI_PARAM_QUALITY]: data.length >= largeBytes ? largeQuality : quality, [BROTLI_PARAM_LGWIN]: BROTLI_MAX_WINDOW_BITS, [BROTLI_PARAM_SIZE_HINT]: data.length },
  }, (err, out) => (err ? reject(err) : resolve(out))));
  if (packed.length >= served.length) return 0;
  fs.writeFileSync(file + ".br", packed);
  return 1;
}

// Largest first, so the longest jobs start at once.
jobs.sort((a, b) => fs.statSync(b.file).size - fs.statSync(a.file).size);
const written = await Promise.all(jobs.map(one));
console.log(written.reduce((a, b) => a + b, 0));
