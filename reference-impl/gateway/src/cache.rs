//! The gateway as a shared cache of its upstreams' cacheable answers (listings and
//! `resources/read`; MCP 2026-07-28 server/utilities/caching), off unless the config's
//! `[cache]` turns it on: a plain relay asks its upstream every time.
//!
//! An entry lives as long as the upstream's `ttlMs` says it is fresh and no longer, and an
//! entry the upstream marked `private` is kept for the authorization context that fetched it
//! alone: the spec forbids sharing it across contexts, and a gateway serves many. What a
//! cached answer tells the client is what is left of the upstream's freshness, so a client
//! that caches it in turn never keeps it longer than the upstream allowed.
//!
//! Freshness rests on the ttl, and on what the upstream tells: a listing an upstream says has
//! changed (on a listen stream the gateway holds for a client, `crate::listen`) is fetched
//! again, whatever time its ttl had left.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::{Map, Value, json};

use crate::gateway::Caller;
use crate::mutant::{Mutant, Mutation};

/// Where an entry came from and what asked for it: the request method and the params that
/// decide the answer, the version the answer speaks, and, for a `private` entry, the
/// authorization context it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct Key {
    upstream: String,
    method: String,
    version: String,
    params: String,
    owner: Option<String>,
}

#[derive(Debug, Clone)]
struct Entry {
    result: Value,
    expires: Instant,
}

/// The caching hints of an answer, as the gateway reads them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hints {
    pub ttl: Duration,
    pub private: bool,
}

impl Hints {
    /// The hints of a result; `None` for one that carries neither (a server of a revision
    /// before 2026-07-28). An absent or negative ttl reads as 0, immediately stale, as the spec
    /// asks of a client.
    pub fn of(result: &Value) -> Option<Hints> {
        let ttl = result.get("ttlMs");
        let scope = result.get("cacheScope");
        if ttl.is_none() && scope.is_none() {
            return None;
        }
        Some(Hints {
            ttl: Duration::from_millis(ttl.and_then(Value::as_u64).unwrap_or(0)),
            private: scope.and_then(Value::as_str) == Some("private"),
        })
    }

    /// The hints of an answer made of several (one listing of many upstreams): fresh only as
    /// long as its least fresh part, private when any part is.
    pub fn merged(parts: &[Option<Hints>]) -> Option<Hints> {
        if parts.iter().all(Option::is_none) {
            return None;
        }
        let zero = Hints {
            ttl: Duration::ZERO,
            private: false,
        };
        let parts: Vec<Hints> = parts.iter().map(|p| p.unwrap_or(zero)).collect();
        Some(Hints {
            ttl: parts.iter().map(|h| h.ttl).min().unwrap_or_default(),
            private: parts.iter().any(|h| h.private),
        })
    }

    /// Writes the hints on a result the gateway made.
    pub fn write(self, result: &mut Map<String, Value>, mutation: Mutation) {
        if mutation.is(Mutant::CacheHintsDropped) {
            return;
        }
        let scope = if self.private && !mutation.is(Mutant::CacheScopeWidened) {
            "private"
        } else {
            "public"
        };
        result.insert("ttlMs".into(), json!(self.ttl.as_millis() as u64));
        result.insert("cacheScope".into(), json!(scope));
    }
}

/// Takes the hints off a relayed result for the `cache-hints-dropped` mutant, as a gateway
/// whose model of a result has no such members rebuilds it.
pub fn relayed(result: &mut Value, mutation: Mutation) {
    if mutation.is(Mutant::CacheHintsDropped)
        && let Some(fields) = result.as_object_mut()
    {
        fields.shift_remove("ttlMs");
        fields.shift_remove("cacheScope");
    }
}

#[derive(Debug, Default)]
pub struct Cache {
    enabled: bool,
    mutation: Mutation,
    entries: Mutex<HashMap<Key, Entry>>,
}

impl Cache {
    pub fn new(enabled: bool, mutation: Mutation) -> Cache {
        Cache {
            enabled,
            mutation,
            entries: Mutex::default(),
        }
    }

    /// Forgets every answer to `method` of `upstream`: the upstream said it changed.
    pub fn forget(&self, upstream: &str, method: &str) {
        self.lock()
            .retain(|key, _| key.upstream != upstream || key.method != method);
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<Key, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The key of a request: its params without `_meta` (the envelope and the caller's own
    /// keys decide nothing of the answer but its version, which the key holds apart).
    fn key(upstream: &str, method: &str, caller: &Caller, params: &Value) -> Key {
        let params = match params.as_object() {
            Some(fields) => {
                let sorted: std::collections::BTreeMap<&String, &Value> =
                    fields.iter().filter(|(k, _)| *k != "_meta").collect();
                serde_json::to_string(&sorted).unwrap_or_default()
            }
            None => params.to_string(),
        };
        Key {
            upstream: upstream.to_string(),
            method: method.to_string(),
            version: caller.version.clone(),
            params,
            owner: None,
        }
    }

    /// Whether an answer to these params may be cached at all: a retry of a multi round-trip
    /// request depends on inputs outside the key, and the spec forbids caching it.
    fn cacheable(params: &Value) -> bool {
        params.get("inputResponses").is_none() && params.get("requestState").is_none()
    }

    /// A fresh entry for the request: one any caller may have, else the caller's own private
    /// one. Its `ttlMs` is what is left of its freshness.
    pub fn get(
        &self,
        upstream: &str,
        method: &str,
        caller: &Caller,
        params: &Value,
    ) -> Option<Value> {
        if !self.enabled || !Cache::cacheable(params) {
            return None;
        }
        let public = Cache::key(upstream, method, caller, params);
        let private = Key {
            owner: Some(caller.identity.0.clone()),
            ..public.clone()
        };
        let now = Instant::now();
        let mut entries = self.lock();
        entries.retain(|_, e| self.mutation.is(Mutant::CacheTtlIgnored) || e.expires > now);
        let entry = entries.get(&public).or_else(|| entries.get(&private))?;
        let mut result = entry.result.clone();
        if !self.mutation.is(Mutant::CacheTtlIgnored) {
            let left = entry.expires.saturating_duration_since(now);
            result["ttlMs"] = json!(left.as_millis() as u64);
        }
        Some(result)
    }

    /// Keeps an upstream's answer while its ttl says it is fresh: under the caller's
    /// authorization context when the upstream marked it `private`.
    pub fn put(
        &self,
        upstream: &str,
        method: &str,
        caller: &Caller,
        params: &Value,
        result: &Value,
    ) {
        if !self.enabled || !Cache::cacheable(params) {
            return;
        }
        if result.get("resultType").and_then(Value::as_str) != Some("complete") {
            return;
        }
        let Some(hints) = Hints::of(result).filter(|h| !h.ttl.is_zero()) else {
            return;
        };
        let mut key = Cache::key(upstream, method, caller, params);
        if hints.private && !self.mutation.is(Mutant::CachePrivateShared) {
            key.owner = Some(caller.identity.0.clone());
        }
        let entry = Entry {
            result: result.clone(),
            expires: Instant::now() + hints.ttl,
        };
        self.lock().insert(key, entry);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use relaycheck_reference::Identity;

    fn caller(identity: &str, version: &str) -> Caller {
        Caller {
            identity: Identity::new(identity),
            version: version.to_string(),
            stateless: true,
            meta: None,
            transport: "http",
            progress: None,
            cancel: None,
            back: None,
        }
    }

    fn read(scope: &str, ttl: u64, text: &str) -> Value {
        json!({"resultType": "complete", "contents": [{"uri": "u", "text": text}], "ttlMs": ttl, "cacheScope": scope})
    }

    #[test]
    fn a_public_entry_serves_everyone_until_its_ttl() {
        let cache = Cache::new(true, Mutation::default());
        let (alice, bob) = (caller("alice", "2026-07-28"), caller("bob", "2026-07-28"));
        let params = json!({"uri": "u", "_meta": {"k": 1}});
        cache.put(
            "up",
            "resources/read",
            &alice,
            &params,
            &read("public", 60_000, "a"),
        );
        let got = cache
            .get("up", "resources/read", &bob, &json!({"uri": "u"}))
            .expect("shared");
        assert_eq!(got["contents"][0]["text"], "a");
        assert!(got["ttlMs"].as_u64().unwrap() <= 60_000);
        assert!(
            cache
                .get("up", "resources/read", &bob, &json!({"uri": "v"}))
                .is_none()
        );
        let older = caller("bob", "2025-11-25");
        assert!(cache.get("up", "resources/read", &older, &params).is_none());
    }

    #[test]
    fn a_listing_its_upstream_said_changed_is_fetched_again() {
        let cache = Cache::new(true, Mutation::default());
        let alice = caller("alice", "2026-07-28");
        let listed = json!({"resultType": "complete", "prompts": [], "ttlMs": 60_000, "cacheScope": "public"});
        for up in ["up", "other"] {
            cache.put(up, "prompts/list", &alice, &json!({}), &listed);
        }
        cache.put(
            "up",
            "resources/read",
            &alice,
            &json!({"uri": "u"}),
            &read("public", 60_000, "a"),
        );
        cache.forget("up", "prompts/list");
        assert!(
            cache
                .get("up", "prompts/list", &alice, &json!({}))
                .is_none()
        );
        assert!(
            cache
                .get("other", "prompts/list", &alice, &json!({}))
                .is_some()
        );
        assert!(
            cache
                .get("up", "resources/read", &alice, &json!({"uri": "u"}))
                .is_some()
        );
    }

    #[test]
    fn a_private_entry_serves_its_owner_only() {
        let cache = Cache::new(true, Mutation::default());
        let (alice, bob) = (caller("alice", "2026-07-28"), caller("bob", "2026-07-28"));
        let params = json!({"uri": "u"});
        cache.put(
            "up",
            "resources/read",
            &alice,
            &params,
            &read("private", 60_000, "a"),
        );
        assert!(cache.get("up", "resources/read", &alice, &params).is_some());
        assert!(cache.get("up", "resources/read", &bob, &params).is_none());
        let shared = Cache::new(true, Mutation(Some(Mutant::CachePrivateShared)));
        shared.put(
            "up",
            "resources/read",
            &alice,
            &params,
            &read("private", 60_000, "a"),
        );
        assert!(shared.get("up", "resources/read", &bob, &params).is_some());
    }

    #[test]
    fn an_entry_goes_stale_with_its_ttl_and_some_are_never_kept() {
        let cache = Cache::new(true, Mutation::default());
        let alice = caller("alice", "2026-07-28");
        let params = json!({"uri": "u"});
        cache.put(
            "up",
            "resources/read",
            &alice,
            &params,
            &read("public", 20, "a"),
        );
        std::thread::sleep(Duration::from_millis(40));
        assert!(cache.get("up", "resources/read", &alice, &params).is_none());
        let ignoring = Cache::new(true, Mutation(Some(Mutant::CacheTtlIgnored)));
        ignoring.put(
            "up",
            "resources/read",
            &alice,
            &params,
            &read("public", 20, "a"),
        );
        std::thread::sleep(Duration::from_millis(40));
        assert!(
            ignoring
                .get("up", "resources/read", &alice, &params)
                .is_some()
        );
        for (params, result) in [
            (json!({"uri": "u"}), read("public", 0, "zero")),
            (
                json!({"uri": "u", "requestState": "s"}),
                read("public", 60_000, "retry"),
            ),
            (
                json!({"uri": "u"}),
                json!({"resultType": "input_required", "ttlMs": 60_000}),
            ),
            (
                json!({"uri": "u"}),
                json!({"resultType": "complete", "contents": []}),
            ),
        ] {
            cache.put("up", "resources/read", &alice, &params, &result);
            assert!(
                cache.get("up", "resources/read", &alice, &params).is_none(),
                "{result}"
            );
        }
        let off = Cache::new(false, Mutation::default());
        off.put(
            "up",
            "resources/read",
            &alice,
            &params,
            &read("public", 60_000, "a"),
        );
        assert!(off.get("up", "resources/read", &alice, &params).is_none());
    }

    #[test]
    fn hints_merge_to_the_strictest_part() {
        let hint = |ms, private| {
            Some(Hints {
                ttl: Duration::from_millis(ms),
                private,
            })
        };
        let merged = Hints::merged(&[hint(300, false), hint(100, true)]).unwrap();
        assert_eq!(
            merged,
            Hints {
                ttl: Duration::from_millis(100),
                private: true
            }
        );
        let unhinted = Hints::merged(&[hint(300, false), None]).unwrap();
        assert_eq!(unhinted.ttl, Duration::ZERO);
        assert!(Hints::merged(&[None, None]).is_none());
        let mut out = Map::new();
        merged.write(&mut out, Mutation::default());
        assert_eq!(
            Value::Object(out.clone()),
            json!({"ttlMs": 100, "cacheScope": "private"})
        );
        let mut widened = Map::new();
        merged.write(&mut widened, Mutation(Some(Mutant::CacheScopeWidened)));
        assert_eq!(widened["cacheScope"], "public");
        let mut dropped = Map::new();
        merged.write(&mut dropped, Mutation(Some(Mutant::CacheHintsDropped)));
        assert!(dropped.is_empty());
    }
}
