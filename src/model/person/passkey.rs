//! The passkeys a person registered (WebAuthn credentials), kept with
//! them in the people directory: the credential as webauthn-rs keeps it
//! (public key, signature counter), a label, and when it was added or
//! removed. A removed passkey no longer confirms anything, but stays so
//! the audit entries it signed can still be verified.

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// One registered passkey.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PasskeyRecord {
    /// The credential id, base64url (what `strands people passkeys`
    /// shows and `--remove` takes).
    pub id: String,
    /// What the person called it ("laptop", "YubiKey").
    pub label: String,
    pub added_at: DateTime<Utc>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub removed_at: Option<DateTime<Utc>>,
    /// The credential as `webauthn_rs::prelude::Passkey` serializes it.
    pub credential: Value,
}

impl PasskeyRecord {
    /// The credential, typed; `None` when what is stored is not one.
    pub fn passkey(&self) -> Option<webauthn_rs::prelude::Passkey> {
        serde_json::from_value(self.credential.clone()).ok()
    }

    /// Its public key (COSE), as a proof carries it.
    pub fn public_key(&self) -> Option<Value> {
        self.passkey()
            .and_then(|p| serde_json::to_value(p.get_public_key()).ok())
    }

    /// Whether it may confirm an approval now.
    pub fn current(&self) -> bool {
        self.removed_at.is_none()
    }
}
