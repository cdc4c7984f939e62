//! The people directory, managed: the same operations for `strands people
//! …` on the store and for `/api/v1/people` (admins), each one change of
//! the store's directory with its `access` audit entry
//! ([`crate::store::Store::update_people`]), and [`Cache`], the copy a
//! service keeps for listing what waits for whom.
//!
//! The rules that use the directory (who may answer, self-approval, one
//! person counts once) are the gate's and the intake's
//! ([`crate::gate::authorize`], [`crate::model::Session::accept`]); the
//! person model and its checks are [`crate::model::person`]. This module
//! only changes the directory.

pub mod delegations;
pub mod import;
pub mod passkeys;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::hub::tokens::access;
use crate::model::person::{Directory, Person, PersonError};
use crate::store::Store;

pub use import::{parse, Row};

/// A change to some fields of a person; a field not given is kept, an
/// empty one (`""`, `[]`) is cleared.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PersonPatch {
    pub slack: Option<String>,
    pub teams: Option<String>,
    pub email: Option<String>,
    pub tokens: Option<Vec<String>>,
    pub unix: Option<String>,
    #[serde(default)]
    pub oidc: Option<String>,
    #[serde(default)]
    pub amqp: Option<String>,
    pub groups: Option<Vec<String>>,
}

impl PersonPatch {
    /// `person` with this change.
    pub fn apply(&self, mut person: Person) -> Person {
        let set = |field: &mut Option<String>, v: &Option<String>| {
            if let Some(v) = v {
                *field = Some(v.clone()).filter(|v| !v.trim().is_empty());
            }
        };
        set(&mut person.slack, &self.slack);
        set(&mut person.teams, &self.teams);
        set(&mut person.email, &self.email);
        set(&mut person.unix, &self.unix);
        set(&mut person.oidc, &self.oidc);
        set(&mut person.amqp, &self.amqp);
        if let Some(t) = &self.tokens {
            person.tokens = t.clone();
        }
        if let Some(g) = &self.groups {
            person.groups = g.clone();
        }
        person
    }

    pub fn is_empty(&self) -> bool {
        self == &PersonPatch::default()
    }
}

/// What an import did.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Imported {
    pub added: usize,
    pub changed: usize,
    pub unchanged: usize,
}

/// Adds `person` (refused when the name is taken or an identity is
/// someone else's), by `by` through `via`.
pub async fn add(store: &Store, person: Person, by: &str, via: &str) -> Result<Person> {
    let person = person.normalized()?;
    if !person.delegations.is_empty() {
        return Err(Error::Usage(format!(
            "a new person comes without delegations; set one with `strands people delegate {} --to NAME --from DAY --until DAY`",
            person.name
        )));
    }
    if !person.passkeys.is_empty() {
        return Err(Error::Usage(format!(
            "a new person comes without passkeys; {} registers one on the web inbox's passkeys page",
            person.name
        )));
    }
    let name = person.name.clone();
    let detail = format!("added person `{name}`");
    let p = person.clone();
    store
        .update_people(
            &move |now| Ok(Directory::new(now)?.with(p.clone(), false)?.into_people()),
            &access(by, via, detail, store.now()),
        )
        .await?;
    Ok(person)
}

/// Changes the fields of person `name` that `patch` gives.
pub async fn edit(
    store: &Store,
    name: &str,
    patch: &PersonPatch,
    by: &str,
    via: &str,
) -> Result<Person> {
    if patch.is_empty() {
        return Err(Error::Usage(format!(
            "nothing to change for `{name}` (give --slack, --teams, --email, --token, --unix or --group)"
        )));
    }
    let owned = name.to_string();
    let patch2 = patch.clone();
    let after = store
        .update_people(
            &move |now| {
                let d = Directory::new(now)?;
                let p = d
                    .get(&owned)
                    .cloned()
                    .ok_or_else(|| PersonError::Unknown(owned.clone()))?;
                Ok(d.with(patch2.apply(p), true)?.into_people())
            },
            &access(by, via, format!("changed person `{name}`"), store.now()),
        )
        .await?;
    after
        .into_iter()
        .find(|p| p.name == name)
        .ok_or_else(|| Error::Internal(format!("person `{name}` vanished")))
}

/// Removes person `name`.
pub async fn remove(store: &Store, name: &str, by: &str, via: &str) -> Result<()> {
    let owned = name.to_string();
    store
        .update_people(
            &move |now| Ok(Directory::new(now)?.without(&owned)?.into_people()),
            &access(by, via, format!("removed person `{name}`"), store.now()),
        )
        .await?;
    Ok(())
}

/// Imports `rows` read from `source`: each person added, or replaced
/// whole when the name is there; the others kept. All or nothing: a bad
/// row is refused naming `source:line`, and nothing changes. Importing
/// the same rows again changes nothing.
pub async fn import(
    store: &Store,
    source: &str,
    rows: Vec<Row>,
    by: &str,
    via: &str,
) -> Result<Imported> {
    let detail = format!("imported {} people from {source}", rows.len());
    let counts = Arc::new(Mutex::new(Imported::default()));
    let seen = Arc::clone(&counts);
    let source = source.to_string();
    store
        .update_people(
            &move |now| {
                let (next, counted) = import::merge(&source, now, &rows)?;
                *seen.lock().unwrap_or_else(|p| p.into_inner()) = counted;
                Ok(next)
            },
            &access(by, via, detail.clone(), store.now()),
        )
        .await?;
    let counted = counts.lock().unwrap_or_else(|p| p.into_inner()).clone();
    Ok(counted)
}

/// The directory a service holds for listing what waits for whom, read
/// again from the store when older than [`Cache::TTL`] or changed here.
/// The intake never uses it: it reads the store's directory per answer.
#[derive(Default)]
pub struct Cache {
    state: Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    directory: Arc<Directory>,
    read_at: Option<Instant>,
    reading: bool,
}

impl Cache {
    /// How long a read directory is used before it is read again.
    pub const TTL: Duration = Duration::from_secs(5);

    /// The directory as last read, and whether it should be read again
    /// (only one caller is told so at a time).
    pub fn get(&self) -> (Arc<Directory>, bool) {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let stale = s.read_at.is_none_or(|t| t.elapsed() >= Self::TTL) && !s.reading;
        if stale {
            s.reading = true;
        }
        (Arc::clone(&s.directory), stale)
    }

    /// Reads the directory from `store` now.
    pub async fn refresh(&self, store: &Store) -> Result<Arc<Directory>> {
        let read = store.directory().await;
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        s.reading = false;
        let d = Arc::new(read?);
        s.directory = Arc::clone(&d);
        s.read_at = Some(Instant::now());
        Ok(d)
    }
}
