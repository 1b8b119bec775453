// What the benchmarks share for their reports: medians and plain-text tables.

/** The median of the finite values (NaN when there are none). */
export function median(values) {
  const s = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (!s.length) return NaN;
  const mid = s.length >> 1;
  return s.length % 2 ? s[mid] : (s[mid - 1] + s[mid]) / 2;
}

/** `rows` (the first is the header) as aligned columns: the first `left` ones left-aligned. */
export function table(rows, left = 1) {
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => String(r[c]).length)));
  return rows
    .map((r, i) => {
      const line = r.map((cell, c) => (c < left ? String(cell).padEnd(widths[c]) : String(cell).padStart(widths[c]))).join('  ');
      return i === 0 ? `${line}\n${widths.map((w) => '-'.repeat(w)).join('  ')}` : line;
    })
    .join('\n');
}

/**
 * Runs every mode `runs` times at every size, each run a fresh child (`runChild(mode, url, n)`)
 * against one local model server, rotating which mode goes first in a round so none always
 * runs first or last. Returns the runs that worked and the ones that failed.
 */
export async function runAlternating({ modes, sizes, runs, runChild, startModelServer }) {
  const width = Math.max(...modes.map((m) => m.length)) + 1;
  const results = [];
  const failures = [];
  const server = await startModelServer({ host: '127.0.0.1' });
  try {
    for (const n of sizes) {
      for (let r = 0; r < runs; r++) {
        for (let k = 0; k < modes.length; k++) {
          const mode = modes[(r + k) % modes.length];
          const result = await runChild(mode, server.url, n);
          if (result.error) {
            failures.push({ n, run: r + 1, ...result });
            console.error(`\nFAILED: ${mode} N=${n} run ${r + 1}: ${result.error}${result.stderr ? `\n${result.stderr}` : ''}\n`);
            continue;
          }
          results.push({ n, run: r + 1, ...result });
          const ms = Number.isFinite(result.totalMs) ? result.totalMs.toFixed(1) : '-';
          process.stdout.write(`  N=${n} run ${r + 1}/${runs} ${mode.padEnd(width)} ${ms} ms\n`);
        }
      }
    }
  } finally {
    await server.close();
  }
  return { results, failures };
}
