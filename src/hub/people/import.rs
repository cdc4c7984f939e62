//! `strands people import FILE`: people from a YAML list or a CSV table,
//! each row with the line it came from, so a bad row is refused as
//! `FILE:LINE: why` — and [`merge`], which applies the rows to the stored
//! directory all or nothing.
//!
//! YAML: a list of people, each as `strands people show --json` prints
//! one (`name`, `slack`, `teams`, `email`, `tokens`, `unix`, `groups`).
//! CSV: a header row naming those columns (any order, `name` required);
//! `tokens` and `groups` hold several values separated by `;`.

use serde::{Deserialize, Serialize};

use super::Imported;
use crate::error::{Error, Result};
use crate::model::person::{Directory, Person, PersonError};

/// One person read from a file, with the line it starts on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Row {
    pub line: usize,
    #[schema(value_type = Object)]
    pub person: Person,
}

fn at(source: &str, line: usize, why: impl std::fmt::Display) -> Error {
    Error::Usage(format!("{source}:{line}: {why}; nothing was imported"))
}

/// Reads the people in `text` (from `source`): CSV when `source` ends in
/// `.csv` or the first line is a header starting with `name,`; YAML
/// otherwise.
pub fn parse(source: &str, text: &str) -> Result<Vec<Row>> {
    let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
    if source.to_ascii_lowercase().ends_with(".csv") || first.trim_start().starts_with("name,") {
        parse_csv(source, text)
    } else {
        parse_yaml(source, text)
    }
}

const COLUMNS: [&str; 9] = [
    "name", "slack", "teams", "email", "tokens", "unix", "oidc", "amqp", "groups",
];

fn parse_csv(source: &str, text: &str) -> Result<Vec<Row>> {
    let mut reader = csv::ReaderBuilder::new()
        .trim(csv::Trim::All)
        .flexible(false)
        .from_reader(text.as_bytes());
    let header: Vec<String> = reader
        .headers()
        .map_err(|e| at(source, 1, e))?
        .iter()
        .map(|h| h.to_ascii_lowercase())
        .collect();
    if let Some(h) = header.iter().find(|h| !COLUMNS.contains(&h.as_str())) {
        return Err(at(
            source,
            1,
            format!("unknown column `{h}` (columns: {})", COLUMNS.join(", ")),
        ));
    }
    if !header.iter().any(|h| h == "name") {
        return Err(at(source, 1, "no `name` column"));
    }
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.map_err(|e| {
            let line = e.position().map(|p| p.line() as usize).unwrap_or(0);
            at(source, line, e)
        })?;
        let line = record.position().map(|p| p.line() as usize).unwrap_or(0);
        if record.iter().all(str::is_empty) {
            continue;
        }
        let mut p = Person::default();
        for (h, v) in header.iter().zip(record.iter()) {
            let one = || Some(v.to_string()).filter(|v| !v.is_empty());
            let many = || {
                v.split([';', '|'])
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            };
            match h.as_str() {
                "name" => p.name = v.to_string(),
                "slack" => p.slack = one(),
                "teams" => p.teams = one(),
                "email" => p.email = one(),
                "unix" => p.unix = one(),
                "oidc" => p.oidc = one(),
                "amqp" => p.amqp = one(),
                "tokens" => p.tokens = many(),
                _ => p.groups = many(),
            }
        }
        rows.push(Row { line, person: p });
    }
    Ok(rows)
}

/// The lines the items of a top-level YAML list start on: each `- ` at
/// the list's indentation.
fn item_lines(text: &str) -> Vec<usize> {
    let items: Vec<(usize, usize)> = text
        .lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let t = l.trim_start();
            (t == "-" || t.starts_with("- ")).then(|| (i + 1, l.len() - t.len()))
        })
        .collect();
    let indent = items.iter().map(|(_, d)| *d).min().unwrap_or(0);
    items
        .into_iter()
        .filter(|(_, d)| *d == indent)
        .map(|(l, _)| l)
        .collect()
}

fn parse_yaml(source: &str, text: &str) -> Result<Vec<Row>> {
    let lines = item_lines(text);
    let values: Vec<serde_json::Value> = serde_saphyr::from_str(text).map_err(|e| {
        Error::Usage(format!(
            "{source}: not a list of people ({e}); nothing was imported"
        ))
    })?;
    values
        .into_iter()
        .enumerate()
        .map(|(i, v)| {
            let line = lines.get(i).copied().unwrap_or(0);
            let person: Person = serde_json::from_value(v).map_err(|e| at(source, line, e))?;
            Ok(Row { line, person })
        })
        .collect()
}

/// `now` with `rows` applied (each added, or replaced whole), checked
/// whole; an error names the row (`source:line`) and changes nothing.
pub fn merge(source: &str, now: Vec<Person>, rows: &[Row]) -> Result<(Vec<Person>, Imported)> {
    let mut all = now;
    let mut counted = Imported::default();
    let mut lines: std::collections::HashMap<String, usize> = Default::default();
    for row in rows {
        let p = row
            .person
            .clone()
            .normalized()
            .map_err(|e| at(source, row.line, e))?;
        if let Some(first) = lines.insert(p.name.clone(), row.line) {
            return Err(at(
                source,
                row.line,
                format!(
                    "`{}` is listed twice (lines {first} and {})",
                    p.name, row.line
                ),
            ));
        }
        // Delegations are not imported: a row keeps the stored person's.
        // Nor are passkeys: they are registered in the browser.
        let mut p = p;
        let stored = all.iter().find(|o| o.name == p.name);
        p.delegations = stored.map(|o| o.delegations.clone()).unwrap_or_default();
        p.passkeys = stored.map(|o| o.passkeys.clone()).unwrap_or_default();
        match all.iter_mut().find(|o| o.name == p.name) {
            Some(o) if *o == p => counted.unchanged += 1,
            Some(o) => {
                *o = p;
                counted.changed += 1;
            }
            None => {
                all.push(p);
                counted.added += 1;
            }
        }
    }
    match Directory::new(all) {
        Ok(d) => Ok((d.into_people(), counted)),
        Err(e) => {
            // Name the row that brought the clash in (the last one).
            let key = match &e {
                PersonError::Clash { key, .. } => Some(key.clone()),
                _ => None,
            };
            let line = rows
                .iter()
                .rev()
                .find(|r| {
                    key.as_ref().is_none_or(|k| {
                        r.person
                            .clone()
                            .normalized()
                            .is_ok_and(|p| p.keys().iter().any(|(pk, _)| pk == k))
                    })
                })
                .map(|r| r.line)
                .unwrap_or(0);
            Err(at(source, line, e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CSV: &str = "name,slack,email,groups\nalice,U04ALICE,alice@corp.example,finance;ops\nbob,U04BOB,bob@corp.example,\n";

    #[test]
    fn csv_and_yaml_rows_carry_their_lines() {
        let rows = parse("people.csv", CSV).expect("csv");
        assert_eq!(rows.len(), 2);
        assert_eq!((rows[0].line, rows[1].line), (2, 3));
        assert_eq!(rows[0].person.groups, vec!["finance", "ops"]);
        let yaml = "# people\n- name: alice\n  slack: U04ALICE\n  groups: [finance]\n\n- name: bob\n  email: bob@corp.example\n";
        let rows = parse("people.yaml", yaml).expect("yaml");
        assert_eq!((rows[0].line, rows[1].line), (2, 6));
        assert_eq!(rows[1].person.email.as_deref(), Some("bob@corp.example"));
    }

    #[test]
    fn a_bad_row_is_refused_with_its_line_and_the_same_rows_twice_change_nothing() {
        let bad = "name,email\nalice,alice@corp.example\nbob,not-an-address\n";
        let rows = parse("p.csv", bad).expect("parsed");
        let e = merge("p.csv", Vec::new(), &rows).unwrap_err().to_string();
        assert!(
            e.starts_with("p.csv:3: ") && e.contains("not an email"),
            "{e}"
        );
        let rows = parse("people.csv", CSV).expect("csv");
        let (once, c1) = merge("people.csv", Vec::new(), &rows).expect("first");
        assert_eq!(c1.added, 2);
        let (twice, c2) = merge("people.csv", once.clone(), &rows).expect("again");
        assert_eq!((once, c2.unchanged), (twice, 2));
        let clash = "name,slack\ncarol,U04ALICE\n";
        let e = merge("c.csv", Vec::new(), &[rows[0].clone()])
            .and_then(|(now, _)| merge("c.csv", now, &parse("c.csv", clash)?))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("c.csv:2: ") && e.contains("alice") && e.contains("carol"),
            "{e}"
        );
    }
}
