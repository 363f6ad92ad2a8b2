//! What the benchmark examples share: percentiles and memory figures.
#![allow(dead_code)] // each example uses its own subset

/// The `p` quantile (0..=1) of `v`, nearest rank.
pub(crate) fn percentile(mut v: Vec<f64>, p: f64) -> f64 {
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * p).round() as usize]
}

/// A `/proc/self/status` figure in MB (0 where there is none).
fn status_mb(key: &str) -> f64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with(key))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(0.0, |kb| kb / 1024.0)
}

/// Peak RSS of this process (since the last [`reset_peak_rss`]), in MB.
pub(crate) fn peak_rss_mb() -> f64 {
    status_mb("VmHWM:")
}

/// Resident memory now, in MB.
pub(crate) fn rss_mb() -> f64 {
    status_mb("VmRSS:")
}

/// Linux resets VmHWM to the current RSS on "5" (proc(5), clear_refs).
pub(crate) fn reset_peak_rss() {
    let _ = std::fs::write("/proc/self/clear_refs", "5");
}
