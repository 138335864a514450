//! Redaction through the normalizer's redactor, for everything that leaves the gateway
//! without going through an envelope: flat results, errors, audit and log lines.

use relaycheck_reference::redact::{Tally, redact_value};
use serde_json::Value;

use crate::mutant::{Mutant, Mutation};

/// Redacts `v` in place and returns how many secrets were replaced. The redactor only
/// writes where it matches, so a result without secrets leaves this byte for byte as it
/// came: fidelity is kept unless there is a secret to keep out.
pub fn redact(v: &mut Value, mutation: Mutation) -> u64 {
    redact_counted(v, mutation).total()
}

/// As [`redact`], with the count per kind, for an envelope's `meta.redactions`.
pub fn redact_counted(v: &mut Value, mutation: Mutation) -> Tally {
    let mut tally = Tally::default();
    if !mutation.is(Mutant::RedactionOff) {
        redact_value(v, &mut tally);
    }
    tally
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn untouched_without_secrets_and_replaced_with() {
        let clean = json!({"content": [{"type": "text", "text": "hello"}], "z": 1, "a": 2});
        let mut v = clean.clone();
        assert_eq!(redact(&mut v, Mutation::default()), 0);
        assert_eq!(v.to_string(), clean.to_string());
        let mut v = json!({"text": "key AKIAIOSFODNN7EXAMPLE here"});
        assert_eq!(redact(&mut v, Mutation::default()), 1);
        assert!(!v.to_string().contains("AKIAIOSFODNN7EXAMPLE"));
        let mut v = json!({"text": "key AKIAIOSFODNN7EXAMPLE here"});
        assert_eq!(redact(&mut v, Mutation(Some(Mutant::RedactionOff))), 0);
    }
}
