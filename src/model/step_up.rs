//! Step-up: a gate whose approval a click alone does not decide.
//!
//! A gate, an approval rule, a tool-call rule or an approval request may
//! say `step_up: passkey`. Approving such a gate takes a WebAuthn
//! assertion from a passkey the approving person registered, on the
//! gate's web page. The assertion's challenge is not random: it is the
//! SHA-256 of what is approved — the session, the gate's handle, the
//! decision, the action's digest — and a nonce ([`challenge`]), so the
//! authenticator's signature is a signature over exactly this approval.
//!
//! The [`Proof`] (the audit's: it is what the record keeps) holds
//! everything needed to check that later, offline: the credential and its
//! public key (COSE, as registered), the authenticator data, the client
//! data and the signature. The intake checks it before an answer is
//! recorded (`crate::gate::step_up`), and `strands audit verify` checks it
//! again on every stepped-up audit entry.
//! What only the server can check at the moment of answering — the
//! ceremony's single use, the signature counter, the origin — is the web
//! door's part (`crate::web::passkeys`).

use serde::{Deserialize, Serialize};

pub use crate::audit::step_up::{challenge, Proof, ProofError};

/// What a gate asks for beyond a click.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StepUp {
    /// A WebAuthn assertion (user verification required) from one of the
    /// person's registered passkeys.
    Passkey,
}

impl StepUp {
    /// Reads `step_up:` as specs, rules and requests write it.
    pub fn parse(text: &str) -> Option<StepUp> {
        match text.trim().to_ascii_lowercase().as_str() {
            "passkey" => Some(StepUp::Passkey),
            _ => None,
        }
    }

    /// What the settings and errors name.
    pub fn name(self) -> &'static str {
        match self {
            StepUp::Passkey => "passkey",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn step_up_reads_passkey_only() {
        assert_eq!(StepUp::parse(" Passkey "), Some(StepUp::Passkey));
        assert_eq!(StepUp::parse("totp"), None);
        assert_eq!(StepUp::Passkey.name(), "passkey");
    }
}
