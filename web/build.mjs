// SPDX-License-Identifier: Apache-2.0
// build.mjs: builds the dashboard. `node web/build.mjs OUTDIR` (from any directory) bundles
// src/app.js (with the lazily loaded pages as their own chunks) and src/app.css with
// esbuild, minified, as ES modules with a content hash in every name, and writes them flat
// into OUTDIR with index.html (web/index.html, its `/static/app.js` and `/static/app.css`
// replaced by the hashed names). The same sources give the same bytes: trainyardd embeds
// them (scripts/embed-assets.py) and serves them as /static/NAME, cached for good.
import { mkdir, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const webDir = path.dirname(fileURLToPath(import.meta.url));

function fail(msg) {
  process.stderr.write(`build.mjs: ${msg}\n`);
  process.exit(1);
}

if (process.argv.length !== 3 || process.argv[2].startsWith('-'))
  fail('usage: node web/build.mjs OUTDIR');
const outDir = path.resolve(process.argv[2]);

let esbuild;
try {
  esbuild = await import('esbuild');
} catch (e) {
  fail(`esbuild is not installed in ${webDir}/node_modules (${e.code || e.message}): ` +
       'run scripts/install-web-deps.sh (npm ci in web/)');
}

// Names esbuild gives: NAME-HASH.js / .css, HASH of 8 characters of A-Z and 0-9.
const HASHED = /^[A-Za-z0-9_.]+-[A-Z0-9]{8}\.(js|css)$/;

const result = await esbuild.build({
  absWorkingDir: webDir,
  entryPoints: ['src/app.js', 'src/app.css'],
  bundle: true,
  minify: true,
  splitting: true,
  format: 'esm',
  target: ['es2020', 'chrome100', 'firefox100', 'safari15'],
  charset: 'utf8',
  legalComments: 'eof',
  entryNames: '[name]-[hash]',
  chunkNames: '[name]-[hash]',
  assetNames: '[name]-[hash]',
  outdir: 'out', // not written (write: false): only to name the outputs
  write: false,
  metafile: true,
  logLevel: 'warning',
}).catch(() => fail('esbuild failed (the errors are above)'));

// Which output is the entry of app.js / app.css, and which chunks app.js imports at once.
const outs = result.metafile.outputs;
let appJs, appCss;
for (const [file, meta] of Object.entries(outs)) {
  if (meta.entryPoint === 'src/app.js') appJs = file;
  if (meta.entryPoint === 'src/app.css') appCss = file;
}
if (!appJs || !appCss)
  fail('esbuild gave no output for src/app.js or src/app.css');
const preload = outs[appJs].imports
  .filter((i) => i.kind === 'import-statement' && !i.external)
  .map((i) => path.basename(i.path));

let html = await readFile(path.join(webDir, 'index.html'), 'utf8');
for (const [from, file] of [['/static/app.js', appJs], ['/static/app.css', appCss]]) {
  if (!html.includes(`"${from}"`))
    fail(`web/index.html does not refer to "${from}"`);
  html = html.replace(`"${from}"`, `"/static/${path.basename(file)}"`);
}
// The chunks app.js needs before it runs are fetched alongside it, not after it.
const links = preload.map((n) => `<link rel="modulepreload" href="/static/${n}">\n`).join('');
html = html.replace('<!-- modulepreload -->\n', links);

await mkdir(outDir, { recursive: true });
const written = new Set(['index.html']);
for (const f of result.outputFiles) {
  const name = path.basename(f.path);
  if (name.endsWith('.map'))
    continue;
  written.add(name);
  await writeFile(path.join(outDir, name), f.contents);
}
await writeFile(path.join(outDir, 'index.html'), html);
// Outputs of an earlier build into the same directory would be embedded too: remove them.
for (const name of await readdir(outDir)) {
  if (HASHED.test(name) && !written.has(name))
    await rm(path.join(outDir, name));
}
