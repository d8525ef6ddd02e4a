// A node:test reporter for scripts/run-tests.mjs: for each test file, the time its top-level tests took, one JSON
// line per file at the end. run-tests.mjs names the slowest, so what makes CI slow is seen in every run (CI must stay
// well inside 20 minutes on 2 cores). The time leaves out the file's load and its process's start and end (after
// hooks); a file whose process failed as a whole (it exited non-zero, or did not load) is reported by the runner as
// one test named by its path, whose time, from its process's start, is taken instead.
export default async function* fileTimes(source) {
  const tests = new Map();
  const whole = new Map();
  for await (const ev of source) {
    if ((ev.type !== 'test:pass' && ev.type !== 'test:fail') || ev.data.nesting !== 0 || !ev.data.file) continue;
    const ms = ev.data.details?.duration_ms ?? 0;
    if (ev.data.name === ev.data.file) whole.set(ev.data.file, ms);
    else tests.set(ev.data.file, (tests.get(ev.data.file) ?? 0) + ms);
  }
  for (const file of new Set([...tests.keys(), ...whole.keys()])) yield JSON.stringify({ file, ms: Math.round(whole.get(file) ?? tests.get(file)) }) + '\n';
}
