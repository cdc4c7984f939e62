//! Teams conversation references in sled: `teams_conversations`
//! (conversation id → `model::teams::TeamsConversation`).

use super::{encode, trees, SledStore};
use crate::error::{Error, Result};
use crate::model::teams::TeamsConversation;

impl SledStore {
    /// Records `c`, or refreshes the reference stored under its id (its
    /// first sighting kept), in one compare-and-swap loop.
    pub fn put_teams_conversation(&self, c: &TeamsConversation) -> Result<()> {
        let tree = self.tree(trees::TEAMS_CONVERSATIONS)?;
        let key = c.id.as_bytes();
        loop {
            let old = tree.get(key)?;
            let merged = match &old {
                Some(bytes) => read(&c.id, bytes)?.refreshed_by(c),
                None => c.clone(),
            };
            let new = encode("Teams conversation", &merged)?;
            if tree.compare_and_swap(key, old, Some(new))?.is_ok() {
                break;
            }
        }
        self.sync()?;
        Ok(())
    }

    /// Every reference, by id.
    pub fn teams_conversations(&self) -> Result<Vec<TeamsConversation>> {
        let tree = self.tree(trees::TEAMS_CONVERSATIONS)?;
        tree.iter()
            .map(|kv| {
                let (k, v) = kv?;
                read(&String::from_utf8_lossy(&k), &v)
            })
            .collect()
    }
}

fn read(id: &str, bytes: &[u8]) -> Result<TeamsConversation> {
    serde_json::from_slice(bytes)
        .map_err(|e| Error::Store(format!("Teams conversation {id} is unreadable: {e}")))
}
