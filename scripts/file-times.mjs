// A node:test reporter for scripts/run-tests.mjs: for each test file, the time its top-level tests took (the file's
// load and its process's start are not in it), one JSON line per file at the end. run-tests.mjs names the slowest,
// so what makes CI slow is seen in every run (CI must stay well inside 20 minutes on 2 cores).
export default async function* fileTimes(source) {
  const byFile = new Map();
  for await (const ev of source) {
    if ((ev.type !== 'test:pass' && ev.type !== 'test:fail') || ev.data.nesting !== 0 || !ev.data.file) continue;
    byFile.set(ev.data.file, (byFile.get(ev.data.file) ?? 0) + (ev.data.details?.duration_ms ?? 0));
  }
  for (const [file, ms] of byFile) yield JSON.stringify({ file, ms: Math.round(ms) }) + '\n';
}
