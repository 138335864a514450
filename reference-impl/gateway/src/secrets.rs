//! Redaction through the normalizer's redactor, for everything that leaves the gateway
//! without going through an envelope: flat results, errors, audit and log lines.

use relaycheck_reference::RedactionKind;
use relaycheck_reference::redact::{Tally, redact_field_str, redact_value};
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
    if mutation.is(Mutant::OverRedaction) {
        redact_look_alikes(v, &mut tally);
    }
    tally
}

/// As [`redact`], for the text `s` of a record's field `key`: what redacting the record's
/// JSON would write there, mutants included (`None`: it stays).
pub fn redact_field(key: &str, s: &str, mutation: Mutation) -> Option<String> {
    let mut tally = Tally::default();
    let mut out = if mutation.is(Mutant::RedactionOff) {
        None
    } else {
        redact_field_str(key, s, &mut tally)
    };
    if mutation.is(Mutant::OverRedaction) {
        let mut v = Value::String(out.clone().unwrap_or_else(|| s.to_string()));
        redact_look_alikes(&mut v, &mut tally);
        if let Value::String(t) = v
            && t != s
        {
            out = Some(t);
        }
    }
    out
}

/// The `over-redaction` mutant: any run of hex digits, spaces and dashes holding 12 or more
/// digits (an order number, a UUID, a commit hash) is taken for a card number or a key.
fn redact_look_alikes(v: &mut Value, tally: &mut Tally) {
    match v {
        Value::String(s) => {
            let mut out = String::with_capacity(s.len());
            let mut run = String::new();
            let flush = |run: &mut String, out: &mut String, tally: &mut Tally| {
                let core = run.trim_matches([' ', '-']);
                if core.chars().filter(char::is_ascii_digit).count() >= 12 {
                    let lead = &run[..run.len() - run.trim_start_matches([' ', '-']).len()];
                    let trail = &run[run.trim_end_matches([' ', '-']).len()..];
                    out.push_str(lead);
                    out.push_str(&RedactionKind::CardNumber.marker());
                    out.push_str(trail);
                    tally.add(RedactionKind::CardNumber);
                } else {
                    out.push_str(run);
                }
                run.clear();
            };
            for c in s.chars() {
                if c.is_ascii_hexdigit() || c == ' ' || c == '-' {
                    run.push(c);
                } else {
                    flush(&mut run, &mut out, tally);
                    out.push(c);
                }
            }
            flush(&mut run, &mut out, tally);
            if out != *s {
                *s = out;
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|x| redact_look_alikes(x, tally)),
        Value::Object(m) => m.values_mut().for_each(|x| redact_look_alikes(x, tally)),
        _ => {}
    }
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
