//! The gateway's shared state: upstreams, pinned catalogues, the retained-result store, the
//! task map and the side channels, plus who is calling and in which shape.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use relaycheck_reference::{Identity, Store};
use serde_json::Value;
use tokio::sync::Mutex;

use crate::audit::Audit;
use crate::cache::{Cache, Hints};
use crate::client_requests::Back;
use crate::config::{Config, IdentityConfig, Limits};
use crate::continuation::Retention;
use crate::error::{ServeError, UpstreamError};
use crate::mutant::Mutation;
use crate::progress::{Progress, Sink};
use crate::schema_pin::{Catalog, Pin};
use crate::tasks::TaskMap;
use crate::upstream::Upstream;

/// Retained full results: generous, because a handle that expires before the model asks
/// for it makes the cut unsafe after all.
const STORE_CAP_BYTES: usize = 256 * 1024 * 1024;
const STORE_TTL: Duration = Duration::from_secs(3600);

pub const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";

/// Who sent a request, and in which shape it must be answered.
#[derive(Debug, Clone)]
pub struct Caller {
    pub identity: Identity,
    pub version: String,
    /// The request carried the 2026-07-28 stateless envelope.
    pub stateless: bool,
    /// The request's `params._meta`, passed on upstream so the upstream answers in the
    /// client's shape.
    pub meta: Option<Value>,
    pub transport: &'static str,
    /// Where progress notifications for this request go, when its transport can carry them.
    pub progress: Option<Sink>,
    /// Set when the caller cancels this request (`notifications/cancelled`).
    pub cancel: Option<Arc<Cancel>>,
    /// The way back to the caller for what an upstream sends it during this request; none on
    /// the stateless wire, where an upstream asks by answering `input_required` instead.
    pub back: Option<Back>,
}

/// A north request's cancellation, fired once the caller sends `notifications/cancelled` for it.
#[derive(Debug)]
pub struct Cancel {
    fired: tokio::sync::watch::Sender<bool>,
}

impl Default for Cancel {
    fn default() -> Cancel {
        Cancel {
            fired: tokio::sync::watch::channel(false).0,
        }
    }
}

impl Cancel {
    pub fn fire(&self) {
        self.fired.send_replace(true);
    }

    pub fn fired(&self) -> bool {
        *self.fired.borrow()
    }

    /// Returns once the request is cancelled (at once when it already was).
    pub async fn wait(&self) {
        let mut fired = self.fired.subscribe();
        let _ = fired.wait_for(|fired| *fired).await;
    }
}

/// How a north request is answered.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A result the gateway made: stateless clients get `resultType` on it.
    Own(Value),
    /// An upstream's result, relayed as it is.
    Relayed(Value),
    /// A JSON-RPC error object.
    Error(Value),
}

pub fn rpc_error(code: i64, message: impl Into<String>) -> Answer {
    Answer::Error(serde_json::json!({"code": code, "message": message.into()}))
}

pub struct Gateway {
    pub limits: Limits,
    pub identity: IdentityConfig,
    pub mutation: Mutation,
    pub upstreams: Vec<Arc<Upstream>>,
    /// The pinned listing per protocol version, with the count of upstream tool changes it was
    /// listed after ([`crate::notices::Notices::tools_generation`]).
    catalogs: Mutex<HashMap<String, (u64, Arc<Catalog>)>>,
    pub store: Arc<Store>,
    pub retention: Retention,
    pub tasks: TaskMap,
    /// Upstream listings and reads, kept as their caching hints allow, when the config asks.
    pub cache: Cache,
    pub audit: Audit,
    pub progress: Arc<Progress>,
    /// The way back to the gateway's only client, when it serves one stdio connection: then
    /// what a stdio upstream sends besides its answers (its lines relate to no request) is
    /// that client's too.
    pub sole_client: Arc<OnceLock<Back>>,
    /// The way back of the request that started last, kept for the
    /// `log-messages-to-latest-caller` mutant alone.
    pub latest_back: Arc<std::sync::Mutex<Option<Back>>>,
    /// What upstreams tell the gateway's clients outside the answers to requests, and the
    /// clients to tell.
    pub notices: Arc<crate::notices::Notices>,
    /// Answers kept by what asked for them: the `retry-answered-from-cache` mutant's calls (by
    /// upstream, tool and arguments) and the `item-listings-kept-stale` mutant's listings,
    /// empty otherwise.
    answered: std::sync::Mutex<HashMap<String, Value>>,
    counter: AtomicU64,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error(transparent)]
    Upstream(#[from] UpstreamError),
    #[error(transparent)]
    Serve(#[from] ServeError),
}

impl Gateway {
    /// Opens the side channels, connects every upstream and pins its tools.
    pub async fn start(config: &Config, mutation: Mutation) -> Result<Arc<Gateway>, StartError> {
        let audit = Audit::open(
            config.audit.jsonl.as_deref(),
            config.audit.cef.as_deref(),
            config.log.path.as_deref(),
        )?;
        let progress = Arc::new(Progress::new(
            mutation.is(crate::mutant::Mutant::ProgressTokenNotMapped),
            mutation.is(crate::mutant::Mutant::ProgressToLatestCaller),
        ));
        let limit = if mutation.is(crate::mutant::Mutant::UnboundedRead) {
            usize::MAX
        } else {
            config.limits.max_response_bytes
        };
        let timeout = Duration::from_millis(config.limits.call_timeout_ms);
        let sole_client = Arc::new(OnceLock::new());
        let notices = Arc::new(crate::notices::Notices::new(mutation));
        let mut upstreams = Vec::new();
        for cfg in &config.upstreams {
            let up = Upstream::connect(
                cfg,
                limit,
                timeout.max(Duration::from_secs(10)),
                crate::upstream::Relays {
                    progress: progress.clone(),
                    sole_client: sole_client.clone(),
                    notices: notices.clone(),
                },
                mutation,
            )
            .await?;
            upstreams.push(Arc::new(up));
        }
        // The gateway promises its clients a list's change where an upstream promises it.
        notices.declare(
            crate::wire::ListKind::ALL
                .into_iter()
                .filter(|list| upstreams.iter().any(|up| up.declares_list_changed(*list))),
        );
        let gw = Arc::new(Gateway {
            limits: config.limits.clone(),
            identity: config.identity.clone(),
            mutation,
            upstreams,
            catalogs: Mutex::new(HashMap::new()),
            store: Arc::new(Store::new(STORE_CAP_BYTES, STORE_TTL)),
            retention: Retention::default(),
            tasks: TaskMap::default(),
            cache: Cache::new(config.cache.enabled, mutation),
            audit,
            progress,
            sole_client,
            latest_back: Default::default(),
            notices,
            answered: std::sync::Mutex::default(),
            counter: AtomicU64::new(1),
        });
        // Pin the handshake listing now: a broken upstream shows at start, not at first call.
        let generation = gw.notices.tools_generation();
        let mut pins = Vec::new();
        for up in &gw.upstreams {
            let (defs, _) = up
                .list_tools(None, timeout.max(Duration::from_secs(10)))
                .await?;
            for def in defs {
                pins.extend(Pin::new(&up.name, def, mutation).map(Arc::new));
            }
        }
        // The handshake revisions have no caching hints.
        gw.catalogs.lock().await.insert(
            HANDSHAKE_KEY.into(),
            (generation, Arc::new(Catalog { pins, hints: None })),
        );
        Ok(gw)
    }

    pub fn upstream(&self, name: &str) -> Option<&Arc<Upstream>> {
        self.upstreams.iter().find(|u| u.name == name)
    }

    pub fn timeout(&self) -> Duration {
        Duration::from_millis(self.limits.call_timeout_ms)
    }

    /// How many listings came before this one: the `listing-order-unstable` mutant only.
    pub fn next_listing_turn(&self) -> usize {
        self.counter.fetch_add(1, Ordering::Relaxed) as usize
    }

    /// The answer a mutant that caches keeps for a call or a listing.
    pub fn answered(&self, call: &str) -> Option<Value> {
        self.answered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(call)
            .cloned()
    }

    /// Keeps an answer for a mutant that caches.
    pub fn remember(&self, call: String, answer: Value) {
        self.answered
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(call, answer);
    }

    pub fn next_call_id(&self) -> String {
        format!("call-{}", self.counter.fetch_add(1, Ordering::Relaxed))
    }

    /// The pinned listing for the caller's protocol version: stateless versions list
    /// differently (SEP-3279 tools carry outputVariants), so each is pinned on first use, and
    /// pinned again once an upstream said its tools changed.
    pub async fn catalog(&self, caller: &Caller) -> Arc<Catalog> {
        // Looked up borrowed; the key is copied only when a new catalog is kept.
        let key = if caller.stateless {
            caller.version.as_str()
        } else {
            HANDSHAKE_KEY
        };
        let generation = self.notices.tools_generation();
        let mut catalogs = self.catalogs.lock().await;
        if let Some((pinned_after, c)) = catalogs.get(key)
            && *pinned_after == generation
        {
            return c.clone();
        }
        let mut pins = Vec::new();
        let mut hints = Vec::new();
        let mut complete = true;
        // The handshake listing lends its schemas to a listing that shows none; an outdated one
        // is still the best there is.
        let handshake = catalogs.get(HANDSHAKE_KEY).map(|(_, c)| c.clone());
        for up in &self.upstreams {
            match up.list_tools(caller.meta.as_ref(), self.timeout()).await {
                Ok((defs, listed_hints)) => {
                    hints.push(listed_hints);
                    pins.extend(defs.into_iter().filter_map(|d| {
                        let pin = Pin::new(&up.name, d, self.mutation)?;
                        let pin = match handshake.as_ref().and_then(|h| h.find(&pin.north_name())) {
                            Some(other) => pin.with_schema_from(other),
                            None => pin,
                        };
                        Some(Arc::new(pin))
                    }))
                }
                Err(err) => {
                    complete = false;
                    crate::log::warn(format_args!("{err}"));
                }
            }
        }
        let catalog = Arc::new(Catalog {
            pins,
            hints: Hints::merged(&hints),
        });
        if complete {
            catalogs.insert(key.to_string(), (generation, catalog.clone()));
        }
        catalog
    }

    pub fn shutdown(&self) {
        for up in &self.upstreams {
            up.shutdown();
        }
    }
}

const HANDSHAKE_KEY: &str = "handshake";
