//! Web inbox sign-ins in sled: `web_logins` (login id → `model::login::Login`,
//! the secret's hash only) and the keys the service signs links with, made
//! once in `meta` (`key/<name>` → 32 random bytes).

use super::{encode, trees, SledStore};
use crate::error::{Error, Result};
use crate::model::login::Login;

impl SledStore {
    /// Stores a sign-in.
    pub fn put_login(&self, login: &Login) -> Result<()> {
        let logins = self.tree(trees::WEB_LOGINS)?;
        logins.insert(login.id.as_bytes(), encode("login", login)?)?;
        self.sync()?;
        Ok(())
    }

    /// The sign-in with id `id`, expired or not.
    pub fn login(&self, id: &str) -> Result<Option<Login>> {
        let logins = self.tree(trees::WEB_LOGINS)?;
        logins
            .get(id.as_bytes())?
            .map(|b| {
                serde_json::from_slice(&b)
                    .map_err(|e| Error::Store(format!("sign-in {id} is unreadable: {e}")))
            })
            .transpose()
    }

    /// Ends sign-in `id`; whether there was one.
    pub fn end_login(&self, id: &str) -> Result<bool> {
        let logins = self.tree(trees::WEB_LOGINS)?;
        let gone = logins.remove(id.as_bytes())?.is_some();
        self.sync()?;
        Ok(gone)
    }

    /// The service's key `name`: 32 random bytes made the first time it is
    /// asked for (whoever writes first wins; everyone reads the winner).
    pub fn key(&self, name: &str) -> Result<Vec<u8>> {
        let meta = self.tree(trees::META)?;
        let k = format!("key/{name}").into_bytes();
        if meta.get(&k)?.is_none() {
            let fresh: Vec<u8> = (0..32).map(|_| os_random_byte()).collect();
            let _ = meta.compare_and_swap(&k, None as Option<&[u8]>, Some(fresh))?;
            self.sync()?;
        }
        match meta.get(&k)? {
            Some(v) if v.len() == 32 => Ok(v.to_vec()),
            _ => Err(Error::Store(format!("the key `{name}` is unreadable"))),
        }
    }
}

/// One byte from the OS's generator (through uuid's v4, which reads it).
fn os_random_byte() -> u8 {
    uuid::Uuid::new_v4().as_bytes()[0]
}
