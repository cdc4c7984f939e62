//! Who gets mail about a gate: the one place that turns a gate's
//! approvers into addresses, for the e-mail room (`crate::email`).
//!
//! Today an approver named by an e-mail address (`approvers:
//! [carol@corp.example]`) has no other channel, so it is mailed whether or
//! not the gate says `notify: email`. A people directory (person → address)
//! plugs in here, in [`emails_for`]: a person found there is mailed when
//! the gate says `notify: email`, or when mail is the only way to reach
//! them. Groups and chat ids are not mailed.

use crate::model::OpenGate;

/// The addresses to mail about `gate`, each once (lower-cased), in the
/// order its approvers are named.
pub fn emails_for(gate: &OpenGate) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for a in &gate.approvers {
        if let Some(addr) = address(a) {
            if !out.contains(&addr) {
                out.push(addr);
            }
        }
    }
    out
}

pub use crate::model::mail::address;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_addresses_are_mailed() {
        assert_eq!(
            address("Carol@Corp.Example").as_deref(),
            Some("carol@corp.example")
        );
        assert_eq!(
            address("mailto:a.b+x@x-y.example").as_deref(),
            Some("a.b+x@x-y.example")
        );
        for not in [
            "U0ALICE1",
            "teams:aad-1",
            "alice",
            "@ops",
            "a@localhost",
            "a b@x.example",
            "a@x.example>",
            "\"a\"@x.example",
            "a@x..example",
            "a@x.example\r\nBcc: e@vil.example",
        ] {
            assert_eq!(address(not), None, "{not}");
        }
    }
}
