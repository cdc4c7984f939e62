//! `current_time`: the date and time, in UTC or the host's local time, as
//! ISO 8601, a Unix timestamp or words — strands-cli's tool, same arguments
//! and the same text (`2024-01-15T10:30:45.123456+00:00`,
//! `January 15, 2024 at 10:30:45 AM UTC`).

use chrono::{DateTime, Local, Timelike, Utc};
use serde_json::{json, Value};

use super::str_arg;
use crate::tools::ToolResult;

pub(super) fn spec() -> (&'static str, Value) {
    (
        "Get the current date and time in various formats and timezones",
        json!({
            "type": "object",
            "properties": {
                "format": {
                    "type": "string",
                    "enum": ["iso", "unix", "human"],
                    "description": "Output format: 'iso' (ISO 8601), 'unix' (timestamp), 'human' (readable); default iso"
                },
                "timezone": {
                    "type": "string",
                    "enum": ["utc", "local"],
                    "description": "Timezone: 'utc' or 'local' (default: utc)"
                }
            },
            "additionalProperties": false
        }),
    )
}

pub(super) fn describe(args: &Value) -> String {
    format!(
        "read the clock ({}, {})",
        str_arg(args, "timezone").unwrap_or("utc"),
        str_arg(args, "format").unwrap_or("iso")
    )
}

/// The time `now` (the engine's clock) as `args` ask.
pub(super) fn run(args: &Value, now: DateTime<Utc>) -> ToolResult {
    let format = str_arg(args, "format").unwrap_or("iso");
    let zone = str_arg(args, "timezone").unwrap_or("utc");
    match (zone, format) {
        ("utc" | "local", "iso" | "unix" | "human") => {}
        ("utc" | "local", other) => {
            return ToolResult::error(format!(
                "Error: Invalid format '{other}'. Use 'iso', 'unix', or 'human'."
            ))
        }
        (other, _) => {
            return ToolResult::error(format!(
                "Error: Invalid timezone '{other}'. Use 'utc' or 'local'."
            ))
        }
    }
    ToolResult::ok(at(now, zone == "local", format))
}

/// `now` as strands-cli shows it; local time is naive (no offset), as
/// Python's `datetime.now()` is.
fn at(now: DateTime<Utc>, local: bool, format: &str) -> String {
    let micros = now.nanosecond() / 1000 % 1_000_000;
    let frac = if micros == 0 { "" } else { "%.6f" };
    match (format, local) {
        ("unix", _) => now.timestamp().to_string(),
        ("human", false) => now.format("%B %d, %Y at %I:%M:%S %p UTC").to_string(),
        ("human", true) => now
            .with_timezone(&Local)
            .format("%B %d, %Y at %I:%M:%S %p")
            .to_string(),
        (_, false) => now
            .format(&format!("%Y-%m-%dT%H:%M:%S{frac}+00:00"))
            .to_string(),
        (_, true) => now
            .with_timezone(&Local)
            .naive_local()
            .format(&format!("%Y-%m-%dT%H:%M:%S{frac}"))
            .to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::TimeZone;

    #[test]
    fn formats_as_strands_cli() {
        let t = Utc
            .with_ymd_and_hms(2024, 1, 15, 10, 30, 45)
            .single()
            .expect("a time");
        assert_eq!(at(t, false, "iso"), "2024-01-15T10:30:45+00:00");
        let t2 = t + chrono::TimeDelta::microseconds(123_456);
        assert_eq!(at(t2, false, "iso"), "2024-01-15T10:30:45.123456+00:00");
        assert_eq!(at(t, false, "unix"), "1705314645");
        assert_eq!(at(t, false, "human"), "January 15, 2024 at 10:30:45 AM UTC");
        assert!(!at(t, true, "iso").contains('+'), "local time is naive");
    }

    #[test]
    fn bad_arguments_are_errors() {
        let r = run(
            &json!({"timezone": "Europe/Paris"}),
            crate::clock::test_epoch(),
        );
        assert!(r.is_error);
        assert_eq!(
            r.content,
            "Error: Invalid timezone 'Europe/Paris'. Use 'utc' or 'local'."
        );
        let r = run(&json!({}), crate::clock::test_epoch());
        assert!(
            !r.is_error && r.content == "2025-01-15T10:00:00+00:00",
            "{}",
            r.content
        );
    }
}
