//! Human durations ("3 h 20 min"): how long a gate has waited, as every
//! door shows it — the web inbox's pages and Slack's App Home word it the
//! same, so it lives here rather than in one door for the other to borrow.

/// "3 h 20 min" for a number of seconds (the sign is dropped).
pub fn duration(secs: i64) -> String {
    let s = secs.unsigned_abs();
    if s < 60 {
        format!("{s} s")
    } else if s < 3600 {
        format!("{} min", s / 60)
    } else if s < 86_400 {
        format!("{} h {} min", s / 3600, (s % 3600) / 60)
    } else {
        format!("{} d {} h", s / 86_400, (s % 86_400) / 3600)
    }
}

/// How a reminder names itself in every room: "Reminder 2 of 3", or for
/// reminder 0 (`remind_before`) "Last reminder before the timeout".
pub fn reminder(n: u32, of: u32) -> String {
    if n == 0 {
        "Last reminder before the timeout".into()
    } else {
        format!("Reminder {n} of {of}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_read_as_people_say_them() {
        assert_eq!(duration(59), "59 s");
        assert_eq!(duration(3700), "1 h 1 min");
        assert_eq!(duration(-120), "2 min");
        assert_eq!(duration(90_000), "1 d 1 h");
        assert_eq!(reminder(2, 3), "Reminder 2 of 3");
        assert_eq!(reminder(0, 0), "Last reminder before the timeout");
    }
}
