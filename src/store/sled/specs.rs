//! Spec snapshots stored once per distinct spec. A session records the
//! SHA-256 of the spec it runs (`spec_hash`) and, in memory, its text
//! (`spec_snapshot`); on disk the text lives once in the `specs` tree under
//! that hash and the session keeps a reference (`\0spec:` ++ hash, which
//! no spec text starts with), so a million runs of one workflow hold one
//! copy of it and a checkpoint does not rewrite it.
//! Sessions written before (text inline) read as they are and lose the
//! copy at their next write.

use super::{trees, SledStore};
use crate::error::{Error, Result};
use crate::model::Session;

/// What a stored session holds instead of its spec's text.
const REF: &str = "\0spec:";

impl SledStore {
    /// The session as stored: its spec text moved to the `specs` tree
    /// when its hash is the text's SHA-256 (else kept inline), its large
    /// texts split off (`store::outputs`; the caller stores them).
    pub(super) fn encode_session(
        &self,
        session: &mut Session,
    ) -> Result<crate::store::outputs::Stored> {
        let text = std::mem::take(&mut session.spec_snapshot);
        let shared = !text.is_empty() && crate::audit::sha256_hex(&text) == session.spec_hash;
        if shared {
            let specs = self.tree(trees::SPECS)?;
            if !specs.contains_key(session.spec_hash.as_bytes())? {
                // Content-addressed: the same key always holds the same text,
                // so a write that then fails leaves nothing wrong behind.
                specs.insert(session.spec_hash.as_bytes(), text.as_bytes())?;
            }
            session.spec_snapshot = format!("{REF}{}", session.spec_hash);
        } else {
            session.spec_snapshot = text.clone();
        }
        let stored = crate::store::outputs::split(session);
        session.spec_snapshot = text;
        stored
    }

    /// Puts back the spec text of a session read without it.
    pub(super) fn hydrate(&self, session: &mut Session) -> Result<()> {
        let Some(hash) = session.spec_snapshot.strip_prefix(REF).map(str::to_string) else {
            return Ok(());
        };
        let specs = self.tree(trees::SPECS)?;
        match specs.get(hash.as_bytes())? {
            Some(text) => {
                session.spec_snapshot = String::from_utf8_lossy(&text).into_owned();
                Ok(())
            }
            None => Err(Error::Store(format!(
                "session {}: its spec (sha256 {}) is missing from {}",
                session.id,
                hash,
                self.path.display()
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::paused_session;
    use super::*;
    use crate::model::Status;

    #[test]
    fn a_spec_is_stored_once_and_every_session_reads_it_back() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = SledStore::open(dir.path()).expect("store");
        let text = "version: 0\nname: wf\n".repeat(200);
        for id in ["a", "b", "c"] {
            let mut s = paused_session(id);
            s.spec_snapshot = text.clone();
            s.spec_hash = crate::audit::sha256_hex(&text);
            store.create(&mut s).expect("create");
            assert_eq!(s.spec_snapshot, text, "the caller keeps its copy");
        }
        // On disk: the text once, the sessions without it.
        assert_eq!(store.tree(trees::SPECS).expect("specs").len(), 1);
        let raw = store.sessions.get(b"b").expect("read").expect("b");
        assert!(
            raw.len() < text.len(),
            "{} bytes stored for a {} byte spec",
            raw.len(),
            text.len()
        );
        // Read back whole, by load and by an answer recorded.
        assert_eq!(
            store.load("a").expect("load").expect("a").spec_snapshot,
            text
        );
        let a = crate::model::Answer {
            decision: crate::model::Decision::Approve,
            by: "bob".into(),
            at: crate::clock::test_epoch(),
            via: "api".into(),
            vars: Default::default(),
            call: None,
            person: None,
            on_behalf_of: None,
            step_up: None,
            idp_group: None,
        };
        let s = store
            .record_answer("b", None, &a)
            .expect("io")
            .expect("recorded");
        assert_eq!(s.spec_snapshot, text);
        let mut c = store.load("c").expect("load").expect("c");
        c.status = Status::Completed;
        store.checkpoint(&mut c).expect("checkpoint");
        assert_eq!(
            store.load("c").expect("load").expect("c").spec_snapshot,
            text
        );
        // A snapshot whose hash is not its text's stays inline.
        let mut odd = paused_session("odd");
        odd.spec_snapshot = "inline".into();
        odd.spec_hash = "not-a-hash".into();
        store.create(&mut odd).expect("create");
        assert_eq!(
            store.load("odd").expect("load").expect("odd").spec_snapshot,
            "inline"
        );
    }
}
