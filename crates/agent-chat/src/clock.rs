//! The date templates print (`strftime_now`), from a clock the caller can
//! replace so renderings are reproducible. No time-zone database: the caller
//! that wants local time passes its UTC offset.

use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

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

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

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
        let local = unix_seconds + i64::from(utc_offset_seconds);
        let days = local.div_euclid(86_400);
        let secs = local.rem_euclid(86_400) as u32;
        let (year, month, day) = civil_from_days(days);
        Self::new(year, month, day, secs / 3600, secs / 60 % 60, secs % 60)
    }

    pub fn now_utc() -> Self {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or(0);
        Self::from_unix(secs, 0)
    }

    /// 0 = Monday … 6 = Sunday.
    pub fn weekday(&self) -> usize {
        // 1970-01-01 was a Thursday (3).
        (days_from_civil(self.year, self.month, self.day) + 3).rem_euclid(7) as usize
    }

    /// Day of the year, 1..=366.
    pub fn ordinal(&self) -> i64 {
        days_from_civil(self.year, self.month, self.day) - days_from_civil(self.year, 1, 1) + 1
    }

    /// C's `strftime` in the C locale, for the common directives (`%Y %m %d
    /// %H %M %S %y %b %B %a %A %j %p %I %e %F %T %%`); others pass through.
    pub fn strftime(&self, format: &str) -> String {
        let mut out = String::new();
        let mut chars = format.chars();
        while let Some(c) = chars.next() {
            if c != '%' {
                out.push(c);
                continue;
            }
            let month = MONTHS[(self.month as usize).clamp(1, 12) - 1];
            let weekday = WEEKDAYS[self.weekday()];
            match chars.next() {
                Some('Y') => out.push_str(&self.year.to_string()),
                Some('y') => out.push_str(&format!("{:02}", self.year.rem_euclid(100))),
                Some('m') => out.push_str(&format!("{:02}", self.month)),
                Some('d') => out.push_str(&format!("{:02}", self.day)),
                Some('e') => out.push_str(&format!("{:2}", self.day)),
                Some('H') => out.push_str(&format!("{:02}", self.hour)),
                Some('I') => out.push_str(&format!("{:02}", (self.hour + 11) % 12 + 1)),
                Some('p') => out.push_str(if self.hour < 12 { "AM" } else { "PM" }),
                Some('M') => out.push_str(&format!("{:02}", self.minute)),
                Some('S') => out.push_str(&format!("{:02}", self.second)),
                Some('j') => out.push_str(&format!("{:03}", self.ordinal())),
                Some('b') | Some('h') => out.push_str(&month[..3]),
                Some('B') => out.push_str(month),
                Some('a') => out.push_str(&weekday[..3]),
                Some('A') => out.push_str(weekday),
                Some('F') => out.push_str(&self.strftime("%Y-%m-%d")),
                Some('T') => out.push_str(&self.strftime("%H:%M:%S")),
                Some('%') => out.push('%'),
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

/// Days since 1970-01-01 → (year, month, day), proleptic Gregorian
/// (Howard Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i32, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year as i32, month, day)
}

fn days_from_civil(year: i32, month: u32, day: u32) -> i64 {
    let y = i64::from(year) - i64::from(month <= 2);
    let era = y.div_euclid(400);
    let yoe = y.rem_euclid(400);
    let m = i64::from(month);
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

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
}
