//! The resources behind the `structured_links` canary's links, so a gateway that rewrites or
//! proxies link URIs can be checked by resolving them.

use serde_json::{Value, json};

/// Where the canary's links point; every one resolves with `resources/read`.
pub const LINK_PREFIX: &str = "canary://links/";

struct Resource {
    path: &'static str,
    title: &'static str,
    mime_type: &'static str,
    text: &'static str,
}

const RESOURCES: [Resource; 6] = [
    Resource {
        path: "report.txt",
        title: "Quarterly report",
        mime_type: "text/plain",
        text: "relaycheck canary resource: report.txt",
    },
    Resource {
        path: "data.json",
        title: "Data set",
        mime_type: "application/json",
        text: "{\"relaycheck\":\"data.json\"}",
    },
    Resource {
        path: "embedded.txt",
        title: "Embedded resource",
        mime_type: "text/plain",
        text: "relaycheck canary resource: embedded.txt",
    },
    Resource {
        path: "deep/a.txt",
        title: "Nested link A",
        mime_type: "text/plain",
        text: "relaycheck canary resource: deep/a.txt",
    },
    Resource {
        path: "deep/b.txt",
        title: "Nested link B",
        mime_type: "text/plain",
        text: "relaycheck canary resource: deep/b.txt",
    },
    Resource {
        path: "meta.txt",
        title: "Link carrying _meta",
        mime_type: "text/plain",
        text: "relaycheck canary resource: meta.txt",
    },
];

/// The URI of one of the canary's resources.
pub fn uri(path: &str) -> String {
    format!("{LINK_PREFIX}{path}")
}

/// The text contents of a resource, as served by `resources/read`.
pub fn text_of(uri: &str) -> Option<&'static str> {
    let path = uri.strip_prefix(LINK_PREFIX)?;
    RESOURCES.iter().find(|r| r.path == path).map(|r| r.text)
}

/// `resources/list` entries.
pub fn list() -> Vec<Value> {
    RESOURCES
        .iter()
        .map(|r| {
            json!({
                "uri": uri(r.path),
                "name": r.path,
                "title": r.title,
                "mimeType": r.mime_type,
            })
        })
        .collect()
}

/// `resources/read` contents for a URI, `None` when the canary does not serve it.
pub fn read(uri_asked: &str) -> Option<Value> {
    let path = uri_asked.strip_prefix(LINK_PREFIX)?;
    let resource = RESOURCES.iter().find(|r| r.path == path)?;
    Some(json!({
        "contents": [{
            "uri": uri_asked,
            "mimeType": resource.mime_type,
            "text": resource.text,
        }]
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_listed_resource_reads() {
        for entry in list() {
            let uri = entry["uri"].as_str().unwrap();
            assert!(read(uri).is_some(), "{uri}");
        }
        assert!(read("canary://links/missing").is_none());
    }
}
