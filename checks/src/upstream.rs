//! What the upstream saw over a whole run, not only during one call: how the target opened its
//! upstream sessions and what it asked the upstream to list. The runner gathers them from the
//! canary's observation log.

use serde_json::Value;

use relaycheck_model::observation::Observation;

/// How the target opened its upstream sessions, over the whole run so far: a skipped
/// handshake happens once, often at start-up, before any case's call.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpstreamHandshakes {
    /// The canary's answers to requests sent on a connection before its `initialize`, outside
    /// the stateless envelope.
    pub before_initialize: Vec<Observation>,
    /// The client capabilities of each upstream `initialize`, in order (`null` where the
    /// request had none).
    pub client_capabilities: Vec<Value>,
    /// The result of each `initialize` answer the upstream gave, in order: its capabilities
    /// and its `serverInfo`, what the target was told of its upstream.
    pub server_answers: Vec<Value>,
}

impl UpstreamHandshakes {
    /// What the upstream said of itself in its latest `initialize` answer.
    pub fn latest_answer(&self) -> Option<&Value> {
        self.server_answers.last()
    }
}

/// What the upstream listed of its tools over the whole run so far, page by page, and how the
/// target asked: enough to say which pages a target never asked for.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpstreamListings {
    /// Each `tools/list` answer, in the order the canary sent them.
    pub pages: Vec<ListedPage>,
    /// The `cursor` of each `tools/list` request that had one.
    pub asked_with: Vec<Value>,
    /// The items of the last answer to each other listing (`resources/list`,
    /// `resources/templates/list`, `prompts/list`), by method.
    pub items: std::collections::BTreeMap<String, Vec<Value>>,
    /// The caching hints (`ttlMs`, `cacheScope`) of the last answer to each listing,
    /// `tools/list` among them, that carried any, by method.
    pub hints: std::collections::BTreeMap<String, Value>,
}

/// One `tools/list` answer of the upstream.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ListedPage {
    /// The names of the tools on the page, in order.
    pub tools: Vec<String>,
    /// The page's `nextCursor`, when more followed.
    pub next_cursor: Option<Value>,
}

impl UpstreamListings {
    /// Every tool the upstream listed on any page, each once, in the order first listed.
    pub fn tools(&self) -> Vec<&str> {
        let mut seen = std::collections::BTreeSet::new();
        self.pages
            .iter()
            .flat_map(|page| page.tools.iter())
            .filter(|name| seen.insert(name.as_str()))
            .map(String::as_str)
            .collect()
    }

    /// The upstream's latest whole listing, in its order: the pages from the one after the
    /// previous last page up to the last page that had no `nextCursor`. Listings made in
    /// different revisions list different tools, so their union has no order of its own; the
    /// union (of [`Self::tools`]) when no listing was ever finished.
    pub fn latest(&self) -> Vec<&str> {
        let ends: Vec<usize> = self
            .pages
            .iter()
            .enumerate()
            .filter(|(_, page)| page.next_cursor.is_none())
            .map(|(at, _)| at)
            .collect();
        let Some(&last) = ends.last() else {
            return self.tools();
        };
        let first = match ends.len() {
            1 => 0,
            n => ends[n - 2] + 1,
        };
        self.pages[first..=last]
            .iter()
            .flat_map(|page| page.tools.iter().map(String::as_str))
            .collect()
    }

    /// The cursors the upstream handed out that the target never asked with.
    pub fn unfollowed(&self) -> Vec<&Value> {
        let mut out: Vec<&Value> = Vec::new();
        for cursor in self.pages.iter().filter_map(|p| p.next_cursor.as_ref()) {
            if !self.asked_with.contains(cursor) && !out.contains(&cursor) {
                out.push(cursor);
            }
        }
        out
    }

    /// Whether the upstream ever split its listing into pages.
    pub fn paged(&self) -> bool {
        self.pages.iter().any(|p| p.next_cursor.is_some())
    }
}
