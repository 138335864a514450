//! Byte-level misbehaviour: what each model [`Fault`] turns into, before a transport acts it
//! out. Built from a well-formed answer to the same call, so a fault differs from a correct
//! answer only in the way it names.

use bytes::Bytes;
use relaycheck_model::script::Fault;
use serde_json::{Value, json};

use crate::protocol::{FaultReply, Reply};

/// The fault as named in the observation log (the model's kebab-case names).
pub fn name(fault: &Fault) -> &'static str {
    match fault {
        Fault::Hang => "hang",
        Fault::Slow { .. } => "slow",
        Fault::CloseMidBody => "close-mid-body",
        Fault::MalformedJson => "malformed-json",
        Fault::WrongContentType => "wrong-content-type",
        Fault::ResultAndError => "result-and-error",
        Fault::WrongId => "wrong-id",
        Fault::Bytes { .. } => "bytes",
    }
}

/// Turns a fault into a reply. `result` is the well-formed result this call would otherwise
/// get; `then` answers the inner `Respond` of a slow fault.
pub fn act(
    fault: &Fault,
    id: &Value,
    result: &Value,
    then: impl FnOnce(&relaycheck_model::script::Respond) -> Reply,
) -> Reply {
    let reply = match fault {
        Fault::Hang => FaultReply::Hang,
        Fault::Slow { delay_ms, then: inner } => FaultReply::Slow {
            delay_ms: *delay_ms,
            then: Box::new(then(inner)),
        },
        Fault::CloseMidBody => {
            let whole = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
            // Cut inside the result, never at a point where the prefix is valid JSON.
            let cut = (whole.len() / 2).clamp(1, whole.len().saturating_sub(1).max(1));
            let cut = (1..=cut)
                .rev()
                .find(|&i| whole.is_char_boundary(i))
                .unwrap_or(1);
            FaultReply::CloseMidBody {
                prefix: Bytes::copy_from_slice(&whole.as_bytes()[..cut]),
            }
        }
        Fault::MalformedJson => FaultReply::Raw {
            fault: "malformed-json",
            // A trailing comma: close enough to JSON to reach a parser, never valid.
            bytes: Bytes::from(format!(
                "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"content\":[{{\"type\":\"text\",\"text\":\"malformed\"}}],}}}}"
            )),
        },
        Fault::WrongContentType => FaultReply::WrongContentType(
            json!({"jsonrpc": "2.0", "id": id, "result": result}),
        ),
        Fault::ResultAndError => FaultReply::Raw {
            fault: "result-and-error",
            bytes: Bytes::from(
                json!({
                    "jsonrpc": "2.0",
                    "id": id,
                    "result": result,
                    "error": {"code": -32603, "message": "relaycheck canary: result and error together"},
                })
                .to_string(),
            ),
        },
        Fault::WrongId => FaultReply::Raw {
            fault: "wrong-id",
            bytes: Bytes::from(
                json!({"jsonrpc": "2.0", "id": other_id(id), "result": result}).to_string(),
            ),
        },
        Fault::Bytes { text } => FaultReply::Exact {
            bytes: Bytes::from(text.clone()),
        },
    };
    Reply::Fault(reply)
}

/// An id no client could have used for this request: same JSON type, different value.
pub fn other_id(id: &Value) -> Value {
    match id {
        Value::Number(n) => match n.as_i64() {
            Some(n) => json!(n.wrapping_add(1_000_000)),
            None => json!(format!("{n}-wrong")),
        },
        Value::String(s) => json!(format!("{s}-wrong")),
        _ => json!("wrong-id"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relaycheck_model::script::Respond;

    fn never(_: &Respond) -> Reply {
        Reply::Nothing
    }

    #[test]
    fn close_mid_body_prefix_is_not_json() {
        let reply = act(
            &Fault::CloseMidBody,
            &json!(1),
            &json!({"content": []}),
            never,
        );
        let Reply::Fault(FaultReply::CloseMidBody { prefix }) = reply else {
            panic!()
        };
        assert!(!prefix.is_empty());
        assert!(serde_json::from_slice::<Value>(&prefix).is_err());
    }

    #[test]
    fn malformed_json_does_not_parse_and_wrong_id_differs() {
        let Reply::Fault(FaultReply::Raw { bytes, .. }) =
            act(&Fault::MalformedJson, &json!(3), &json!({}), never)
        else {
            panic!()
        };
        assert!(serde_json::from_slice::<Value>(&bytes).is_err());
        assert_eq!(other_id(&json!(3)), json!(1_000_003));
        assert_eq!(other_id(&json!("a")), json!("a-wrong"));
    }
}
