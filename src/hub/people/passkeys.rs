//! A person's passkeys, managed: added from the web inbox after a
//! registration ceremony, their counter kept after each use, listed and
//! removed by `strands people passkeys` (admins). Each change is one
//! change of the store's directory with its `access` audit entry, as every
//! change of the directory is. The ceremonies themselves are the web
//! door's (`crate::web::passkeys`).

use crate::error::{Error, Result};
use crate::hub::tokens::access;
use crate::model::person::passkey::PasskeyRecord;
use crate::model::person::{Directory, Person, PersonError};
use crate::store::Store;

/// Changes person `name` with `f`, as one change of the directory with
/// its `audit` entry; `f`'s error refuses the change.
async fn change(
    store: &Store,
    name: &str,
    audit: crate::audit::AuditEvent,
    f: impl Fn(&mut Person) -> Result<()> + Send + Sync + 'static,
) -> Result<()> {
    let owned = name.to_string();
    store
        .update_people(
            &move |now| {
                let d = Directory::new(now)?;
                let mut p = d
                    .get(&owned)
                    .cloned()
                    .ok_or_else(|| PersonError::Unknown(owned.clone()))?;
                f(&mut p)?;
                Ok(d.with(p, true)?.into_people())
            },
            &audit,
        )
        .await?;
    Ok(())
}

/// Adds `record` to `person`'s passkeys.
pub async fn add(store: &Store, person: &str, record: PasskeyRecord, via: &str) -> Result<()> {
    let detail = format!(
        "registered passkey {} ({}) for `{person}`",
        record.id, record.label
    );
    change(
        store,
        person,
        access(person, via, detail, store.now()),
        move |p| {
            if p.passkey(&record.id).is_some() {
                return Err(Error::Usage(format!(
                    "passkey {} is already registered",
                    record.id
                )));
            }
            p.passkeys.push(record.clone());
            Ok(())
        },
    )
    .await
}

/// Keeps passkey `id`'s credential after a use (its signature counter).
pub async fn used(
    store: &Store,
    person: &str,
    id: &str,
    credential: serde_json::Value,
    via: &str,
) -> Result<()> {
    let (owned, key) = (person.to_string(), id.to_string());
    let audit = access(
        person,
        via,
        format!("passkey {id} of `{person}` signed an approval"),
        store.now(),
    );
    change(store, person, audit, move |p| {
        let Some(k) = p.passkeys.iter_mut().find(|k| k.id == key && k.current()) else {
            return Err(Error::Usage(format!(
                "passkey {key} is not one of `{owned}`'s current passkeys"
            )));
        };
        // Inside the directory's one change: of two uses of one assertion
        // (or a cloned authenticator), one finds the counter already moved.
        let (was, now) = (counter(&k.credential), counter(&credential));
        if (was > 0 || now > 0) && now <= was {
            return Err(Error::Usage(format!(
                "passkey {key}'s signature counter did not grow ({now} after {was}): a replayed assertion or a cloned authenticator"
            )));
        }
        k.credential = credential.clone();
        Ok(())
    })
    .await
}

/// The signature counter a stored credential holds.
fn counter(credential: &serde_json::Value) -> u64 {
    credential
        .pointer("/cred/counter")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0)
}

/// Removes passkey `id` of `person` (it stays, marked removed, so what it
/// signed can still be verified).
pub async fn remove(store: &Store, person: &str, id: &str, by: &str, via: &str) -> Result<()> {
    let (owned, key) = (person.to_string(), id.to_string());
    let at = store.now();
    let audit = access(by, via, format!("removed passkey {id} of `{person}`"), at);
    change(store, person, audit, move |p| {
        match p.passkeys.iter_mut().find(|k| k.id == key && k.current()) {
            Some(k) => {
                k.removed_at = Some(at);
                Ok(())
            }
            None => Err(Error::Usage(format!(
                "`{owned}` has no current passkey {key} (see `strands people passkeys {owned}`)"
            ))),
        }
    })
    .await
}

/// The public key `directory` has registered for `(person, credential)`,
/// as [`crate::audit::verify_with_keys`] asks: `Some(Null)` when the
/// person is known but never registered that credential; `None` when the
/// person is not in the directory (the entry's own key is all there is).
pub fn registered(
    directory: &Directory,
    person: &str,
    credential: &str,
) -> Option<serde_json::Value> {
    let p = directory.get(person)?;
    Some(
        p.passkey(credential)
            .and_then(PasskeyRecord::public_key)
            .unwrap_or(serde_json::Value::Null),
    )
}
