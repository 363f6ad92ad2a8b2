//! The date templates print (`strftime_now`), from a clock the caller can
//! replace so renderings are reproducible. The calendar and the formatting
//! are chrono's. No time-zone database: the caller that wants local time
//! passes its UTC offset.

use std::fmt::Write;
use std::sync::Arc;

use chrono::{Datelike, NaiveDate, NaiveDateTime, Timelike};

/// A moment as a calendar and a wall clock show it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DateTime {
    pub year: i32,
    /// 1..=12
    pub month: u32,
    /// 1..=31
    pub day: u32,
    pub hour: u32,
    pub minute: u32,
    pub second: u32,
}

/// Where `strftime_now` reads the time.
pub type Clock = Arc<dyn Fn() -> DateTime + Send + Sync>;

/// The system clock, in UTC.
pub fn system_clock() -> Clock {
    Arc::new(DateTime::now_utc)
}

/// A clock stopped at `at` (tests, reproducible prompts).
pub fn fixed_clock(at: DateTime) -> Clock {
    Arc::new(move || at)
}

impl DateTime {
    pub fn new(year: i32, month: u32, day: u32, hour: u32, minute: u32, second: u32) -> Self {
        Self {
            year,
            month,
            day,
            hour,
            minute,
            second,
        }
    }

    /// The calendar time `unix_seconds` after the epoch, shifted by `utc_offset_seconds`.
    pub fn from_unix(unix_seconds: i64, utc_offset_seconds: i32) -> Self {
        let local = unix_seconds.saturating_add(i64::from(utc_offset_seconds));
        let at = chrono::DateTime::from_timestamp(local, 0).unwrap_or_default();
        Self::from_chrono(at.naive_utc())
    }

    pub fn now_utc() -> Self {
        Self::from_chrono(chrono::Utc::now().naive_utc())
    }

    fn from_chrono(at: NaiveDateTime) -> Self {
        Self::new(
            at.year(),
            at.month(),
            at.day(),
            at.hour(),
            at.minute(),
            at.second(),
        )
    }

    /// This moment for chrono; `None` for a date no calendar has (month 13).
    fn to_chrono(self) -> Option<NaiveDateTime> {
        NaiveDate::from_ymd_opt(self.year, self.month, self.day)?.and_hms_opt(
            self.hour,
            self.minute,
            self.second,
        )
    }

    /// 0 = Monday … 6 = Sunday.
    pub fn weekday(&self) -> usize {
        self.to_chrono()
            .map_or(0, |at| at.weekday().num_days_from_monday() as usize)
    }

    /// Day of the year, 1..=366.
    pub fn ordinal(&self) -> i64 {
        self.to_chrono().map_or(0, |at| i64::from(at.ordinal()))
    }

    /// C's `strftime` in the C locale, for the common directives (`%Y %m %d
    /// %H %M %S %y %b %h %B %a %A %j %p %I %e %F %T %%`), formatted by
    /// chrono; other directives, and every directive of a date no calendar
    /// has, pass through as written.
    pub fn strftime(&self, format: &str) -> String {
        let Some(at) = self.to_chrono() else {
            return format.to_string();
        };
        let mut out = String::new();
        let mut chars = format.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            match chars.next() {
                Some(d) if DIRECTIVES.contains(d) => {
                    // One directive chrono knows: formatting cannot fail.
                    let _ = write!(out, "{}", at.format(&format!("%{d}")));
                }
                Some(other) => {
                    out.push('%');
                    out.push(other);
                }
                None => out.push('%'),
            }
        }
        out
    }
}

/// The directives [`DateTime::strftime`] formats: those C's locale and
/// chrono spell alike.
const DIRECTIVES: &str = "YymdeHIpMSjbhBaAFT%";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_time_becomes_the_calendar_date() {
        // 2025-03-14T09:26:53Z
        let t = DateTime::from_unix(1_741_944_413, 0);
        assert_eq!(t, DateTime::new(2025, 3, 14, 9, 26, 53));
        assert_eq!(t.weekday(), 4); // a Friday
        assert_eq!(
            DateTime::from_unix(0, -3600),
            DateTime::new(1969, 12, 31, 23, 0, 0)
        );
        assert_eq!(
            DateTime::from_unix(951_782_400, 0),
            DateTime::new(2000, 2, 29, 0, 0, 0)
        );
    }

    #[test]
    fn strftime_spells_dates_as_the_c_locale() {
        let t = DateTime::new(2025, 3, 4, 15, 6, 7);
        assert_eq!(t.strftime("%Y-%m-%d"), "2025-03-04");
        assert_eq!(t.strftime("%d %b %Y"), "04 Mar 2025");
        assert_eq!(t.strftime("%B %d, %Y"), "March 04, 2025");
        assert_eq!(
            t.strftime("%a %A %j %I%p %e %F %T %% %q"),
            "Tue Tuesday 063 03PM  4 2025-03-04 15:06:07 % %q"
        );
    }

    /// The outputs of the hand-written calendar this module had before
    /// chrono, for dates around the edges it handled (leap days, centuries,
    /// before the epoch, negative offsets).
    #[test]
    fn chrono_gives_the_hand_written_calendars_outputs() {
        let cases = [
            (
                0,
                0,
                "1970-01-01 00:00:00 Thu Thursday 001 12AM  1 Jan January 70",
            ),
            (
                -1,
                0,
                "1969-12-31 23:59:59 Wed Wednesday 365 11PM 31 Dec December 69",
            ),
            (
                951_782_400,
                0,
                "2000-02-29 00:00:00 Tue Tuesday 060 12AM 29 Feb February 00",
            ),
            (
                4_107_456_000,
                0,
                "2100-02-28 00:00:00 Sun Sunday 059 12AM 28 Feb February 00",
            ),
            (
                1_741_944_413,
                19_800,
                "2025-03-14 14:56:53 Fri Friday 073 02PM 14 Mar March 25",
            ),
            (
                1_735_689_599,
                -3_600,
                "2024-12-31 22:59:59 Tue Tuesday 366 10PM 31 Dec December 24",
            ),
            (
                -2_208_988_800,
                0,
                "1900-01-01 00:00:00 Mon Monday 001 12AM  1 Jan January 00",
            ),
        ];
        for (unix, offset, want) in cases {
            let t = DateTime::from_unix(unix, offset);
            assert_eq!(
                t.strftime("%F %T %a %A %j %I%p %e %b %B %y"),
                want,
                "{unix}"
            );
        }
        assert_eq!(DateTime::new(2025, 3, 4, 0, 0, 0).strftime("100%"), "100%");
        assert_eq!(DateTime::new(2025, 13, 4, 0, 0, 0).strftime("%Y"), "%Y");
    }
}
