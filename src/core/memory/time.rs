//! ISO 8601 times (`2026-11-30T15:09:26.123Z`) from milliseconds since the epoch. Fixed width,
//! so stored times sort as strings in time order (IndexedDB indexes compare them that way).

/// Formats `ms` (UTC). Times before 1970 or after 9999 are clamped.
pub fn iso_time(ms: f64) -> String {
    let ms = if ms.is_finite() { ms.clamp(0.0, 253_402_300_799_999.0) as u64 } else { 0 };
    let (secs, milli) = (ms / 1000, ms % 1000);
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    let fields = [(y as u64, 4, '-'), (m as u64, 2, '-'), (d as u64, 2, 'T'), (rem / 3600, 2, ':'), (rem % 3600 / 60, 2, ':'), (rem % 60, 2, '.'), (milli, 3, 'Z')];
    let mut s = String::with_capacity(24);
    for (n, width, sep) in fields {
        let digits = n.to_string();
        for _ in digits.len()..width {
            s.push('0');
        }
        s.push_str(&digits);
        s.push(sep);
    }
    s
}

/// Days since 1970-01-01 → (year, month, day), Howard Hinnant's algorithm.
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::iso_time;

    #[test]
    fn formats_like_date_to_iso_string() {
        assert_eq!(iso_time(0.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(1_796_052_000_123.0), "2026-11-30T15:20:00.123Z");
        assert_eq!(iso_time(951_782_400_000.0), "2000-02-29T00:00:00.000Z");
        assert_eq!(iso_time(1_709_164_800_000.0), "2024-02-29T00:00:00.000Z");
        assert_eq!(iso_time(-5.0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso_time(f64::NAN), "1970-01-01T00:00:00.000Z");
        assert!(iso_time(1.0) < iso_time(1000.0) && iso_time(999.0) < iso_time(1000.0));
    }
}
