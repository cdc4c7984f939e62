//! The proof a stepped-up approval carries (`step_up: passkey`, see
//! `crate::model::step_up`): a WebAuthn assertion whose challenge is the
//! digest of exactly what was approved ([`challenge`]), with the public
//! key that verifies it. The audit entry of the approval keeps it, so
//! `strands audit verify` — or anyone with an export — can check, offline,
//! that this person's passkey signed this approval of this action.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The challenge an assertion for this approval signs: SHA-256 over a
/// label, the session, the gate's handle (`id#instance`), the decision's
/// verb, the action's digest and a nonce, each ended by a NUL.
pub fn challenge(session: &str, gate: &str, decision: &str, digest: &str, nonce: &str) -> Vec<u8> {
    let mut h = Sha256::new();
    for part in ["strands step-up v1", session, gate, decision, digest, nonce] {
        h.update(part.as_bytes());
        h.update([0u8]);
    }
    h.finalize().to_vec()
}

/// What a stepped-up answer carries, and its audit entry keeps: enough to
/// verify the signature offline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Proof {
    /// The directory person whose passkey signed.
    pub person: String,
    /// The credential's id (base64url).
    pub credential: String,
    /// Its public key as registered (COSE, as webauthn-rs writes it).
    pub public_key: Value,
    /// The decision signed, as its verb (`approved`, `approved with
    /// edits`, `trusted`).
    pub decision: String,
    /// The digest of the action approved (a tool call's or a request's
    /// action digest; else the digest of what the gate showed).
    pub digest: String,
    /// The nonce mixed into the challenge.
    pub nonce: String,
    /// The authenticator data, the client data JSON and the signature,
    /// base64url, as the authenticator gave them.
    pub authenticator_data: String,
    pub client_data: String,
    pub signature: String,
}

/// Why a proof does not hold.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ProofError(pub String);

fn b64(field: &str, text: &str) -> Result<Vec<u8>, ProofError> {
    URL_SAFE_NO_PAD
        .decode(text.trim_end_matches('='))
        .map_err(|e| ProofError(format!("the proof's {field} is not base64url: {e}")))
}

impl Proof {
    /// Checks that this proof is a signature, by its public key, over an
    /// approval `decision` of gate `gate` of session `session`: the client
    /// data is a `webauthn.get` whose challenge is [`challenge`] of these,
    /// the authenticator saw the user present and verified, and the
    /// signature over the authenticator data and the client data's hash
    /// holds.
    pub fn check(&self, session: &str, gate: &str, decision: &str) -> Result<(), ProofError> {
        if self.decision != decision {
            return Err(ProofError(format!(
                "the passkey confirmed `{}`, not `{decision}`",
                self.decision
            )));
        }
        let client = b64("client data", &self.client_data)?;
        let data: Value = serde_json::from_slice(&client)
            .map_err(|e| ProofError(format!("the proof's client data is not JSON: {e}")))?;
        if data.get("type").and_then(Value::as_str) != Some("webauthn.get") {
            return Err(ProofError(
                "the proof's client data is not an assertion (type webauthn.get)".into(),
            ));
        }
        let want = URL_SAFE_NO_PAD.encode(challenge(
            session,
            gate,
            decision,
            &self.digest,
            &self.nonce,
        ));
        let got = data
            .get("challenge")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .trim_end_matches('=');
        if got != want {
            return Err(ProofError(format!(
                "the assertion was made for another approval: its challenge is not the one of session {session}, gate {gate}, decision {decision}, action digest {}",
                self.digest
            )));
        }
        let auth = b64("authenticator data", &self.authenticator_data)?;
        // rpIdHash (32 bytes), then flags: UP 0x01, UV 0x04.
        let flags = *auth
            .get(32)
            .ok_or_else(|| ProofError("the proof's authenticator data is too short".into()))?;
        if flags & 0x01 == 0 || flags & 0x04 == 0 {
            return Err(ProofError(
                "the authenticator did not verify the user (user verification is required)".into(),
            ));
        }
        let key: webauthn_rs::prelude::COSEKey = serde_json::from_value(self.public_key.clone())
            .map_err(|e| ProofError(format!("the proof's public key is not a COSE key: {e}")))?;
        let signature = b64("signature", &self.signature)?;
        let mut signed = auth;
        signed.extend_from_slice(&Sha256::digest(&client));
        match key.verify_signature(&signature, &signed) {
            Ok(true) => Ok(()),
            Ok(false) => Err(ProofError(format!(
                "the signature of credential {} does not hold",
                self.credential
            ))),
            Err(e) => Err(ProofError(format!(
                "the signature of credential {} cannot be checked: {e:?}",
                self.credential
            ))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_challenge_binds_every_part() {
        let base = challenge("s", "g#1", "approved", "d", "n");
        assert_eq!(base.len(), 32);
        for other in [
            challenge("s2", "g#1", "approved", "d", "n"),
            challenge("s", "g#2", "approved", "d", "n"),
            challenge("s", "g#1", "trusted", "d", "n"),
            challenge("s", "g#1", "approved", "d2", "n"),
            challenge("s", "g#1", "approved", "d", "n2"),
            // No ambiguity from moving a boundary.
            challenge("s", "g#1", "approve", "dd", "n"),
        ] {
            assert_ne!(base, other);
        }
    }

    #[test]
    fn a_proof_with_the_wrong_challenge_or_no_user_verification_fails() {
        let client = serde_json::json!({"type": "webauthn.get", "challenge": URL_SAFE_NO_PAD.encode(challenge("s", "g#1", "approved", "d", "n")), "origin": "http://localhost"});
        let mut auth = vec![0u8; 37];
        auth[32] = 0x01; // present, not verified
        let p = Proof {
            person: "alice".into(),
            credential: "c".into(),
            public_key: Value::Null,
            decision: "approved".into(),
            digest: "d".into(),
            nonce: "n".into(),
            authenticator_data: URL_SAFE_NO_PAD.encode(&auth),
            client_data: URL_SAFE_NO_PAD.encode(client.to_string()),
            signature: String::new(),
        };
        let e = p.check("s", "g#1", "trusted").expect_err("other decision");
        assert!(e.0.contains("not `trusted`"), "{e}");
        let e = p.check("s", "g#2", "approved").expect_err("other gate");
        assert!(e.0.contains("another approval"), "{e}");
        let e = p.check("s", "g#1", "approved").expect_err("no UV");
        assert!(e.0.contains("verify the user"), "{e}");
        let mut p2 = p.clone();
        auth[32] = 0x05;
        p2.authenticator_data = URL_SAFE_NO_PAD.encode(&auth);
        let e = p2.check("s", "g#1", "approved").expect_err("no key");
        assert!(e.0.contains("COSE"), "{e}");
    }
}
