//! The table of checks: names, parameters, what each one means and reads, and the function
//! that judges it. Lint, the runner and `evaluate` all read this one table.

use serde_json::{Map, Value};

use super::{
    Evidence, Verdict, cache, envelope, eval, follow, listing, methods, notify, outputs, reach,
    relay, round_trip, stateless, task_follow,
};

/// The kind of value a parameter takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamKind {
    /// `true` or `false`.
    Bool,
    /// A whole number.
    Integer,
    /// A JSON pointer: `""` or starting with `/`.
    Pointer,
    /// A list of JSON pointers.
    Pointers,
    /// A list of strings.
    Strings,
    /// A string.
    Text,
    /// Any JSON value.
    AnyJson,
    /// One of a fixed set of words.
    Word(&'static [&'static str]),
    /// One word of a fixed set, or a list of them (any one will do).
    Words(&'static [&'static str]),
}

impl ParamKind {
    /// Whether a case file's `value` is of this kind, so lint refuses a wrong one before a run.
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
            ParamKind::Text => value.is_string(),
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

    /// The kind in words, for lint's message.
    pub fn describe(self) -> String {
        match self {
            ParamKind::Bool => "true or false".into(),
            ParamKind::Integer => "an integer".into(),
            ParamKind::Pointer => "a JSON pointer (\"\" or starting with /)".into(),
            ParamKind::Pointers => "a list of JSON pointers".into(),
            ParamKind::Strings => "a list of strings".into(),
            ParamKind::Text => "a string".into(),
            ParamKind::AnyJson => "any JSON value".into(),
            ParamKind::Word(words) => format!("one of {}", words.join(", ")),
            ParamKind::Words(words) => format!("one or a list of {}", words.join(", ")),
        }
    }
}

/// What a check reads of the call. It decides what [`super::evaluate`] settles before the
/// check runs, so no check repeats "the call got no response" in its own words.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reads {
    /// The evidence around the call (the upstream's log, follow-ups, side channels): it judges
    /// a call that got no response too.
    Evidence,
    /// How the call ended, response or not: a fault is what it judges, so a call that got no
    /// response is evidence for it rather than a target error.
    Fault,
    /// A response: a call that ended otherwise fails the check, saying how it ended.
    Reply,
    /// The result the route picks from the response: a pick that found nothing fails the check,
    /// quoting what the target answered instead.
    Picked,
}

/// What the runner gathers for a check beyond the call itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Gathers {
    /// The target's whole `tools/list`, every page, after the call.
    Listing,
    /// Each capability the target's `initialize` declared, used once.
    CapabilityProbes,
    /// Each capability the upstream's `initialize` answer declared, used once through the
    /// target, whether the target declares it or not.
    UpstreamCapabilityProbes,
    /// The upstream `initialize` requests since the target started, on a target of its own.
    HandshakesSinceStart,
    /// A first call of the same session before the judged one, and the upstream `initialize`
    /// requests counted during the judged one.
    UpstreamSessions,
    /// The same call made at once by a second client session.
    SecondCall,
    /// How the target opened its upstream sessions over the run so far.
    UpstreamHandshakes,
    /// Every `tools/list` page the upstream answered over the run so far, and the cursors the
    /// target asked with.
    UpstreamListings,
    /// A second whole `tools/list` right after the first.
    SecondListing,
    /// The whole listing its `method` parameter names (`resources/list`,
    /// `resources/templates/list`, `prompts/list`), after the call.
    ItemListing,
    /// The call cancelled by the runner (`notifications/cancelled`) once the upstream has it,
    /// and the cancellations the upstream then got.
    Cancellation,
    /// After the call, the request its `method` and `params` name, with the call's nonce among
    /// the arguments and a prompt named as the target lists it (after a `prompts/list`).
    RelayedRequest,
    /// After an `input_required` answer, the call retried as a client would: under a new id,
    /// with the case's scripted response to each input request the client got and the
    /// `requestState` it got; again while the answer asks for input, a few times at most.
    InputRetry,
    /// After the call, `server/discover`, and once each the requests a client makes of the
    /// capabilities discovery may declare (`prompts/list`, `resources/list`,
    /// `completion/complete`), whether it declares them or not.
    Discover,
    /// After the first `tasks/get` that says the task is working, a `tasks/cancel` of it, then
    /// polls until it ends.
    TaskCancel,
    /// Before the first poll, the task's `tasks/get` and `tasks/cancel` as the profile's other
    /// identity.
    TaskAsOther,
    /// The request its `method` names, after the call: every page of a listing (the hints of
    /// its first page kept with the items), or a read of its `uri` with the call's nonce
    /// appended.
    CacheHints,
    /// A read of its `uri` (the call's nonce appended), then the same read as the profile's
    /// other identity.
    CacheReadAsOther,
    /// A read of its `uri` (the call's nonce appended), then the same read once the `ttlMs` its
    /// answer gave has passed.
    CacheReadAfterTtl,
    /// The target's whole listing of its `list` before the call, as a client that listed at
    /// start has it; listening from just before the call for what the target sends outside its
    /// answers (on streamable HTTP, a GET stream; on the 2026-07-28 wire, after
    /// `server/discover`, a `subscriptions/listen` stream asking for the list, acknowledged
    /// before the call); after the call, the `notifications/<list>/list_changed`
    /// of its `list` awaited (a few seconds at most) where the target declares `listChanged`
    /// for it, a moment otherwise; then the target's whole listing of `list`, every page.
    ListChange,
    /// Before the call, the target's `resources/list` and a `resources/subscribe` of the
    /// resource the case's tool updates, under the URI the target lists it by (the upstream's
    /// own where it lists none for it), listening from then on; after the call, the
    /// `notifications/resources/updated` awaited (a few seconds at most); and the URIs the
    /// upstream was asked to subscribe to.
    Subscription,
}

impl Gathers {
    /// Whether what it gathers holds only on a target no other case uses at the same time:
    /// counted sessions and misrouted messages would be other cases' too.
    pub fn needs_own_target(self) -> bool {
        matches!(
            self,
            Gathers::UpstreamSessions
                | Gathers::HandshakesSinceStart
                | Gathers::SecondCall
                | Gathers::Cancellation
                | Gathers::ListChange
                | Gathers::Subscription
        )
    }
}

/// The members of a call's result a check reads, named as `specs/shapes/*.yaml` names what
/// a shape moves (`content`, `structuredContent`, `isError`, `_meta`, `error`, `task-handle`,
/// `resultType`, `outputSchema`, ...).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fields {
    /// None: what it judges is the request the upstream got, a listing, a side channel or the
    /// session, which no result shape changes.
    None,
    /// These members.
    Named(&'static [&'static str]),
    /// The member its `pointer` parameter names (the first segment), or this pointer's when
    /// the case gives none; an empty pointer is the whole result.
    At(&'static str),
    /// The whole result or error: every member the upstream's answer has.
    Whole,
}

/// How a check judges the evidence of one call.
pub type CheckFn = fn(&str, &Map<String, Value>, &Evidence<'_>) -> Verdict;

/// One check: its name, what it asserts, its parameters (name, kind, required), what it reads
/// and what the runner gathers for it, and the function that judges. Adding a check is one row
/// here and its function.
pub struct CheckDef {
    /// The name case files use (`check:`).
    pub name: &'static str,
    /// What it asserts, in a sentence: the catalogue page and lint show it.
    pub asserts: &'static str,
    /// Each parameter: its name, its kind, and whether a case must give it.
    pub params: &'static [(&'static str, ParamKind, bool)],
    /// What of the call's ending it needs to be judged at all.
    pub reads: Reads,
    /// Which members of the call's result it reads: a shape that changes one of them is
    /// predicted to move the case (the matrix's impact), and one that changes none is not.
    pub fields: Fields,
    /// What the runner gathers for it besides the call.
    pub gathers: &'static [Gathers],
    /// The function that judges.
    pub run: CheckFn,
}

impl CheckDef {
    /// The row of the check called `name`.
    pub fn named(name: &str) -> Option<&'static CheckDef> {
        CHECKS.iter().find(|def| def.name == name)
    }
}

pub(super) const EXCHANGE_KINDS: &[&str] = &[
    "response",
    "error-response",
    "malformed",
    "closed",
    "timeout",
];

/// Every check relaycheck knows: lint, the runner and [`crate::evaluate`] all read this table.
pub const CHECKS: &[CheckDef] = &[
    CheckDef {
        name: "relayed-unchanged",
        asserts: "the client got the result or error the upstream sent, the same in value as the shape defines it (absent defaults read as their default, numbers by exact value, member order free, the answering server's own `_meta` left out, and of a SEP-3279 result the outputs the client selected alone), but for the pointers listed in `ignore` (and, with `ignore-link-uris`, the URIs of links, which a gateway may rewrite); with `across-revisions`, only where the client and the upstream spoke different revisions (a bridged run), as the caller's revision carries the upstream's answer",
        params: &[
            ("ignore", ParamKind::Pointers, false),
            ("ignore-link-uris", ParamKind::Bool, false),
            ("across-revisions", ParamKind::Bool, false),
        ],
        reads: Reads::Picked,
        fields: Fields::Whole,
        gathers: &[],
        run: eval::relayed_unchanged,
    },
    CheckDef {
        name: "relayed-verbatim",
        asserts: "the client got the upstream's result in form too: no default written out or left out, no number written another way, members in the upstream's order (for `observe` cases: a difference of form is never a failure)",
        params: &[
            ("ignore", ParamKind::Pointers, false),
            ("ignore-link-uris", ParamKind::Bool, false),
        ],
        reads: Reads::Picked,
        fields: Fields::Whole,
        gathers: &[],
        run: eval::relayed_verbatim,
    },
    CheckDef {
        name: "is-error",
        asserts: "the result's isError (absent reads as false) is `value`",
        params: &[("value", ParamKind::Bool, true)],
        reads: Reads::Picked,
        fields: Fields::Named(&["isError"]),
        gathers: &[],
        run: eval::is_error,
    },
    CheckDef {
        name: "protocol-error",
        asserts: "the client got a JSON-RPC error; with `code` that code, else the upstream's; `keeps-data` and `keeps-message` compare with the upstream's; with `from-upstream`, a call the target answered without calling the upstream is not applicable",
        params: &[
            ("code", ParamKind::Integer, false),
            ("from-upstream", ParamKind::Bool, false),
            ("keeps-data", ParamKind::Bool, false),
            ("keeps-message", ParamKind::Bool, false),
        ],
        reads: Reads::Picked,
        fields: Fields::Named(&["error"]),
        gathers: &[],
        run: eval::protocol_error,
    },
    CheckDef {
        name: "text-kept",
        asserts: "every text block the upstream sent reaches the client's content unchanged",
        params: &[],
        reads: Reads::Picked,
        fields: Fields::Named(&["content"]),
        gathers: &[],
        run: |n, _, e| eval::text_kept(n, e),
    },
    CheckDef {
        name: "kept",
        asserts: "the value at `pointer` (default /_meta) of the upstream result reaches the client unchanged, at the same place",
        params: &[("pointer", ParamKind::Pointer, false)],
        reads: Reads::Picked,
        fields: Fields::At("/_meta"),
        gathers: &[],
        run: eval::kept,
    },
    CheckDef {
        name: "equals",
        asserts: "the client's result has `value` at `pointer`",
        params: &[
            ("pointer", ParamKind::Pointer, true),
            ("value", ParamKind::AnyJson, true),
        ],
        reads: Reads::Picked,
        fields: Fields::At(""),
        gathers: &[],
        run: eval::equals,
    },
    CheckDef {
        name: "absent",
        asserts: "the client's result has nothing at `pointer`",
        params: &[("pointer", ParamKind::Pointer, true)],
        reads: Reads::Picked,
        fields: Fields::At(""),
        gathers: &[],
        run: eval::absent,
    },
    CheckDef {
        name: "content-valid",
        asserts: "every content block the client got has the members its type requires (with `or-refused`, a refusal with a JSON-RPC error passes too)",
        params: &[("or-refused", ParamKind::Bool, false)],
        reads: Reads::Picked,
        fields: Fields::Named(&["content"]),
        gathers: &[],
        run: eval::content_valid,
    },
    CheckDef {
        name: "sdk-accepts",
        asserts: "the official Rust SDK's typed model (rmcp) reads the client's result or error",
        params: &[],
        reads: Reads::Picked,
        fields: Fields::Whole,
        gathers: &[],
        run: |n, _, e| eval::sdk_accepts(n, e),
    },
    CheckDef {
        name: "upstream-called",
        asserts: "the upstream received the call `times` times (default 1)",
        params: &[("times", ParamKind::Integer, false)],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[],
        run: eval::upstream_called,
    },
    CheckDef {
        name: "reached-upstream",
        asserts: "on a target with several upstreams, the call reached the upstream the case names (`upstream:`) and no other",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[],
        run: |n, _, e| reach::reached_upstream(n, e),
    },
    CheckDef {
        name: "arguments-kept",
        asserts: "the upstream received the arguments the caller sent, unchanged",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[],
        run: |n, _, e| eval::arguments_kept(n, e),
    },
    CheckDef {
        name: "request-meta-kept",
        asserts: "every member the caller put in the request's `_meta` (the progress token aside) reached the upstream unchanged",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[],
        run: |n, _, e| eval::request_meta_kept(n, e),
    },
    CheckDef {
        name: "version-echoed",
        asserts: "the target answered `initialize` with the protocol version the runner asked for",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[],
        run: |n, _, e| relay::version_echoed(n, e),
    },
    CheckDef {
        name: "capabilities-honoured",
        asserts: "each capability the target's `initialize` declares among prompts, resources, completions and logging is served: its request gets no method-not-found error",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::CapabilityProbes],
        run: |n, _, e| relay::capabilities_honoured(n, e),
    },
    CheckDef {
        name: "capabilities-relayed",
        asserts: "each capability the upstream's `initialize` declares among prompts, resources, completions and logging is declared in the target's `initialize` too, where the target serves it or should: a capability left out hides what the upstream offers",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[
            Gathers::UpstreamCapabilityProbes,
            Gathers::UpstreamHandshakes,
        ],
        run: |n, _, e| relay::capabilities_relayed(n, e),
    },
    CheckDef {
        name: "server-info-named",
        asserts: "the target's `initialize` answer carries a serverInfo (a name and a version), and says whose identity it is: the target's own or its upstream's",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::UpstreamHandshakes],
        run: |n, _, e| relay::server_info_named(n, e),
    },
    CheckDef {
        name: "upstream-initialized-once",
        asserts: "from the target's start to the end of the call, its upstream got no more `initialize` requests than the client sessions the runner opened (one)",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::HandshakesSinceStart],
        run: |n, _, e| relay::upstream_initialized_once(n, e),
    },
    CheckDef {
        name: "upstream-initialized-first",
        asserts: "every request the upstream got, over the whole run so far, came after `initialize` on its connection (or in the stateless envelope, or was a ping)",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::UpstreamHandshakes],
        run: |n, _, e| relay::upstream_initialized_first(n, e),
    },
    CheckDef {
        name: "client-capabilities-kept",
        asserts: "no upstream `initialize` (nor the stateless envelope of the call) declares a client capability among sampling, elicitation and roots that the runner's client did not declare",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::UpstreamHandshakes],
        run: |n, _, e| relay::client_capabilities_kept(n, e),
    },
    CheckDef {
        name: "upstream-session-kept",
        asserts: "a second call of one client session reaches the upstream with no new `initialize`: over the upstream session the first call used",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::UpstreamSessions],
        run: |n, _, e| relay::upstream_session_kept(n, e),
    },
    CheckDef {
        name: "calls-apart",
        asserts: "the same call made at once by a second client session (a second call of the one session, on a stdio target): neither answer or notification holds the other's nonce, and neither call gets more progress than its upstream sent for it",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::Whole,
        gathers: &[Gathers::SecondCall],
        run: |n, _, e| relay::calls_apart(n, e),
    },
    CheckDef {
        name: "sent-once",
        asserts: "the client's answer is at most `percent` per cent of the bytes the upstream answered, plus `slack_bytes`: the result is not sent twice; and at least `min_percent` (default 90) per cent, less `slack_bytes`, and no failure where the upstream succeeded: the result, not a part of it or something in its place",
        params: &[
            ("percent", ParamKind::Integer, true),
            ("slack_bytes", ParamKind::Integer, false),
            ("min_percent", ParamKind::Integer, false),
        ],
        reads: Reads::Evidence,
        fields: Fields::Whole,
        gathers: &[],
        run: relay::sent_once,
    },
    CheckDef {
        name: "max-bytes",
        asserts: "the client's answer is at most `bytes` bytes",
        params: &[("bytes", ParamKind::Integer, true)],
        reads: Reads::Picked,
        fields: Fields::Whole,
        gathers: &[],
        run: eval::max_bytes,
    },
    CheckDef {
        name: "schema-valid",
        asserts: "the client's structuredContent is valid against the tool's outputSchema",
        params: &[],
        reads: Reads::Picked,
        fields: Fields::Named(&["structuredContent", "outputSchema", "outputVariants"]),
        gathers: &[],
        run: |n, _, e| eval::schema_valid(n, e),
    },
    CheckDef {
        name: "task-handle",
        asserts: "the client got a task handle (in `form` nested or flat, when given)",
        params: &[("form", ParamKind::Word(&["nested", "flat"]), false)],
        reads: Reads::Picked,
        fields: Fields::Named(&["task-handle"]),
        gathers: &[],
        run: eval::task_handle,
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
        reads: Reads::Evidence,
        fields: Fields::Whole,
        gathers: &[],
        run: eval::no_secret,
    },
    CheckDef {
        name: "answered-as",
        asserts: "the call ended as `kind`: response, error-response, malformed, closed or timeout",
        params: &[("kind", ParamKind::Word(EXCHANGE_KINDS), true)],
        reads: Reads::Fault,
        fields: Fields::Named(&["error", "isError"]),
        gathers: &[],
        run: eval::answered_as,
    },
    CheckDef {
        name: "text-bytes",
        asserts: "the text blocks of the client's result hold exactly `bytes` bytes in all, each the upstream's text (by its digest, for a result too large to log whole) (with `or-refused`, a refusal in band with a reason passes too, if the session then answers the next call: a bounded read may refuse, never cut silently or break the session; where the profile declares a read bound, past it only a refusal passes and under it only the whole result)",
        params: &[
            ("bytes", ParamKind::Integer, true),
            ("or-refused", ParamKind::Bool, false),
        ],
        reads: Reads::Picked,
        fields: Fields::Named(&["content"]),
        gathers: &[],
        run: eval::text_bytes,
    },
    CheckDef {
        name: "not-a-success",
        asserts: "the call did not end in a successful result: no answer, a JSON-RPC error, or isError true",
        params: &[],
        reads: Reads::Fault,
        fields: Fields::Named(&["error", "isError"]),
        gathers: &[],
        run: |n, _, e| eval::not_a_success(n, e),
    },
    CheckDef {
        name: "failed-in-band",
        asserts: "the call ended in a failure the client can read, a JSON-RPC error or an isError result, before the case's time was up: no answer at all leaves the client to its own timeout",
        params: &[],
        reads: Reads::Fault,
        fields: Fields::Named(&["error", "isError"]),
        gathers: &[],
        run: |n, _, e| eval::failed_in_band(n, e),
    },
    CheckDef {
        name: "progress-before-result",
        asserts: "at least `min` (default 1) progress notifications reached the client before the result",
        params: &[("min", ParamKind::Integer, false)],
        reads: Reads::Picked,
        fields: Fields::None,
        gathers: &[],
        run: eval::progress,
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
        reads: Reads::Reply,
        fields: Fields::Whole,
        gathers: &[],
        run: envelope::entry_status,
    },
    CheckDef {
        name: "reason-given",
        asserts: "the entry carries a short reason saying what failed",
        params: &[],
        reads: Reads::Reply,
        fields: Fields::Whole,
        gathers: &[],
        run: |n, _, e| envelope::reason_given(n, e),
    },
    CheckDef {
        name: "truncation-marked",
        asserts: "a cut is never silent: a marker in the result the model reads, kept-of-total counts of items and bytes, and a handle to the full result",
        params: &[],
        reads: Reads::Picked,
        fields: Fields::Whole,
        gathers: &[],
        run: |n, _, e| envelope::truncation_marked(n, e),
    },
    CheckDef {
        name: "provenance-kept",
        asserts: "server, tool and retrieval time travel with the result, and the upstream's _meta is kept whole",
        params: &[],
        reads: Reads::Reply,
        fields: Fields::Named(&["_meta"]),
        gathers: &[],
        run: |n, _, e| envelope::provenance_kept(n, e),
    },
    CheckDef {
        name: "redactions-recorded",
        asserts: "the entry records what was redacted (kind and count), never the secret itself",
        params: &[("secrets", ParamKind::Strings, false)],
        reads: Reads::Reply,
        fields: Fields::Whole,
        gathers: &[],
        run: envelope::redactions_recorded,
    },
    CheckDef {
        name: "marked-as-data",
        asserts: "the entry marks the upstream's content as data, not direction",
        params: &[],
        reads: Reads::Reply,
        fields: Fields::Named(&["content"]),
        gathers: &[],
        run: |n, _, e| envelope::marked_as_data(n, e),
    },
    CheckDef {
        name: "instructions-flagged",
        asserts: "instruction-like text inside the result is flagged",
        params: &[],
        reads: Reads::Reply,
        fields: Fields::Named(&["content", "structuredContent"]),
        gathers: &[],
        run: |n, _, e| envelope::instructions_flagged(n, e),
    },
    CheckDef {
        name: "serialized-once",
        asserts: "the target's own result does not carry the same JSON twice (as a text block and as structuredContent)",
        params: &[],
        reads: Reads::Picked,
        fields: Fields::Named(&["content", "structuredContent"]),
        gathers: &[],
        run: |n, _, e| envelope::serialized_once(n, e),
    },
    CheckDef {
        name: "continuation-returns-original",
        asserts: "the handle in the entry fetches the upstream's original, full result",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::Whole,
        gathers: &[],
        run: |n, _, e| follow::continuation_returns_original(n, e),
    },
    CheckDef {
        name: "continuation-confined",
        asserts: "the handle read by another identity returns nothing of the result",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[],
        run: |n, _, e| follow::continuation_confined(n, e),
    },
    CheckDef {
        name: "continuation-deletable",
        asserts: "after the delete tool frees the handle, fetching it returns nothing of the result",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[],
        run: |n, _, e| follow::continuation_deletable(n, e),
    },
    CheckDef {
        name: "task-completes",
        asserts: "the task handle the client got can be followed to `status` (default completed), and its final result is the upstream's, unchanged",
        params: &[(
            "status",
            ParamKind::Word(&["completed", "failed", "cancelled"]),
            false,
        )],
        reads: Reads::Evidence,
        fields: Fields::Whole,
        gathers: &[],
        run: follow::task_completes,
    },
    CheckDef {
        name: "links-resolve",
        asserts: "every resource_link and embedded resource URI the target rewrote in the client's result resolves through its resources/read (with `as-written`, every one it handed out as the upstream wrote it, where it serves resources)",
        params: &[("as-written", ParamKind::Bool, false)],
        reads: Reads::Evidence,
        fields: Fields::Named(&["content"]),
        gathers: &[],
        run: follow::links_resolve,
    },
    CheckDef {
        name: "mentions",
        asserts: "the client's result (as the model reads it) contains every one of `texts`, none of `not`, and matches `pattern` (a regex) when given",
        params: &[
            ("texts", ParamKind::Strings, false),
            ("not", ParamKind::Strings, false),
            ("pattern", ParamKind::AnyJson, false),
        ],
        reads: Reads::Picked,
        fields: Fields::Whole,
        gathers: &[],
        run: eval::mentions,
    },
    CheckDef {
        name: "mirror-consistent",
        asserts: "a text block that is JSON equals the structuredContent beside it: a cut or an edit never leaves the two disagreeing",
        params: &[],
        reads: Reads::Picked,
        fields: Fields::Named(&["content", "structuredContent"]),
        gathers: &[],
        run: |n, _, e| eval::mirror_consistent(n, e),
    },
    CheckDef {
        name: "audit-record",
        asserts: "a side-channel line (in `channel`, default any) records this call (it holds the call's nonce) and mentions each of `mentions`",
        params: &[
            ("channel", ParamKind::AnyJson, false),
            ("mentions", ParamKind::Strings, false),
        ],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[],
        run: eval::audit_record,
    },
    CheckDef {
        name: "tool-listed",
        asserts: "tools/list lists the case's tool under the route's name, with its outputSchema (and the members in `has`) as the upstream declared them; with `whole`, every member the upstream declared is kept and none is added",
        params: &[
            ("has", ParamKind::Strings, false),
            ("whole", ParamKind::Bool, false),
        ],
        reads: Reads::Evidence,
        fields: Fields::Named(&["outputSchema", "outputVariants"]),
        gathers: &[Gathers::Listing],
        run: follow::tool_listed,
    },
    CheckDef {
        name: "listing-complete",
        asserts: "when the upstream pages its tools/list, every tool on every page (the case's own, on the last, among them) is in the client's listing under the route's name; a failure names the tools missing and the cursors the target never asked with",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::Listing, Gathers::UpstreamListings],
        run: listing::listing_complete,
    },
    CheckDef {
        name: "listing-order-stable",
        asserts: "two tools/list requests in a row, with nothing changed upstream, list the tools in the same order",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::Listing, Gathers::SecondListing],
        run: listing::listing_order_stable,
    },
    CheckDef {
        name: "listing-order-kept",
        asserts: "the upstream's tools keep the upstream's relative order in the client's listing",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::Listing, Gathers::UpstreamListings],
        run: listing::listing_order_kept,
    },
    CheckDef {
        name: "listing-own-tools",
        asserts: "names the tools the client's listing holds that the upstream never listed: the gateway's own (it never fails)",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::Listing, Gathers::UpstreamListings],
        run: listing::listing_own_tools,
    },
    CheckDef {
        name: "upstream-headers",
        asserts: "over an HTTP upstream, each request the target sent for the call (and its task follow-ups) carried the headers its revision requires, agreeing with its body: MCP-Protocol-Version from 2025-06-18, and in the 2026-07-28 envelope Mcp-Method, Mcp-Name (the tool, or the task of a follow-up) and an Mcp-Param-{Name} for each argument the tool's inputSchema marks with x-mcp-header that holds a value (decoded from `=?base64?…?=`, integers as numbers), none for one that is null or absent; with `task-follow-ups`, the runner also answers the task's input with tasks/update and cancels it, so those go upstream too, and the methods the target sent are named; not applicable over stdio or the legacy HTTP+SSE transport",
        params: &[("task-follow-ups", ParamKind::Bool, false)],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[],
        run: relay::upstream_headers,
    },
    CheckDef {
        name: "listing-relayed",
        asserts: "the target's `method` listing (resources/list, resources/templates/list or prompts/list) holds every item the upstream lists there, under its name (or the route's name for it), with every member the upstream declared and none added (`_meta` keys of the gateway's own aside); a URI or URI template may be the gateway's; not applicable where the target serves no such method",
        params: &[(
            "method",
            ParamKind::Word(&["resources/list", "resources/templates/list", "prompts/list"]),
            true,
        )],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::ItemListing, Gathers::UpstreamListings],
        run: listing::listing_relayed,
    },
    CheckDef {
        name: "cancellation-relayed",
        asserts: "the call, cancelled by the runner with notifications/cancelled once the upstream had it, is cancelled upstream too: the upstream gets notifications/cancelled naming the request the target sent it",
        params: &[],
        reads: Reads::Fault,
        fields: Fields::None,
        gathers: &[Gathers::Cancellation],
        run: relay::cancellation_relayed,
    },
    CheckDef {
        name: "request-relayed",
        asserts: "the `method` request the runner sends with `params` after the call (prompts/get or completion/complete, naming the prompt as the target lists it) reaches the upstream with the client's params (the prompt's name and `_meta` aside) and the upstream's answer reaches the client unchanged (`_meta` keys of the gateway's own and each leg's `resultType` aside); not applicable where the target serves no such method or lists no prompt of the upstream's",
        params: &[
            (
                "method",
                ParamKind::Word(&["prompts/get", "completion/complete"]),
                true,
            ),
            ("params", ParamKind::AnyJson, true),
        ],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::RelayedRequest],
        run: methods::request_relayed,
    },
    CheckDef {
        name: "log-relayed",
        asserts: "each log message (notifications/message) the upstream sent while it worked on the call reached the client on the call's own stream before the result, with its level and data; a logger name of the target's own is noted; not applicable where the target declares no `logging` capability",
        params: &[],
        reads: Reads::Reply,
        fields: Fields::None,
        gathers: &[],
        run: methods::log_relayed,
    },
    CheckDef {
        name: "client-request-relayed",
        asserts: "the request the upstream sent its client while it worked on the call (sampling/createMessage, elicitation/create or roots/list, on the call's own stream before its result) reached the runner's client, which declared the capability it needs, with its params unchanged (`_meta` keys of the target's own aside), and the client's answer reached the upstream unchanged (the canary quotes what it got back in its result `_meta`); not applicable where the request reached no client and the target declared the capability to no upstream session, which was then not entitled to ask",
        params: &[],
        reads: Reads::Reply,
        fields: Fields::None,
        gathers: &[Gathers::UpstreamHandshakes],
        run: methods::client_request_relayed,
    },
    CheckDef {
        name: "outputs-as-requested",
        asserts: "under SEP-3279 the client got exactly one output for each selector of its requestedOutputs (assistant/content when it sent none) and none it did not request, in any order (an error result may carry fewer); where the call reached an upstream in an older revision, it reached it with no requestedOutputs (what a SEP-3279 upstream was asked for is noted: a target may build outputs itself); not applicable where the client spoke another revision or the route reads an envelope of the target's own",
        params: &[],
        reads: Reads::Reply,
        fields: Fields::Named(&["outputs"]),
        gathers: &[],
        run: outputs::outputs_as_requested,
    },
    CheckDef {
        name: "list-changed-relayed",
        asserts: "where the target's `initialize` declares `listChanged` for `list` (tools, prompts or resources), the notifications/<list>/list_changed its upstream sent while it worked on the call reached the client: on the call's own stream, on the stream of a request after it, or outside any request's answer (on streamable HTTP, the GET stream the runner opened), within a few seconds of the call's answer; on the 2026-07-28 wire, where `server/discover` declares it, the client's subscriptions/listen stream asking for the list is acknowledged first (honouring it) and carries the notification, every message tagged with the stream's request id; not applicable where the target does not declare it",
        params: &[(
            "list",
            ParamKind::Word(&["tools", "prompts", "resources"]),
            true,
        )],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::ListChange],
        run: notify::list_changed_relayed,
    },
    CheckDef {
        name: "list-change-listed",
        asserts: "after the upstream's `list` (tools, prompts or resources) changed while it worked on the call (the upstream sent notifications/<list>/list_changed and lists an item named after the call's nonce since), the target's listing of it (listed once before the call too, as a client does at start), asked again once its own notification came (or a moment after the call where it sends none), holds that item: under the route's name for a tool, under its own or a prefixed name for a prompt or resource, or by the nonce in its description; not applicable for a prompt or resource listing the target does not serve",
        params: &[(
            "list",
            ParamKind::Word(&["tools", "prompts", "resources"]),
            true,
        )],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::ListChange],
        run: notify::list_change_listed,
    },
    CheckDef {
        name: "resource-update-relayed",
        asserts: "the client, which subscribed through the target to the resource the case's tool updates (under the URI the target lists it by), got the notifications/resources/updated its upstream sent while it worked on the call, naming the URI it subscribed with, within a few seconds of the call's answer; not applicable where the target declares no `resources.subscribe` or refuses the subscription",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::Subscription],
        run: notify::resource_update_relayed,
    },
    CheckDef {
        name: "input-requests-relayed",
        asserts: "the upstream's input_required result reached the client as one: resultType input_required, each input request under its key with its method and params unchanged in value (`_meta` keys of the target's own aside; what a client may change of a sampling request noted), none answered or dropped on the way, and a requestState wherever the upstream gave one (the upstream's own or one of the target's); not applicable where the upstream could not ask because the call it got did not declare the client capabilities the client declared",
        params: &[],
        reads: Reads::Picked,
        fields: Fields::Named(&["resultType", "inputRequests", "requestState"]),
        gathers: &[],
        run: round_trip::input_requests_relayed,
    },
    CheckDef {
        name: "input-responses-returned",
        asserts: "each retry that reached the upstream carried back the requestState the upstream had just issued, exactly (a target may hand its client a state of its own, but must give the upstream its own back), and only responses the client gave, each unchanged in value; every response the client gave to an upstream's input request reached it",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::Named(&["inputRequests", "requestState"]),
        gathers: &[Gathers::InputRetry],
        run: round_trip::input_responses_returned,
    },
    CheckDef {
        name: "retry-result-relayed",
        asserts: "the client's last retry was answered with the upstream's answer to the last retry it got, the same in value as the shape defines it (a result, or a JSON-RPC error with its code, message and data), and that answer ends the exchange (it asks for no more input)",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::Whole,
        gathers: &[Gathers::InputRetry],
        run: round_trip::retry_result_relayed,
    },
    CheckDef {
        name: "header-mismatch-refused",
        asserts: "on the 2026-07-28 wire over streamable HTTP, the call, sent with the headers the case gives in place of the runner's (a routing header that disagrees with the body, or one left out), was refused with HTTP 400 and a HeaderMismatch (-32020) JSON-RPC error, and no upstream ran it; not applicable over stdio or the legacy HTTP+SSE transport, which carry no headers",
        params: &[],
        reads: Reads::Fault,
        fields: Fields::None,
        gathers: &[],
        run: stateless::header_mismatch_refused,
    },
    CheckDef {
        name: "log-at-requested-level",
        asserts: "the call named a log level in its `_meta` (io.modelcontextprotocol/logLevel), and each log message the upstream sent at or above it reached the client before the result, level and data unchanged, and none below it did; not applicable where the target's server/discover declares no `logging`",
        params: &[],
        reads: Reads::Reply,
        fields: Fields::None,
        gathers: &[Gathers::Discover],
        run: stateless::log_at_requested_level,
    },
    CheckDef {
        name: "no-log-unasked",
        asserts: "the call named no log level in its `_meta`, and no log message (notifications/message) reached the client for it, the upstream's or the target's own",
        params: &[],
        reads: Reads::Reply,
        fields: Fields::None,
        gathers: &[],
        run: stateless::no_log_unasked,
    },
    CheckDef {
        name: "envelope-relayed",
        asserts: "the upstream's request carried the protocol version and client capabilities of the client's stateless envelope, the same in value (in a bridged run, the version the upstream speaks); its clientInfo (the client's or the target's own) is noted; not applicable where the target reaches its upstream over a handshake session",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[],
        run: stateless::envelope_relayed,
    },
    CheckDef {
        name: "discover-answered",
        asserts: "the target answered the server/discover the runner sent after the call with a result: supportedVersions (strings, the version the call spoke among them) and a capabilities object",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::Discover],
        run: stateless::discover_answered,
    },
    CheckDef {
        name: "discover-capabilities-relayed",
        asserts: "of prompts, resources and completions, each capability the target's server/discover declares is served (its request gets no method-not-found error), and each the upstream declares that the target serves is declared",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::Discover],
        run: stateless::discover_capabilities_relayed,
    },
    CheckDef {
        name: "server-info-as-declared",
        asserts: "the result's `_meta` names its server (io.modelcontextprotocol/serverInfo, an Implementation) as the profile declares (`[claims] server_info`): the target's own, the upstream's relayed, or either where the profile says nothing; not applicable where it declares the target configured to name none",
        params: &[],
        reads: Reads::Picked,
        fields: Fields::Named(&["_meta"]),
        gathers: &[],
        run: stateless::server_info_as_declared,
    },
    CheckDef {
        name: "task-polls-relayed",
        asserts: "each tasks/get answer the client got for the task is one the upstream gave for it, the same in value (status, timestamps, ttlMs, pollIntervalMs, inputRequests, the inline result as the shape reads a result, an error by its code), only the task id the target's own, naming the task the client's handle named, and `_meta` keys of the target's own aside; an answer the upstream gave may reach the client more than once",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::Whole,
        gathers: &[],
        run: task_follow::task_polls_relayed,
    },
    CheckDef {
        name: "task-update-relayed",
        asserts: "the client, asked for input by a tasks/get answer (status input_required), answered with tasks/update, which reached the upstream's task (named by the upstream's id) with the client's inputResponses unchanged, and the upstream's acknowledgement reached the client empty (`resultType` and `_meta` aside), or its refusal with its code",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[],
        run: task_follow::task_update_relayed,
    },
    CheckDef {
        name: "task-cancel-relayed",
        asserts: "the client's tasks/cancel of the working task reached the upstream's task (named by the upstream's id), the upstream's acknowledgement reached the client empty (`resultType` and `_meta` aside), or its refusal with its code, and the status the client then read is the one the upstream then gave",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::TaskCancel],
        run: task_follow::task_cancel_relayed,
    },
    CheckDef {
        name: "task-confined",
        asserts: "another identity's tasks/get with the task id got no answer holding the task, and its tasks/cancel never reached the upstream's task; not applicable where the profile declares no other identity over a transport that carries one, or where the owner could not read the task either",
        params: &[],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::TaskAsOther],
        run: task_follow::task_confined,
    },
    CheckDef {
        name: "cache-hints-kept",
        asserts: "the client's answer to `method` (a listing, every page asked, or a read of `uri` with the call's nonce appended) carries the caching hints the upstream put on its own, no looser: `ttlMs` no longer than the upstream's and `cacheScope` never widened from `private` to `public` (a shorter ttl or a narrower scope is noted); not applicable where the upstream gave no hints",
        params: &[
            ("method", ParamKind::Word(cache::HINTED_METHODS), true),
            ("uri", ParamKind::Text, false),
        ],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::CacheHints, Gathers::UpstreamListings],
        run: cache::cache_hints_kept,
    },
    CheckDef {
        name: "cache-private-unshared",
        asserts: "a read of `uri` (the call's nonce appended), which the upstream answers marked `private` with contents that name that read alone, then the same read as the profile's other identity: the other identity is not answered with the first identity's contents; not applicable where the profile declares no other identity over a transport that carries one",
        params: &[("uri", ParamKind::Text, true)],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::CacheReadAsOther],
        run: cache::cache_private_unshared,
    },
    CheckDef {
        name: "cache-ttl-honoured",
        asserts: "a read of `uri` (the call's nonce appended), whose contents name that read alone, then the same read once the ttlMs of its answer has passed: the second is not answered with the first's contents",
        params: &[("uri", ParamKind::Text, true)],
        reads: Reads::Evidence,
        fields: Fields::None,
        gathers: &[Gathers::CacheReadAfterTtl],
        run: cache::cache_ttl_honoured,
    },
];
