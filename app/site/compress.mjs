// Brotli copies of the site's files (run by app/site/compress.py at `kvlab build-site`).
//
//   node app/site/compress.mjs < jobs.json
//
// jobs.json: [{"file": PATH, "gunzip": false, "quality": 11, "windows": [24]}, ...]. Writes PATH.br,
// the smallest of the copies made with each window (log2 of bytes), when it is smaller than PATH;
// with "gunzip", PATH is a gzip file and PATH.br holds its content (decompressed), brotli-compressed.
// Prints the number of files written. Python's standard library has no brotli; Node's zlib has it
// built in. zlib.brotliCompress runs on libuv's thread pool, so the files compress in parallel.
import fs from "node:fs";
import zlib from "node:zlib";

const jobs = JSON.parse(fs.readFileSync(0, "utf-8"));
const { BROTLI_PARAM_QUALITY, BROTLI_PARAM_LGWIN, BROTLI_PARAM_SIZE_HINT, BROTLI_MAX_WINDOW_BITS } = zlib.constants;

const brotli = (data, quality, window) => new Promise((resolve, reject) => zlib.brotliCompress(data, {
  params: { [BROTLI_PARAM_QUALITY]: quality, [BROTLI_PARAM_LGWIN]: window, [BROTLI_PARAM_SIZE_HINT]: data.length },
}, (err, out) => (err ? reject(err) : resolve(out))));

async function one({ file, gunzip, quality, windows }) {
  const served = fs.readFileSync(file);
  const data = gunzip ? zlib.gunzipSync(served) : served;
  // A browser decodes windows up to 24 bits (16 MB, BROTLI_MAX_WINDOW_BITS); larger ones are refused here.
  if (windows.some((w) => w > BROTLI_MAX_WINDOW_BITS)) throw new Error(`${file}: a window over ${BROTLI_MAX_WINDOW_BITS} bits`);
  const copies = await Promise.all(windows.map((w) => brotli(data, quality, w)));
  const packed = copies.reduce((a, b) => (b.length < a.length ? b : a));
  if (packed.length >= served.length) return 0;
  fs.writeFileSync(file + ".br", packed);
  return 1;
}

// Largest first, so the longest jobs start at once.
jobs.sort((a, b) => fs.statSync(b.file).size - fs.statSync(a.file).size);
const written = await Promise.all(jobs.map(one));
console.log(written.reduce((a, b) => a + b, 0));
