use super::*;
use crate::core::memory::vectors::{dot, normalized};

fn pseudo(n: usize, seed: &mut u32) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *seed ^= *seed << 13;
            *seed ^= *seed >> 17;
            *seed ^= *seed << 5;
            (*seed as f32 / u32::MAX as f32) - 0.5
        })
        .collect()
}

#[test]
fn the_bound_holds_for_every_vector() {
    let mut seed = 7;
    let q = normalized(pseudo(300, &mut seed));
    for _ in 0..200 {
        let v = normalized(pseudo(300, &mut seed));
        let mut codes = Vec::new();
        let (scale, err) = quantize(&v, &mut codes);
        assert_eq!(codes.len(), 300);
        let exact = dot(&q, &v);
        let approx = approx_dot(&q, &codes, scale);
        assert!((exact - approx).abs() <= err + SLACK, "exact {exact} approx {approx} err {err}");
        assert!(err < 0.05, "err {err}");
    }
}

#[test]
fn a_zero_vector_quantizes_to_zero() {
    let mut codes = Vec::new();
    assert_eq!(quantize(&[0.0; 4], &mut codes), (0.0, 0.0));
    assert_eq!(codes, vec![0; 4]);
}

#[test]
fn candidates_always_include_the_exact_top_k() {
    let mut seed = 99;
    let q = normalized(pseudo(64, &mut seed));
    let vs: Vec<Vec<f32>> = (0..2000).map(|_| normalized(pseudo(64, &mut seed))).collect();
    let mut c = Candidates::new(4, None);
    for (i, v) in vs.iter().enumerate() {
        let mut codes = Vec::new();
        let (scale, err) = quantize(v, &mut codes);
        c.offer(approx_dot(&q, &codes, scale), err, true, || format!("v{i}"));
    }
    let ids = c.into_ids();
    let mut exact: Vec<(f32, usize)> = vs.iter().enumerate().map(|(i, v)| (dot(&q, v), i)).collect();
    exact.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (_, i) in &exact[..4] {
        assert!(ids.contains(&format!("v{i}")), "v{i} missing from {ids:?}");
    }
    assert!(ids.len() < 200, "{} candidates of 2000", ids.len());
}

#[test]
fn unsure_entries_do_not_raise_the_cut() {
    // A stale copy claiming 0.9 must not push out an entry whose bound reaches 0.5.
    let mut c = Candidates::new(1, None);
    c.offer(0.9, 0.0, false, || "stale".into());
    c.offer(0.5, 0.01, true, || "real".into());
    c.offer(0.2, 0.01, true, || "low".into());
    assert_eq!(c.into_ids(), vec!["stale".to_string(), "real".to_string()]);
}

#[test]
fn the_threshold_drops_entries_that_cannot_reach_it() {
    let mut c = Candidates::new(10, Some(0.5));
    c.offer(0.52, 0.05, true, || "a".into());
    c.offer(0.40, 0.05, true, || "b".into());
    assert_eq!(c.into_ids(), vec!["a".to_string()]);
}
