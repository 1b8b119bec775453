//! Int8 copies of normalised vectors with an exact error bound, so a store can rank thousands of
//! vectors from a quarter of their bytes and re-read in full only those that could still be in
//! the top K. Exact: a vector whose bound keeps it out cannot beat the K-th best.
//!
//! A vector `v` (length 1) is kept as `codes[i] = round(v[i] / scale)` with `scale = max|v| / 127`
//! and `err = |v − scale·codes|`; for a unit query `q`, Cauchy–Schwarz gives
//! `|q·v − scale·(q·codes)| ≤ err`.

use std::collections::HashSet;

/// Slack for the f32 rounding of the sums themselves.
const SLACK: f32 = 1e-4;

/// Appends the codes of `v` (normalised) to `codes`; returns `(scale, err)`.
pub fn quantize(v: &[f32], codes: &mut Vec<i8>) -> (f32, f32) {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 && max.is_finite() { max / 127.0 } else { 0.0 };
    let mut err2 = 0f64;
    for x in v {
        let c = if scale > 0.0 { (x / scale).round().clamp(-127.0, 127.0) } else { 0.0 };
        codes.push(c as i8);
        let d = (*x - c * scale) as f64;
        err2 += d * d;
    }
    (scale, err2.sqrt() as f32)
}

/// `scale · (q · codes)`: the approximate dot product of `q` with a quantized vector.
pub fn approx_dot(q: &[f32], codes: &[i8], scale: f32) -> f32 {
    let n = q.len().min(codes.len());
    let (cq, cc) = (q[..n].chunks_exact(8), codes[..n].chunks_exact(8));
    let tail: f32 = cq.remainder().iter().zip(cc.remainder()).map(|(x, c)| x * *c as f32).sum();
    let mut acc = [0f32; 8];
    for (x, c) in cq.zip(cc) {
        for ((s, x), c) in acc.iter_mut().zip(x).zip(c) {
            *s += x * *c as f32;
        }
    }
    (acc.iter().sum::<f32>() + tail) * scale
}

/// Picks which vectors must be re-read exactly. Entries are offered with their approximate score
/// and bound; `sure` says the entry is known to be the stored vector's current copy (an id seen
/// once and still stored), so its lower bound may raise the cut. Others are kept if their upper
/// bound reaches the cut, like every entry.
pub struct Candidates {
    k: usize,
    threshold: Option<f32>,
    /// The K best lower bounds of sure entries, best first.
    lows: Vec<f32>,
    /// (upper bound, id) of every entry offered.
    all: Vec<(f32, String)>,
}

impl Candidates {
    pub fn new(k: usize, threshold: Option<f32>) -> Candidates {
        Candidates { k, threshold, lows: Vec::with_capacity(k.min(1024) + 1), all: Vec::new() }
    }

    /// The lowest upper bound that can still matter.
    fn cut(&self) -> f32 {
        let by_k = if self.lows.len() >= self.k { self.lows.last().copied().unwrap_or(f32::NEG_INFINITY) } else { f32::NEG_INFINITY };
        self.threshold.map_or(by_k, |t| by_k.max(t))
    }

    pub fn offer(&mut self, approx: f32, err: f32, sure: bool, id: impl FnOnce() -> String) {
        if self.k == 0 || approx.is_nan() {
            return;
        }
        let (high, low) = (approx + err + SLACK, approx - err - SLACK);
        if sure {
            let at = self.lows.partition_point(|s| *s >= low);
            if at < self.k {
                self.lows.insert(at, low);
                self.lows.truncate(self.k);
            }
        }
        if high >= self.cut() {
            self.all.push((high, id()));
        }
    }

    /// The ids whose upper bound reaches the final cut, best bound first, each once.
    pub fn into_ids(self) -> Vec<String> {
        let cut = self.cut();
        let mut keep: Vec<(f32, String)> = self.all.into_iter().filter(|(h, _)| *h >= cut).collect();
        keep.sort_by(|a, b| b.0.total_cmp(&a.0));
        let mut seen = HashSet::new();
        keep.into_iter().filter_map(|(_, id)| seen.insert(id.clone()).then_some(id)).collect()
    }
}

#[cfg(test)]
#[path = "quantized_tests.rs"]
mod tests;
