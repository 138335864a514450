//! The table of checks: names, parameters and what each one means, for lint and for docs.

use serde_json::Value;

/// The kind of value a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    Bool,
    Integer,
    Pointer,
    Pointers,
    Strings,
    AnyJson,
    /// One of a fixed set of words.
    Word(&'static [&'static str]),
    /// One word of a fixed set, or a list of them (any one will do).
    Words(&'static [&'static str]),
}

impl ParamKind {
    pub fn accepts(self, value: &Value) -> bool {
        match self {
            ParamKind::Bool => value.is_boolean(),
            ParamKind::Integer => value.is_i64() || value.is_u64(),
            ParamKind::Pointer => value
                .as_str()
                .is_some_and(|p| p.is_empty() || p.starts_with('/')),
            ParamKind::Pointers => value.as_array().is_some_and(|items| {
                items
                    .iter()
                    .all(|p| p.as_str().is_some_and(|p| p.starts_with('/')))
            }),
            ParamKind::Strings => value
                .as_array()
                .is_some_and(|items| items.iter().all(Value::is_string)),
            ParamKind::AnyJson => true,
            ParamKind::Word(words) => value.as_str().is_some_and(|w| words.contains(&w)),
            ParamKind::Words(words) => match value {
                Value::Array(items) => {
                    !items.is_empty()
                        && items
                            .iter()
                            .all(|i| i.as_str().is_some_and(|w| words.contains(&w)))
                }
                other => other.as_str().is_some_and(|w| words.contains(&w)),
            },
        }
    }

    pub fn describe(self) -> String {
        match self {
            ParamKind::Bool => "true or false".into(),
            ParamKind::Integer => "an integer".into(),
            ParamKind::Pointer => "a JSON pointer (\"\" or starting with /)".into(),
            ParamKind::Pointers => "a list of JSON pointers".into(),
            ParamKind::Strings => "a list of strings".into(),
            ParamKind::AnyJson => "any JSON value".into(),
            ParamKind::Word(words) => format!("one of {}", words.join(", ")),
            ParamKind::Words(words) => format!("one or a list of {}", words.join(", ")),
        }
    }
}

/// A check's name, what it asserts, and its parameters (name, kind, required).
pub struct CheckDef {
    pub name: &'static str,
    pub asserts: &'static str,
    pub params: &'static [(&'static str, ParamKind, bool)],
}

pub const EXCHANGE_KINDS: &[&str] = &[
    "response",
    "error-response",
    "malformed",
    "closed",
    "timeout",
];

pub const CHECKS: &[CheckDef] = &[
    CheckDef {
        name: "relayed-unchanged",
        asserts: "the client got the result or error the upstream sent, the same in value as the shape defines it (absent defaults read as their default, numbers by exact value, member order free, the answering server's own `_meta` left out), but for the pointers listed in `ignore` (and, with `ignore-link-uris`, the URIs of links, which a gateway may rewrite)",
        params: &[
            ("ignore", ParamKind::Pointers, false),
            ("ignore-link-uris", ParamKind::Bool, false),
        ],
    },
    CheckDef {
        name: "relayed-verbatim",
        asserts: "the client got the upstream's result in form too: no default written out or left out, no number written another way, members in the upstream's order (for `observe` cases: a difference of form is never a failure)",
        params: &[
            ("ignore", ParamKind::Pointers, false),
            ("ignore-link-uris", ParamKind::Bool, false),
        ],
    },
    CheckDef {
        name: "is-error",
        asserts: "the result's isError (absent reads as false) is `value`",
        params: &[("value", ParamKind::Bool, true)],
    },
    CheckDef {
        name: "protocol-error",
        asserts: "the client got a JSON-RPC error; with `code` that code, else the upstream's; `keeps-data` and `keeps-message` compare with the upstream's",
        params: &[
            ("code", ParamKind::Integer, false),
            ("keeps-data", ParamKind::Bool, false),
            ("keeps-message", ParamKind::Bool, false),
        ],
    },
    CheckDef {
        name: "text-kept",
        asserts: "every text block the upstream sent reaches the client's content unchanged",
        params: &[],
    },
    CheckDef {
        name: "kept",
        asserts: "the value at `pointer` (default /_meta) of the upstream result reaches the client unchanged, at the same place",
        params: &[("pointer", ParamKind::Pointer, false)],
    },
    CheckDef {
        name: "equals",
        asserts: "the client's result has `value` at `pointer`",
        params: &[
            ("pointer", ParamKind::Pointer, true),
            ("value", ParamKind::AnyJson, true),
        ],
    },
    CheckDef {
        name: "absent",
        asserts: "the client's result has nothing at `pointer`",
        params: &[("pointer", ParamKind::Pointer, true)],
    },
    CheckDef {
        name: "content-valid",
        asserts: "every content block the client got has the members its type requires",
        params: &[],
    },
    CheckDef {
        name: "sdk-accepts",
        asserts: "the official Rust SDK's typed model (rmcp) reads the client's result or error",
        params: &[],
    },
    CheckDef {
        name: "upstream-called",
        asserts: "the upstream received the call `times` times (default 1)",
        params: &[("times", ParamKind::Integer, false)],
    },
    CheckDef {
        name: "reached-upstream",
        asserts: "on a target with several upstreams, the call reached the upstream the case names (`upstream:`) and no other",
        params: &[],
    },
    CheckDef {
        name: "arguments-kept",
        asserts: "the upstream received the arguments the caller sent, unchanged",
        params: &[],
    },
    CheckDef {
        name: "request-meta-kept",
        asserts: "every member the caller put in the request's `_meta` (the progress token aside) reached the upstream unchanged",
        params: &[],
    },
    CheckDef {
        name: "version-echoed",
        asserts: "the target answered `initialize` with the protocol version the runner asked for",
        params: &[],
    },
    CheckDef {
        name: "capabilities-honoured",
        asserts: "each capability the target's `initialize` declares among prompts, resources, completions and logging is served: its request gets no method-not-found error",
        params: &[],
    },
    CheckDef {
        name: "upstream-initialized-first",
        asserts: "every request the upstream got, over the whole run so far, came after `initialize` on its connection (or in the stateless envelope, or was a ping)",
        params: &[],
    },
    CheckDef {
        name: "client-capabilities-kept",
        asserts: "no upstream `initialize` (nor the stateless envelope of the call) declares a client capability among sampling, elicitation and roots that the runner's client did not declare",
        params: &[],
    },
    CheckDef {
        name: "upstream-session-kept",
        asserts: "a second call of one client session reaches the upstream with no new `initialize`: over the upstream session the first call used",
        params: &[],
    },
    CheckDef {
        name: "calls-apart",
        asserts: "the same call made at once by a second client session (a second call of the one session, on a stdio target): neither answer or notification holds the other's nonce, and neither call gets more progress than its upstream sent for it",
        params: &[],
    },
    CheckDef {
        name: "sent-once",
        asserts: "the client's answer is at most `percent` per cent of the bytes the upstream answered, plus `slack_bytes`: the result is not sent twice",
        params: &[
            ("percent", ParamKind::Integer, true),
            ("slack_bytes", ParamKind::Integer, false),
        ],
    },
    CheckDef {
        name: "max-bytes",
        asserts: "the client's answer is at most `bytes` bytes",
        params: &[("bytes", ParamKind::Integer, true)],
    },
    CheckDef {
        name: "schema-valid",
        asserts: "the client's structuredContent is valid against the tool's outputSchema",
        params: &[],
    },
    CheckDef {
        name: "task-handle",
        asserts: "the client got a task handle (in `form` nested or flat, when given)",
        params: &[("form", ParamKind::Word(&["nested", "flat"]), false)],
    },
    CheckDef {
        name: "no-secret",
        asserts: "none of `secrets` appears in the client's answer or in any side channel (`in`: answer, side-channels or both, the default)",
        params: &[
            ("secrets", ParamKind::Strings, true),
            (
                "in",
                ParamKind::Word(&["answer", "side-channels", "both"]),
                false,
            ),
        ],
    },
    CheckDef {
        name: "answered-as",
        asserts: "the call ended as `kind`: response, error-response, malformed, closed or timeout",
        params: &[("kind", ParamKind::Word(EXCHANGE_KINDS), true)],
    },
    CheckDef {
        name: "text-bytes",
        asserts: "the text blocks of the client's result hold exactly `bytes` bytes in all (with `or-refused`, a refusal in band with a reason passes too: a bounded read may refuse, never cut silently)",
        params: &[
            ("bytes", ParamKind::Integer, true),
            ("or-refused", ParamKind::Bool, false),
        ],
    },
    CheckDef {
        name: "not-a-success",
        asserts: "the call did not end in a successful result: no answer, a JSON-RPC error, or isError true",
        params: &[],
    },
    CheckDef {
        name: "progress-before-result",
        asserts: "at least `min` (default 1) progress notifications reached the client before the result",
        params: &[("min", ParamKind::Integer, false)],
    },
    CheckDef {
        name: "entry-status",
        asserts: "the target's per-call entry has the explicit status `status` (ok, tool_error, protocol_error, transport_error, unknown, task; a list accepts any of them)",
        params: &[(
            "status",
            ParamKind::Words(&[
                "ok",
                "tool_error",
                "protocol_error",
                "transport_error",
                "unknown",
                "task",
            ]),
            true,
        )],
    },
    CheckDef {
        name: "reason-given",
        asserts: "the entry carries a short reason saying what failed",
        params: &[],
    },
    CheckDef {
        name: "truncation-marked",
        asserts: "a cut is never silent: a marker in the result the model reads, kept-of-total counts of items and bytes, and a handle to the full result",
        params: &[],
    },
    CheckDef {
        name: "provenance-kept",
        asserts: "server, tool and retrieval time travel with the result, and the upstream's _meta is kept whole",
        params: &[],
    },
    CheckDef {
        name: "redactions-recorded",
        asserts: "the entry records what was redacted (kind and count), never the secret itself",
        params: &[("secrets", ParamKind::Strings, false)],
    },
    CheckDef {
        name: "marked-as-data",
        asserts: "the entry marks the upstream's content as data, not direction",
        params: &[],
    },
    CheckDef {
        name: "instructions-flagged",
        asserts: "instruction-like text inside the result is flagged",
        params: &[],
    },
    CheckDef {
        name: "serialized-once",
        asserts: "the target's own result does not carry the same JSON twice (as a text block and as structuredContent)",
        params: &[],
    },
    CheckDef {
        name: "continuation-returns-original",
        asserts: "the handle in the entry fetches the upstream's original, full result",
        params: &[],
    },
    CheckDef {
        name: "continuation-confined",
        asserts: "the handle read by another identity returns nothing of the result",
        params: &[],
    },
    CheckDef {
        name: "continuation-deletable",
        asserts: "after the delete tool frees the handle, fetching it returns nothing of the result",
        params: &[],
    },
    CheckDef {
        name: "task-completes",
        asserts: "the task handle the client got can be followed to `status` (default completed), and its final result is the upstream's, unchanged",
        params: &[(
            "status",
            ParamKind::Word(&["completed", "failed", "cancelled"]),
            false,
        )],
    },
    CheckDef {
        name: "links-resolve",
        asserts: "every resource_link and embedded resource URI in the client's result resolves through resources/read",
        params: &[],
    },
    CheckDef {
        name: "mentions",
        asserts: "the client's result (as the model reads it) contains every one of `texts`, none of `not`, and matches `pattern` (a regex) when given",
        params: &[
            ("texts", ParamKind::Strings, false),
            ("not", ParamKind::Strings, false),
            ("pattern", ParamKind::AnyJson, false),
        ],
    },
    CheckDef {
        name: "mirror-consistent",
        asserts: "a text block that is JSON equals the structuredContent beside it: a cut or an edit never leaves the two disagreeing",
        params: &[],
    },
    CheckDef {
        name: "audit-record",
        asserts: "a side-channel line (in `channel`, default any) records this call (it holds the call's nonce) and mentions each of `mentions`",
        params: &[
            ("channel", ParamKind::AnyJson, false),
            ("mentions", ParamKind::Strings, false),
        ],
    },
    CheckDef {
        name: "tool-listed",
        asserts: "tools/list lists the case's tool under the route's name, with its outputSchema (and the members in `has`) as the upstream declared them; with `whole`, every member the upstream declared is kept and none is added",
        params: &[
            ("has", ParamKind::Strings, false),
            ("whole", ParamKind::Bool, false),
        ],
    },
];
