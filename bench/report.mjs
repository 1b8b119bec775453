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
