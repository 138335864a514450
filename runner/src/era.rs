//! Which revision a target speaks, read from its first answers as MCP's versioning page has a
//! dual-era client read them (2026-07-28, "Backward Compatibility with Initialization-Based
//! Versions").
//!
//! A shape is written off as one the target does not speak only on an answer the spec itself
//! reads as another revision. Any other answer to the opening requests of a shape the target
//! claims is a fault of the target, reported with the answer quoted: a gateway that answers
//! every 2026-07-28 request with an internal error, or a 401, has not said it speaks another
//! revision, and a run that wrote the shape off would pass on nothing.
//!
//! What the target says of itself counts as a claim beside the profile's `[claims] shapes`: a
//! version it lists as supported (in an `initialize` error's `data.supported`, an
//! `UnsupportedProtocolVersionError`'s `supported`, or `server/discover`'s
//! `supportedVersions`) is one it must negotiate when asked.

use relaycheck_model::Shape;
use serde_json::Value;

use crate::client::Exchange;
use crate::session::{UNSUPPORTED_PROTOCOL_VERSION, preview};

/// JSON-RPC's "method not found": a handshake-only server's answer to `server/discover`.
const METHOD_NOT_FOUND: i64 = -32601;

/// The codes 2026-07-28 gives its own errors (`-32020` to `-32099` are reserved for them): an
/// answer carrying one comes from a modern server, never a sign of another revision.
fn is_modern_code(code: i64) -> bool {
    (-32099..=-32020).contains(&code)
}

/// What a target's opening answers say of one shape.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Era {
    /// It speaks the shape: it answered a request of the shape's version.
    Speaks,
    /// It speaks another revision, by a sign the spec reads so: the shape's cases do not apply.
    Other(Refusal),
    /// Its answer is no sign of another revision: a fault, quoted.
    Fault(String),
}

/// A target's answer that it speaks another revision than the one asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// What the target answered, quoted.
    pub why: String,
    /// Where the target itself lists the asked version as supported, when it does: then its
    /// refusal contradicts its own word, and the case that checks the version fails.
    pub listed: Option<String>,
}

impl Refusal {
    /// A refusal the target's own words do not contradict (yet).
    pub fn new(why: String) -> Refusal {
        Refusal { why, listed: None }
    }
}

/// The versions a target's answer lists as supported: an `initialize` error's or an
/// `UnsupportedProtocolVersionError`'s `data.supported`, or a `DiscoverResult`'s
/// `supportedVersions`.
pub fn listed_versions(message: &Value) -> Option<Vec<String>> {
    let list = message
        .pointer("/error/data/supported")
        .or_else(|| message.pointer("/result/supportedVersions"))?
        .as_array()?;
    Some(
        list.iter()
            .filter_map(Value::as_str)
            .map(str::to_string)
            .collect(),
    )
}

/// How a target answered `server/discover` sent with `shape`'s envelope, for a shape
/// (`claimed`) the profile says it speaks or not.
///
/// Signs of another revision, whatever the claim: method not found; an HTTP 400 whose body is
/// no modern JSON-RPC error; an `UnsupportedProtocolVersionError` whose list lacks the version. For a shape nobody claimed, the spec's dual-era reading decides the
/// rest: on stdio any error that is not a modern one, or silence, means a legacy server; over
/// HTTP a client error without a modern body does. For a claimed shape, anything else is a
/// fault.
pub fn of_discover(shape: Shape, exchange: &Exchange, claimed: bool, stdio: bool) -> Era {
    let version = shape.protocol_version();
    let asked = format!("`server/discover` with the {version} envelope");
    let other = |why: String| Era::Other(Refusal::new(why));
    let fault = |answer: String| {
        Era::Fault(format!(
            "{asked} was answered {answer}, which is no sign of another revision (only method not found, an HTTP 400 without a modern error, or an UnsupportedProtocolVersionError that lists other versions is one){}",
            if claimed {
                format!("; the profile claims {shape} (`[claims] shapes`)")
            } else {
                String::new()
            }
        ))
    };
    match exchange {
        Exchange::Reply(reply) => {
            let quoted = match reply.http_status {
                Some(status) if status != 200 => format!("HTTP {status} {}", preview(&reply.raw)),
                _ => preview(&reply.raw),
            };
            let code = reply.message.pointer("/error/code").and_then(Value::as_i64);
            let listed = listed_versions(&reply.message);
            match (code, listed) {
                // A server that does not implement the version asked MUST answer with the
                // UnsupportedProtocolVersionError: one that answered the request speaks it,
                // whatever its list says (the case on `server/discover` judges the list).
                (None, _) if reply.message.get("result").is_some() => Era::Speaks,
                (Some(UNSUPPORTED_PROTOCOL_VERSION), Some(list)) => {
                    if list.iter().any(|v| v == version) {
                        fault(format!(
                            "UnsupportedProtocolVersionError though its `supported` lists {version}: {quoted}"
                        ))
                    } else {
                        other(format!(
                            "{asked} was answered UnsupportedProtocolVersionError (-32022), supported {list:?}: {quoted}"
                        ))
                    }
                }
                (Some(METHOD_NOT_FOUND), _) => other(format!(
                    "{asked} was answered method not found, as a handshake-only server answers it: {quoted}"
                )),
                (Some(code), _) if reply.http_status == Some(400) && !is_modern_code(code) => {
                    other(format!(
                        "{asked} was answered HTTP 400 without a modern error, as a handshake-only server answers it: {quoted}"
                    ))
                }
                (Some(code), _) if !claimed && !is_modern_code(code) => other(format!(
                    "{asked} was answered with an error that is not one of 2026-07-28's, which a dual-era client reads as a handshake-only server: {quoted}"
                )),
                _ => fault(quoted),
            }
        }
        Exchange::Malformed { raw, problem } => {
            let status = http_status_of(problem);
            match status {
                Some(400) => other(format!(
                    "{asked} was answered {problem}, as a handshake-only server answers it: {}",
                    preview(raw)
                )),
                Some(400..=499) if !claimed => other(format!(
                    "{asked} was answered {problem}, which a dual-era client reads as a handshake-only server: {}",
                    preview(raw)
                )),
                _ => fault(format!("{problem}: {}", preview(raw))),
            }
        }
        Exchange::Closed { detail } => match http_status_of(detail) {
            Some(400) => other(format!(
                "{asked} was answered {detail}, as a handshake-only server answers it"
            )),
            Some(400..=499) if !claimed => other(format!(
                "{asked} was answered {detail}, which a dual-era client reads as a handshake-only server"
            )),
            _ => fault(detail.clone()),
        },
        Exchange::Timeout if stdio && !claimed => other(format!(
            "{asked} got no answer, which a dual-era client on stdio reads as a handshake-only server"
        )),
        Exchange::Timeout => fault("nothing in time".into()),
    }
}

/// The HTTP status a transport's account of an answer begins with (`HTTP 401 ...`).
fn http_status_of(text: &str) -> Option<u16> {
    let rest = text.strip_prefix("HTTP ")?;
    rest.get(..3)?.parse().ok()
}

/// Whether the first request of a stateless shape after `server/discover` was refused for its
/// version: a modern server that lists other versions than the one asked for.
pub fn of_first_request(shape: Shape, exchange: &Exchange) -> Option<Refusal> {
    let reply = exchange.reply()?;
    let code = reply
        .message
        .pointer("/error/code")
        .and_then(Value::as_i64)?;
    let list = listed_versions(&reply.message)?;
    (code == UNSUPPORTED_PROTOCOL_VERSION && !list.iter().any(|v| v == shape.protocol_version()))
        .then(|| {
            Refusal::new(format!(
                "`tools/list` with the {} envelope was answered UnsupportedProtocolVersionError (-32022), supported {list:?}: {}",
                shape.protocol_version(),
                preview(&reply.raw)
            ))
        })
}

/// Where a target lists `version` as supported in its answer to `request`, if it does.
pub fn lists(version: &str, request: &str, answer: &Exchange) -> Option<String> {
    let reply = answer.reply()?;
    let list = listed_versions(&reply.message)?;
    list.iter().any(|v| v == version).then(|| {
        format!(
            "its answer to {request} lists {version} as supported: {}",
            preview(&reply.raw)
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::Reply;
    use serde_json::json;

    fn reply(message: Value, status: Option<u16>) -> Exchange {
        Exchange::Reply(Reply {
            raw: message.to_string().into_bytes(),
            message,
            http_status: status,
            ..Reply::default()
        })
    }

    fn error(code: i64, data: Value) -> Value {
        json!({"jsonrpc": "2.0", "id": 1, "error": {"code": code, "message": "m", "data": data}})
    }

    fn is_other(era: &Era) -> bool {
        matches!(era, Era::Other(_))
    }

    fn is_fault(era: &Era) -> bool {
        matches!(era, Era::Fault(_))
    }

    const S: Shape = Shape::V2026_07_28;

    #[test]
    fn a_discover_result_that_lists_the_version_speaks_it() {
        let answer = reply(
            json!({"jsonrpc": "2.0", "id": 1, "result": {"supportedVersions": ["2026-07-28"]}}),
            Some(200),
        );
        assert_eq!(of_discover(S, &answer, true, false), Era::Speaks);
        // Answered at all, the version was accepted: only the unsupported-version error
        // refuses it, and the list is the discover case's to judge.
        let without = reply(
            json!({"jsonrpc": "2.0", "id": 1, "result": {"supportedVersions": ["2025-11-25"]}}),
            Some(200),
        );
        assert_eq!(of_discover(S, &without, false, false), Era::Speaks);
    }

    /// The three signs of another revision hold whatever the profile claims.
    #[test]
    fn the_signs_of_another_revision() {
        for claimed in [true, false] {
            for stdio in [true, false] {
                let not_found = reply(error(-32601, Value::Null), None);
                assert!(is_other(&of_discover(S, &not_found, claimed, stdio)));
                let lacking = reply(error(-32022, json!({"supported": ["2025-11-25"]})), None);
                assert!(is_other(&of_discover(S, &lacking, claimed, stdio)));
            }
            let bad_request = reply(error(-32600, Value::Null), Some(400));
            assert!(is_other(&of_discover(S, &bad_request, claimed, false)));
            let plain_400 = Exchange::Malformed {
                raw: b"Bad Request: no session".to_vec(),
                problem: "HTTP 400 with a body that is not JSON".into(),
            };
            assert!(is_other(&of_discover(S, &plain_400, claimed, false)));
        }
    }

    /// What must fail a claimed shape instead of writing it off: an internal error, a 401, a
    /// 500, silence, and an unsupported-version error that names the very version asked.
    #[test]
    fn other_answers_on_a_claimed_shape_are_faults() {
        let faults = [
            reply(error(-32603, Value::Null), None),
            reply(error(-32603, Value::Null), Some(200)),
            Exchange::Malformed {
                raw: b"unauthorized".to_vec(),
                problem: "HTTP 401 with a body that is not JSON".into(),
            },
            Exchange::Closed {
                detail: "HTTP 500 Internal Server Error".into(),
            },
            Exchange::Timeout,
            reply(
                error(-32022, json!({"supported": ["2026-07-28", "2025-11-25"]})),
                None,
            ),
        ];
        for answer in &faults {
            let era = of_discover(S, answer, true, true);
            assert!(is_fault(&era), "{answer:?}: {era:?}");
        }
        // A 2026-07-28 error code is a modern server's, even in a 400.
        let mismatch = reply(error(-32020, Value::Null), Some(400));
        assert!(is_fault(&of_discover(S, &mismatch, false, false)));
    }

    /// For a shape nobody claimed, the spec's dual-era reading: a non-modern error or silence
    /// on stdio, a client error over HTTP, means a legacy server.
    #[test]
    fn an_unclaimed_shape_reads_as_a_dual_era_client_reads_it() {
        let internal = reply(error(-32603, Value::Null), None);
        assert!(is_other(&of_discover(S, &internal, false, true)));
        assert!(is_other(&of_discover(S, &Exchange::Timeout, false, true)));
        assert!(is_fault(&of_discover(S, &Exchange::Timeout, false, false)));
        let unauthorized = Exchange::Malformed {
            raw: Vec::new(),
            problem: "HTTP 401 with an empty body".into(),
        };
        assert!(is_other(&of_discover(S, &unauthorized, false, false)));
        let server_error = Exchange::Closed {
            detail: "HTTP 502 Bad Gateway".into(),
        };
        assert!(is_fault(&of_discover(S, &server_error, false, false)));
    }

    #[test]
    fn a_listed_version_is_found_in_either_member() {
        let refusal = reply(
            error(
                -32022,
                json!({"supported": ["2025-06-18"], "requested": "2026-07-28"}),
            ),
            None,
        );
        assert!(lists("2025-06-18", "x", &refusal).is_some());
        assert!(lists("2025-11-25", "x", &refusal).is_none());
        let discovered = reply(
            json!({"jsonrpc": "2.0", "id": 1, "result": {"supportedVersions": ["2025-11-25"]}}),
            None,
        );
        assert!(lists("2025-11-25", "x", &discovered).is_some());
        assert!(lists("2025-11-25", "x", &Exchange::Timeout).is_none());
    }

    #[test]
    fn a_first_request_refused_for_its_version() {
        let refused = reply(error(-32022, json!({"supported": ["2025-11-25"]})), None);
        assert!(of_first_request(S, &refused).is_some());
        let listed = reply(error(-32022, json!({"supported": ["2026-07-28"]})), None);
        assert!(of_first_request(S, &listed).is_none());
        let internal = reply(error(-32603, Value::Null), None);
        assert!(of_first_request(S, &internal).is_none());
    }
}
