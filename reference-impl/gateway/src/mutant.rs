//! Deliberate defects. Each one is a named branch at the one place its defect lives, so a
//! case that fails on the mutant fails for the reason the mutant names and nothing else.
//! Several reproduce the findings of the MCP Hangar inventory (seed 000).

use std::fmt;
use std::str::FromStr;

/// One deliberate defect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mutant {
    TruncatorMisreadsPayload,
    MetaCutApart,
    TaskMetaDropped,
    AuditErrorUnredacted,
    BatchSerializedTwice,
    ProtocolErrorAsIsError,
    ErrorCodeRewritten,
    ErrorDataDropped,
    UnknownFieldsDropped,
    MetaMerged,
    OutputSchemaStripped,
    SchemaNotValidated,
    SilentTruncation,
    StringMarkerInArray,
    LinkMetadataDropped,
    ContinuationAnyIdentity,
    LinksUnresolvable,
    RedactionOff,
    IsErrorDropped,
    UnboundedRead,
    StatusFlattened,
    StatusOnlyOnFailure,
    ReasonDropped,
    FailureResultDropped,
    EntryMetaDropped,
    ProvenanceStripped,
    DataMarkDropped,
    InstructionsUnflagged,
    InstructionsStripped,
    HtmlFlattened,
    BinaryInline,
    MirrorLeftStale,
    CutDropsIds,
    AlwaysCut,
    BatchLinksRebuilt,
    DeleteNoop,
    AuditWithoutCallId,
    AuditKeepsResultBody,
    ArgumentsLoggedRaw,
    OverRedaction,
    FieldsCamelCased,
    ResultTypeDropped,
    NonObjectStructuredDropped,
    OutputsFlattened,
    RequestedOutputsDropped,
    UndeclaredSelectorsDropped,
    VariantSchemasMerged,
    BridgeStructuredFromAnyAudience,
    BridgeSelectionLeaked,
    FlatCutSilently,
    UpstreamGarbageAsSuccess,
    TaskHandleReadAsResult,
    TaskStatusCached,
    DefaultsWrittenOut,
    UnroutableAsToolResult,
    ErrorsHeldToSchema,
    OversizedKillsSession,
    UnroutableAsInternalError,
    AuditErrorCodeDropped,
    LargeTextTranscoded,
    OptionalsWrittenNull,
    StructuredShedWhenLarge,
    LinksLeftUnprojected,
    FaultsLeftHanging,
    CapabilitiesDropped,
    ServerInfoDropped,
    UpstreamInitializedTwice,
    TextResultSentTwice,
    RequestMetaDropped,
    NullArgumentsDropped,
    ProgressTokenNotMapped,
    ListingTitleInvented,
    VersionNotEchoed,
    CapabilityInvented,
    SessionPerCall,
    ResultSentTwice,
    ProgressToLatestCaller,
    LogsToLatestCaller,
    ListingBeforeInitialize,
    ClientCapabilitiesWidened,
    ListingFirstPageOnly,
    ListingOrderUnstable,
    UpstreamHeadersDropped,
    ListedItemsTyped,
    CancelNotForwarded,
    PromptArgumentsDropped,
    CompletionRebuilt,
    LogMessagesDropped,
    ClientRequestsRetyped,
    ListChangedDropped,
    ListingKeptStale,
    ItemListingsKeptStale,
    ResourceUpdatesDropped,
    ListenStreamUnfed,
    InputRequestsDropped,
    InputRequestsAnswered,
    InputRequiredHeldToSchema,
    RequestStateRedacted,
    RequestStateRewritten,
    RetryParamsDropped,
    RetryAnsweredFromCache,
    ParamHeadersDropped,
    RoutingHeadersUnchecked,
    LogLevelDropped,
    LogLevelInvented,
    RequestEnvelopeRebuilt,
    DiscoverNotServed,
    DiscoverCapabilitiesFixed,
    ServerInfoReplaced,
    // The tasks extension and caching hints through the gateway.
    TaskTimingRenamed,
    TaskUpdateUnrouted,
    TaskCancelAckedLocally,
    TaskNameHeaderMissing,
    TaskAnyIdentity,
    CacheHintsDropped,
    CacheScopeWidened,
    CachePrivateShared,
    CacheTtlIgnored,
}

/// (mutant, name, surface, defect)
const TABLE: &[(Mutant, &str, &str, &str)] = &[
    // The tasks extension and caching hints through the gateway.
    (
        Mutant::TaskTimingRenamed,
        "task-timing-renamed",
        "task-results",
        "a tasks-extension task is relayed through a model of 2025-11-25 tasks: on its handle and on every tasks/get answer, ttlMs and pollIntervalMs become ttl and pollInterval",
    ),
    (
        Mutant::TaskUpdateUnrouted,
        "task-update-unrouted",
        "task-results",
        "tasks/update is answered method not found, as by a gateway that routes only the task methods of 2025-11-25: a task waiting for input never gets the client's answer",
    ),
    (
        Mutant::TaskCancelAckedLocally,
        "task-cancel-acked-locally",
        "task-results",
        "a tasks-extension tasks/cancel is acknowledged by the gateway itself, the acknowledgement being empty anyway, and never reaches the upstream, which works on",
    ),
    (
        Mutant::TaskNameHeaderMissing,
        "task-name-header-missing",
        "upstream-http",
        "tasks/get, tasks/update and tasks/cancel go to an HTTP upstream without Mcp-Name, as from a header table written before the tasks extension, which names only tools, prompts and resources",
    ),
    (
        Mutant::TaskAnyIdentity,
        "task-any-identity",
        "task-results",
        "a task id is honoured for whoever sends it: another identity's tasks/get reads the task and its tasks/cancel cancels it",
    ),
    (
        Mutant::CacheHintsDropped,
        "cache-hints-dropped",
        "cache-hints",
        "listings and resources/read reach the client without ttlMs and cacheScope, as through a model of results from before 2026-07-28",
    ),
    (
        Mutant::CacheScopeWidened,
        "cache-scope-widened",
        "cache-hints",
        "the gateway's own listings are marked cacheScope public whatever their upstreams said, so a listing an upstream marked private may be shared by any cache",
    ),
    (
        Mutant::CachePrivateShared,
        "cache-private-shared",
        "shared-cache",
        "the cache keeps an answer the upstream marked private under its request alone, not its authorization context, and serves it to every caller",
    ),
    (
        Mutant::CacheTtlIgnored,
        "cache-ttl-ignored",
        "shared-cache",
        "cached answers never expire: one is served long after the ttlMs its upstream gave",
    ),
    (
        Mutant::ParamHeadersDropped,
        "param-headers-dropped",
        "stateless-wire",
        "calls to an HTTP upstream carry no Mcp-Param-* headers: the parameters a tool marks with x-mcp-header are never mirrored",
    ),
    (
        Mutant::RoutingHeadersUnchecked,
        "routing-headers-unchecked",
        "stateless-wire",
        "on the HTTP north only MCP-Protocol-Version is compared with the body: a request whose Mcp-Method, Mcp-Name or Mcp-Param-* headers are missing or disagree with it is relayed",
    ),
    (
        Mutant::LogLevelDropped,
        "log-level-dropped",
        "stateless-wire",
        "the request _meta goes upstream without the caller's io.modelcontextprotocol/logLevel, so the upstream sends no log messages for a request that asked",
    ),
    (
        Mutant::LogLevelInvented,
        "log-level-invented",
        "stateless-wire",
        "a stateless request that names no log level is read as one asking for debug, as a gateway that fills in a default level does: its upstream's log messages reach a client that never asked",
    ),
    (
        Mutant::RequestEnvelopeRebuilt,
        "request-envelope-rebuilt",
        "stateless-wire",
        "the upstream request's envelope is rebuilt as an SDK client builds its own: empty clientCapabilities and the gateway's clientInfo, whatever the caller declared",
    ),
    (
        Mutant::DiscoverNotServed,
        "discover-not-served",
        "stateless-wire",
        "server/discover is answered method not found, as by a gateway built for the handshake revisions",
    ),
    (
        Mutant::DiscoverCapabilitiesFixed,
        "discover-capabilities-fixed",
        "stateless-wire",
        "server/discover declares tools alone, whatever the upstreams offer and the gateway relays (prompts, resources, completions, logging)",
    ),
    (
        Mutant::ServerInfoReplaced,
        "server-info-replaced",
        "stateless-wire",
        "every relayed result on the 2026-07-28 wire gets the gateway's own io.modelcontextprotocol/serverInfo in its _meta, in place of the upstream's",
    ),
    (
        Mutant::InputRequestsDropped,
        "input-requests-dropped",
        "input-required",
        "an input_required result is relayed as a typed CallToolResult model reads it: its inputRequests and requestState are lost, so the client has nothing to answer or send back",
    ),
    (
        Mutant::InputRequestsAnswered,
        "input-requests-answered",
        "input-required",
        "the gateway answers every elicitation an upstream asks for itself, declining it as a headless client would, and retries at once: the user is never asked and the upstream reads a refusal nobody gave",
    ),
    (
        Mutant::InputRequiredHeldToSchema,
        "input-required-held-to-schema",
        "input-required",
        "an input_required result is validated against the tool's outputSchema, and replaced by a schema-violation error since it carries no structuredContent",
    ),
    (
        Mutant::RequestStateRedacted,
        "request-state-redacted",
        "input-required",
        "an input_required result's requestState goes through the redactor like model-visible text: a state in the form of a JWT is replaced by a redaction marker, and the upstream cannot verify the retry",
    ),
    (
        Mutant::RequestStateRewritten,
        "request-state-rewritten",
        "input-required",
        "the gateway hands its client a requestState of its own (the upstream's prefixed with the upstream's name) and never unwraps it: the retry brings the upstream a state it never issued",
    ),
    (
        Mutant::RetryParamsDropped,
        "retry-params-dropped",
        "input-required",
        "tools/call is forwarded with the params a 2025-11-25 typed model knows (name, arguments, task, _meta): a retry's inputResponses and requestState never reach the upstream",
    ),
    (
        Mutant::RetryAnsweredFromCache,
        "retry-answered-from-cache",
        "input-required",
        "flat answers are cached by upstream, tool and arguments, as a gateway that caches idempotent calls does: the retry, which repeats the call's arguments, is answered with the input_required result again",
    ),
    (
        Mutant::PromptArgumentsDropped,
        "prompt-arguments-dropped",
        "server-features",
        "prompts/get is forwarded with the prompt's name alone: the client's arguments never reach the upstream",
    ),
    (
        Mutant::CompletionRebuilt,
        "completion-rebuilt",
        "server-features",
        "a completion is rebuilt from its values alone, as a typed model that knows only `values` would: the upstream's `total` and `hasMore` are lost",
    ),
    (
        Mutant::LogMessagesDropped,
        "log-messages-dropped",
        "server-features",
        "log messages (notifications/message) an upstream sends during a call are dropped, though the gateway declares `logging`",
    ),
    (
        Mutant::ClientRequestsRetyped,
        "client-requests-retyped",
        "server-features",
        "what an upstream asks its client during a call, and the client's answer, pass through a typed model that keeps required members alone: a sampling request loses its systemPrompt and modelPreferences, an elicitation's fields their defaults and enums, a root its name",
    ),
    (
        Mutant::ListChangedDropped,
        "list-changed-dropped",
        "server-features",
        "the gateway declares listChanged where an upstream does, but an upstream's notifications/*/list_changed reaches none of its clients: they are promised a notice that never comes",
    ),
    (
        Mutant::ListingKeptStale,
        "listing-kept-stale",
        "tools-list",
        "an upstream's notifications/tools/list_changed is relayed, but the tools pinned at start stay the gateway's listing: tools/list goes on serving the tools from before the change",
    ),
    (
        Mutant::ItemListingsKeptStale,
        "item-listings-kept-stale",
        "listings",
        "prompts/list and resources/list answer with each upstream's listing as first fetched, as a gateway that caches listings does: an upstream's notifications/*/list_changed is relayed, and the listing from before the change is served on",
    ),
    (
        Mutant::ResourceUpdatesDropped,
        "resource-updates-dropped",
        "server-features",
        "resources/subscribe is relayed to the upstream and answered, but the upstream's notifications/resources/updated reaches no client: a subscribed client is subscribed to nothing",
    ),
    (
        Mutant::ListenStreamUnfed,
        "listen-stream-unfed",
        "stateless-wire",
        "subscriptions/listen is acknowledged and held open, but nothing the upstreams tell of their lists and resources reaches the stream",
    ),
    (
        Mutant::CancelNotForwarded,
        "cancel-not-forwarded",
        "flat",
        "a caller's notifications/cancelled is ignored: the upstream goes on with the call and is never told",
    ),
    (
        Mutant::ListedItemsTyped,
        "listed-items-typed",
        "listings",
        "resources, resource templates and prompts are listed through a typed model that keeps only name, URI, description, MIME type and arguments",
    ),
    (
        Mutant::UpstreamHeadersDropped,
        "upstream-headers-dropped",
        "upstream-http",
        "requests to an HTTP upstream carry no MCP-Protocol-Version, Mcp-Method or Mcp-Name header",
    ),
    (
        Mutant::ListingFirstPageOnly,
        "listing-first-page-only",
        "tools-list",
        "the upstream's tools/list is read to its first page: a nextCursor is never followed",
    ),
    (
        Mutant::ListingOrderUnstable,
        "listing-order-unstable",
        "tools-list",
        "each tools/list answer starts one tool further on, as a listing built from an unordered map changes order",
    ),
    (
        Mutant::ListingBeforeInitialize,
        "listing-before-initialize",
        "upstream-initialize",
        "the gateway asks its upstream for tools/list before initialize, then makes the handshake",
    ),
    (
        Mutant::ClientCapabilitiesWidened,
        "client-capabilities-widened",
        "upstream-initialize",
        "the upstream initialize declares sampling and roots, which the gateway's client never declared",
    ),
    (
        Mutant::VersionNotEchoed,
        "version-not-echoed",
        "initialize",
        "initialize answers 2025-03-26, a version the gateway also speaks, whatever version the client asked for",
    ),
    (
        Mutant::CapabilityInvented,
        "capability-invented",
        "initialize",
        "initialize declares completions and the gateway answers completion/complete as an unknown method, whatever its upstreams offer",
    ),
    (
        Mutant::SessionPerCall,
        "session-per-call",
        "flat",
        "every call initializes the upstream again before it is sent, as a gateway with a session per call does",
    ),
    (
        Mutant::ProgressToLatestCaller,
        "progress-to-latest-caller",
        "flat",
        "upstream progress goes to the caller whose call started last, so one client session gets another's notifications",
    ),
    (
        Mutant::LogsToLatestCaller,
        "log-messages-to-latest-caller",
        "sessions",
        "log messages an upstream sends during a call go to the caller whose call started last, so one client session gets what another's call logged",
    ),
    (
        Mutant::ResultSentTwice,
        "result-sent-twice",
        "flat",
        "a result with structuredContent gets its JSON text as one more content block",
    ),
    (
        Mutant::RequestMetaDropped,
        "request-meta-dropped",
        "flat",
        "the caller's request _meta goes upstream with nothing but the progress token",
    ),
    (
        Mutant::NullArgumentsDropped,
        "null-arguments-dropped",
        "flat",
        "arguments pass through a typed model that drops members whose value is null",
    ),
    (
        Mutant::ProgressTokenNotMapped,
        "progress-token-not-mapped",
        "flat",
        "upstream progress reaches the caller under the gateway's own token, never mapped back to the caller's",
    ),
    (
        Mutant::ListingTitleInvented,
        "listing-title-invented",
        "tools-list",
        "tools/list gives every tool without a title one made from its name",
    ),
    (
        Mutant::TruncatorMisreadsPayload,
        "truncator-misreads-payload",
        "batch",
        "the budget cut looks for a `result` key the payload does not have, so nothing is ever cut and an over-budget entry floods the batch",
    ),
    (
        Mutant::MetaCutApart,
        "meta-cut-apart",
        "batch",
        "over budget, content, structuredContent and _meta are cut independently: _meta values are truncated like any string",
    ),
    (
        Mutant::TaskMetaDropped,
        "task-meta-dropped",
        "tasks",
        "the upstream's _meta on a task handle is dropped when the handle is relayed",
    ),
    (
        Mutant::AuditErrorUnredacted,
        "audit-error-unredacted",
        "audit",
        "error text is written to the audit and the log without redaction",
    ),
    (
        Mutant::BatchSerializedTwice,
        "batch-serialized-twice",
        "batch",
        "relay_batch content is the JSON text of its structuredContent",
    ),
    (
        Mutant::ProtocolErrorAsIsError,
        "protocol-error-as-is-error",
        "flat",
        "an upstream JSON-RPC error becomes an isError result with the message as text",
    ),
    (
        Mutant::ErrorCodeRewritten,
        "error-code-rewritten",
        "flat",
        "every upstream JSON-RPC error code becomes -32603",
    ),
    (
        Mutant::ErrorDataDropped,
        "error-data-dropped",
        "flat",
        "the data member of an upstream JSON-RPC error is dropped",
    ),
    (
        Mutant::UnknownFieldsDropped,
        "unknown-fields-dropped",
        "flat",
        "flat results pass through a typed model that drops unknown members",
    ),
    (
        Mutant::MetaMerged,
        "meta-merged",
        "flat",
        "gateway keys are merged into the upstream result's _meta",
    ),
    (
        Mutant::OutputSchemaStripped,
        "output-schema-stripped",
        "tools-list",
        "tools/list drops outputSchema while structuredContent is still relayed",
    ),
    (
        Mutant::SchemaNotValidated,
        "schema-not-validated",
        "flat",
        "structuredContent is relayed without validation against the pinned outputSchema",
    ),
    (
        Mutant::SilentTruncation,
        "silent-truncation",
        "batch",
        "an over-budget entry is cut without a marker, truncation meta or handle",
    ),
    (
        Mutant::StringMarkerInArray,
        "string-marker-in-array",
        "batch",
        "a \"[N more items truncated]\" string is appended inside a typed array of structuredContent",
    ),
    (
        Mutant::LinkMetadataDropped,
        "link-metadata-dropped",
        "links",
        "rewritten resource_links lose their title and annotations",
    ),
    (
        Mutant::ContinuationAnyIdentity,
        "continuation-any-identity",
        "continuation",
        "relay_fetch returns a retained result to any identity, not only its owner",
    ),
    (
        Mutant::LinksUnresolvable,
        "links-unresolvable",
        "links",
        "links are rewritten but resources/read of a rewritten link fails",
    ),
    (
        Mutant::RedactionOff,
        "redaction-off",
        "redaction",
        "no redaction of results, audit or logs (the normalizer's envelope stays redacted)",
    ),
    (
        Mutant::IsErrorDropped,
        "is-error-dropped",
        "flat",
        "isError is removed from flat results",
    ),
    (
        Mutant::UnboundedRead,
        "unbounded-read",
        "upstream-read",
        "max_response_bytes is not enforced: any upstream response is read whole",
    ),
    (
        Mutant::StatusFlattened,
        "status-flattened",
        "batch",
        "every batch entry says `ok`: the entry reports that the call was made, not how it ended",
    ),
    (
        Mutant::StatusOnlyOnFailure,
        "status-only-on-failure",
        "batch",
        "a successful entry carries no status (absence is meant to read as success)",
    ),
    (
        Mutant::ReasonDropped,
        "reason-dropped",
        "batch",
        "a failed entry carries no reason: status only, nothing saying what failed",
    ),
    (
        Mutant::FailureResultDropped,
        "failure-result-dropped",
        "batch",
        "a batch entry for an isError result keeps status and reason but drops the upstream's result (text, structuredContent)",
    ),
    (
        Mutant::EntryMetaDropped,
        "entry-meta-dropped",
        "batch",
        "a batch entry's result loses the upstream's _meta (kept only inside the envelope)",
    ),
    (
        Mutant::ProvenanceStripped,
        "provenance-stripped",
        "batch",
        "the envelope's provenance (server, tool, time, upstream _meta) is stripped from the entry",
    ),
    (
        Mutant::DataMarkDropped,
        "data-mark-dropped",
        "batch",
        "entries no longer mark the upstream's content as data, not direction",
    ),
    (
        Mutant::InstructionsUnflagged,
        "instructions-unflagged",
        "batch",
        "instruction-like text in a result is not flagged in the entry",
    ),
    (
        Mutant::InstructionsStripped,
        "instructions-stripped",
        "flat",
        "sentences that look like instructions are deleted from results instead of flagged",
    ),
    (
        Mutant::HtmlFlattened,
        "html-flattened",
        "batch",
        "HTML reaches the model as a plain run of words: tags stripped, table structure lost",
    ),
    (
        Mutant::BinaryInline,
        "binary-inline",
        "batch",
        "binary content (images, blobs) stays inline as base64 instead of becoming an artifact reference",
    ),
    (
        Mutant::MirrorLeftStale,
        "mirror-left-stale",
        "batch",
        "a cut shortens structuredContent but keeps the full JSON mirror text beside it",
    ),
    (
        Mutant::CutDropsIds,
        "cut-drops-ids",
        "batch",
        "the cut drops identifier-like fields (id, *Id, cursors) of what it keeps as low-value",
    ),
    (
        Mutant::AlwaysCut,
        "always-cut",
        "batch",
        "every entry is cut to half (arrays and text), under budget too, without a marker",
    ),
    (
        Mutant::BatchLinksRebuilt,
        "batch-links-rebuilt",
        "links",
        "links in batch entries are rebuilt as {type, uri} only: name and every other member lost",
    ),
    (
        Mutant::DeleteNoop,
        "delete-noop",
        "continuation",
        "relay_delete says the result was deleted but keeps it",
    ),
    (
        Mutant::AuditWithoutCallId,
        "audit-without-call-id",
        "audit",
        "audit and log lines carry no call identification (no nonce)",
    ),
    (
        Mutant::AuditKeepsResultBody,
        "audit-keeps-result-body",
        "audit",
        "the audit record carries the result body (redacted) beside the call's facts",
    ),
    (
        Mutant::ArgumentsLoggedRaw,
        "arguments-logged-raw",
        "audit",
        "a debug log line writes each call's arguments without redaction",
    ),
    (
        Mutant::OverRedaction,
        "over-redaction",
        "redaction",
        "any long digit run, UUID or hex id is redacted as a possible card number or key",
    ),
    (
        Mutant::FieldsCamelCased,
        "fields-camel-cased",
        "flat",
        "structuredContent keys are renamed into a camelCase house style",
    ),
    (
        Mutant::ResultTypeDropped,
        "result-type-dropped",
        "flat",
        "resultType is removed from relayed results (a 2025-era typed model)",
    ),
    (
        Mutant::NonObjectStructuredDropped,
        "non-object-structured-dropped",
        "flat",
        "array, primitive and null structuredContent is dropped (object-only, as SDKs for 2025 peers do)",
    ),
    (
        Mutant::OutputsFlattened,
        "outputs-flattened",
        "flat",
        "SEP-3279 outputs[] are rewritten to legacy content and structuredContent",
    ),
    (
        Mutant::RequestedOutputsDropped,
        "requested-outputs-dropped",
        "output-selection",
        "a SEP-3279 call reaches its upstream without the caller's requestedOutputs, so the upstream answers assistant/content alone",
    ),
    (
        Mutant::UndeclaredSelectorsDropped,
        "undeclared-selectors-dropped",
        "output-selection",
        "selectors of requestedOutputs the tool does not declare are left out of the call instead of refused, so the caller gets a result without the outputs it asked for",
    ),
    (
        Mutant::VariantSchemasMerged,
        "variant-schemas-merged",
        "output-selection",
        "every structured output of a SEP-3279 result is held to the first structured variant's schema, whatever its own variant declares",
    ),
    (
        Mutant::BridgeStructuredFromAnyAudience,
        "bridge-structured-from-any-audience",
        "output-selection",
        "bridging a 2026-07-28 caller to a SEP-3279 upstream, the call selects every structured variant and structuredContent is built from the first structured output, whatever its audience",
    ),
    (
        Mutant::BridgeSelectionLeaked,
        "bridge-selection-leaked",
        "output-selection",
        "bridging a SEP-3279 caller to a 2026-07-28 upstream, the caller's requestedOutputs is sent to the upstream, which the SEP says is never sent under an older revision",
    ),
    (
        Mutant::FlatCutSilently,
        "flat-cut-silently",
        "flat",
        "flat results over 64 KiB of JSON are cut to fit, without a marker or isError",
    ),
    (
        Mutant::UpstreamGarbageAsSuccess,
        "upstream-garbage-as-success",
        "upstream-read",
        "a malformed, broken or unanswered (500 ms patience) upstream call becomes an empty successful result",
    ),
    (
        Mutant::TaskHandleReadAsResult,
        "task-handle-read-as-result",
        "tasks",
        "a task handle is read through a CallToolResult model: the client gets an empty success, no handle",
    ),
    (
        Mutant::TaskStatusCached,
        "task-status-cached",
        "tasks",
        "tasks/get is answered from the handle the gateway saw: the status stays `working` and the task never ends",
    ),
    (
        Mutant::DefaultsWrittenOut,
        "defaults-written-out",
        "flat",
        "flat results are written out with their defaults, as a typed model re-serializes them: `isError: false` added where the upstream wrote none (the same value, another form)",
    ),
    (
        Mutant::UnroutableAsToolResult,
        "unroutable-as-tool-result",
        "flat",
        "a tool name the gateway cannot route to an upstream is answered with an isError tool result, not a JSON-RPC error",
    ),
    (
        Mutant::ErrorsHeldToSchema,
        "errors-held-to-schema",
        "flat",
        "an isError result is validated against the tool's success outputSchema, and one that does not match is replaced by a schema-violation error",
    ),
    (
        Mutant::OversizedKillsSession,
        "oversized-kills-session",
        "upstream-read",
        "an answer past the read bound is refused with -32603 \"Connection closed\" and its upstream is never asked again: every later call is answered -32603 \"Not connected\"",
    ),
    (
        Mutant::UnroutableAsInternalError,
        "unroutable-as-internal-error",
        "flat",
        "a tool name the gateway cannot route to an upstream is answered -32603 \"key is not defined\", as a crash in a JavaScript relay answers it",
    ),
    (
        Mutant::AuditErrorCodeDropped,
        "audit-error-code-dropped",
        "audit",
        "no record of a call that ended in a JSON-RPC error (its audit record, its request log line) carries the error's code",
    ),
    (
        Mutant::LargeTextTranscoded,
        "large-text-transcoded",
        "flat",
        "a text block over 1 MiB is rewritten to the same length (each `-` becomes `_`), as a lossy re-encoding does",
    ),
    (
        Mutant::OptionalsWrittenNull,
        "optionals-written-null",
        "flat",
        "a content block without annotations is relayed with `annotations: null`, as a typed model that writes absent options out does",
    ),
    (
        Mutant::StructuredShedWhenLarge,
        "structured-shed-when-large",
        "flat",
        "a result over 16 KiB loses its structuredContent, and the client gets only its summary text",
    ),
    (
        Mutant::LinksLeftUnprojected,
        "links-left-unprojected",
        "links",
        "result links are handed out as the upstream wrote them, while resources/read resolves only the gateway's own relay URIs",
    ),
    (
        Mutant::CapabilitiesDropped,
        "capabilities-dropped",
        "initialize",
        "`initialize` declares tools alone, and prompts/list, resources/list, resources/templates/list, completion/complete and logging/setLevel are answered as unknown methods, whatever the upstream offers",
    ),
    (
        Mutant::ServerInfoDropped,
        "server-info-dropped",
        "initialize",
        "`initialize` is answered with no serverInfo",
    ),
    (
        Mutant::UpstreamInitializedTwice,
        "upstream-initialized-twice",
        "upstream-initialize",
        "each upstream is initialized twice when the gateway starts: an upstream session no client asked for",
    ),
    (
        Mutant::TextResultSentTwice,
        "text-result-sent-twice",
        "flat",
        "a text-only result over 16 KiB also carries its text as structuredContent, sending it twice",
    ),
    (
        Mutant::FaultsLeftHanging,
        "faults-left-hanging",
        "flat",
        "the gateway sets no timeout on its upstream's calls: an upstream that never answers leaves the client waiting",
    ),
];

impl Mutant {
    pub fn all() -> impl Iterator<Item = Mutant> {
        TABLE.iter().map(|row| row.0)
    }

    fn row(self) -> &'static (Mutant, &'static str, &'static str, &'static str) {
        // Every variant has a row; `all_have_rows` below keeps it so.
        TABLE.iter().find(|row| row.0 == self).unwrap_or(&TABLE[0])
    }

    pub fn name(self) -> &'static str {
        self.row().1
    }

    pub fn surface(self) -> &'static str {
        self.row().2
    }

    pub fn defect(self) -> &'static str {
        self.row().3
    }

    /// `name<TAB>surface<TAB>defect` lines, for `--list-mutants`.
    pub fn listing() -> String {
        TABLE
            .iter()
            .map(|(_, name, surface, defect)| format!("{name}\t{surface}\t{defect}\n"))
            .collect()
    }
}

impl fmt::Display for Mutant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A mutant name that is not in the table.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown mutant `{0}` (known: {known})", known = known_names())]
pub struct UnknownMutant(pub String);

fn known_names() -> String {
    TABLE.iter().map(|r| r.1).collect::<Vec<_>>().join(", ")
}

impl FromStr for Mutant {
    type Err = UnknownMutant;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TABLE
            .iter()
            .find(|row| row.1 == s)
            .map(|row| row.0)
            .ok_or_else(|| UnknownMutant(s.to_string()))
    }
}

/// The defect this gateway runs with, if any. Passed everywhere a defect may live.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Mutation(pub Option<Mutant>);

impl Mutation {
    pub fn is(self, m: Mutant) -> bool {
        self.0 == Some(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn all_have_rows_and_round_trip() {
        for m in Mutant::all() {
            assert_eq!(m.name().parse::<Mutant>(), Ok(m));
            assert!(!m.defect().is_empty());
        }
        assert_eq!(Mutant::all().count(), 118);
        let err = "nope".parse::<Mutant>().unwrap_err().to_string();
        assert!(err.contains("meta-cut-apart"), "{err}");
        assert_eq!(Mutant::listing().lines().count(), 118);
    }
}
